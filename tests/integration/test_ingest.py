"""Ingest end to end: MemoryClient in another process -> Redis -> real Celery worker -> PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from sqlalchemy import text

from shared import tasknames
from shared.publisher import RedisPublisher
from tests.services import REPO, queue_depth, wait_for

pytestmark = pytest.mark.integration


def _count(engine, tenant: str) -> int:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return int(
            conn.execute(text("SELECT count(*) FROM events WHERE tenant_id = :t"), {"t": tenant}).scalar()
        )


def _turns_counted(engine, tenant: str) -> int:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return int(
            conn.execute(
                text("SELECT coalesce(sum(turn_count), 0) FROM sessions WHERE tenant_id = :t"), {"t": tenant}
            ).scalar()
        )


def _emit(env: dict[str, str], tenant: str, count: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.integration.emitter", tenant, str(count), *extra],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


def test_a_thousand_events_from_another_process_are_stored_once_and_re_emitting_changes_nothing(
    start_worker, worker_env, engine, tenant, redis_url, queue_name
):
    start_worker()
    _emit(worker_env, tenant, 1000)
    wait_for(lambda: _count(engine, tenant) == 1000, timeout_s=120, what="1000 events stored")
    for _ in range(3):
        _emit(worker_env, tenant, 1000)
    wait_for(lambda: queue_depth(redis_url, queue_name) == 0, timeout_s=120, what="the queue to drain")
    time.sleep(0.5)
    assert _count(engine, tenant) == 1000
    # the session counters moved only for rows actually inserted
    assert _turns_counted(engine, tenant) == 1000


def test_a_worker_killed_with_sigkill_mid_stream_loses_and_duplicates_nothing(
    start_worker, worker_env, engine, tenant, redis_url, queue_name
):
    worker = start_worker()
    emitter = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.emitter",
            tenant,
            "2000",
            "--pause-every",
            "50",
            "--pause-s",
            "0.05",
        ],
        env=worker_env,
        cwd=REPO,
    )
    wait_for(lambda: _count(engine, tenant) >= 300, timeout_s=60, what="the stream to be under way")
    worker.kill()
    stored_at_kill = _count(engine, tenant)
    assert emitter.wait(timeout=120) == 0
    assert stored_at_kill < 2000, "the kill must land mid-stream for this test to mean anything"
    start_worker()
    # messages the dead worker held come back after the visibility timeout (8 s in the tests)
    wait_for(lambda: _count(engine, tenant) == 2000, timeout_s=120, interval_s=0.5, what="all 2000 events")
    wait_for(lambda: queue_depth(redis_url, queue_name) == 0, timeout_s=60, what="the queue to drain")
    assert _count(engine, tenant) == 2000
    assert _turns_counted(engine, tenant) == 2000
    # every message was settled on the in-flight ledger once its events were stored
    ledger = RedisPublisher(redis_url, queue=queue_name, timeout_s=2)
    wait_for(lambda: ledger.in_flight() == 0, timeout_s=30, what="the in-flight ledger to empty")


def test_an_ingest_message_lost_between_the_queue_and_a_worker_is_put_back(
    start_worker, engine, tenant, redis_url, queue_name
):
    # kombu takes a message off the list before it records it as unacknowledged: a worker killed in between
    # loses it, and no visibility timeout brings it back. The in-flight ledger does (after 15 s here).
    pub = RedisPublisher(redis_url, queue=queue_name, timeout_s=2)
    event = {"event_id": "lost-1", "user_id": "u", "session_id": "s", "content": "the one that got away"}
    pub.publish(tasknames.INGEST, [{"tenant_id": tenant, "events": [event]}])
    assert pub.redis.rpop(queue_name) is not None  # taken by a worker that died before recording it
    start_worker()
    wait_for(lambda: _count(engine, tenant) == 1, timeout_s=60, what="the lost event, put back and stored")
    wait_for(lambda: pub.in_flight() == 0, timeout_s=30, what="its ledger entry settled")


BAD_PAYLOADS = [
    ("not an object", "envelope"),
    ({"tenant_id": "bad tenant!", "events": []}, "tenant_id"),
    ({"events": [{"user_id": "u", "session_id": "s"}]}, "tenant_id"),
    ({"tenant_id": "T", "events": "nope"}, "events"),
]


def test_invalid_payloads_on_the_queue_end_in_dead_letters_and_valid_ones_still_flow(
    start_worker, engine, tenant, redis_url, queue_name
):
    start_worker()
    pub = RedisPublisher(redis_url, queue=queue_name, timeout_s=2)
    bad_events = [
        ({"event_id": "bad-types", "user_id": 123, "session_id": ["x"], "content": 5}, "user_id"),
        (
            {"event_id": "bad-big", "user_id": "u", "session_id": "s", "content": "x" * (1024 * 1024)},
            "content",
        ),
        (
            {"event_id": "bad-role", "user_id": "u", "session_id": "s", "role": "wizard", "content": "hi"},
            "role",
        ),
        ({"event_id": "bad-meta", "user_id": "u", "session_id": "s", "metadata": [1, 2]}, "metadata"),
    ]
    for i, (event, _) in enumerate(bad_events):
        good = {"event_id": f"good-{i}", "user_id": "u", "session_id": "s", "content": f"valid {i}"}
        pub.publish(tasknames.INGEST, [{"tenant_id": tenant, "events": [event, good]}])
    for payload, _ in BAD_PAYLOADS:
        pub.publish(tasknames.INGEST, [payload])
    pub.publish(tasknames.INGEST, [])  # wrong arity
    BAD_PAYLOADS_SEEN = [*BAD_PAYLOADS, (None, "positional")]
    wait_for(lambda: _count(engine, tenant) == len(bad_events), timeout_s=60, what="the valid events")
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT event_id, reason FROM dead_letters WHERE tenant_id = :t"), {"t": tenant}
        ).all()
    reasons = {r[0]: r[1] for r in rows}
    for event, field in bad_events:
        assert field in reasons[event["event_id"]], reasons
    wait_for(lambda: queue_depth(redis_url, queue_name) == 0, timeout_s=30, what="the queue to drain")
    with engine.connect() as conn:
        all_reasons = [r[0] for r in conn.execute(text("SELECT reason FROM dead_letters")).all()]
    for _, field in BAD_PAYLOADS_SEEN:
        assert any(field in r for r in all_reasons), (field, all_reasons)
    # the 1 MiB content was not stored whole
    with engine.connect() as conn:
        size = conn.execute(
            text("SELECT length(payload::text) FROM dead_letters WHERE event_id = 'bad-big'")
        ).scalar()
    assert size is not None and size < 100_000
