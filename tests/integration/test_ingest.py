"""Ingest end to end: MemoryClient in another process -> the Redis ingest stream -> real ingest consumer
processes -> PostgreSQL. Kills, a Redis restart, poison entries, an old-version queue message."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest
import redis
from sqlalchemy import text

from shared import tasknames
from shared.embedded import redis_py_url
from shared.publisher import TaskPublisher
from shared.settings import load_settings
from shared.stream import GROUP, StreamProducer, stream_key, stream_stats
from store.triggers import timer_key
from tests.services import REPO, ConsumerProcess, RedisServer, memory_client, wait_for

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


def _dead_letters(engine, tenant: str | None = None) -> list[tuple[str | None, str]]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        sql = "SELECT event_id, reason FROM dead_letters"
        if tenant is None:
            return [(r[0], r[1]) for r in conn.execute(text(sql)).all()]
        rows = conn.execute(text(sql + " WHERE tenant_id = :t"), {"t": tenant}).all()
        return [(r[0], r[1]) for r in rows]


def _emitter(env: dict[str, str], tenant: str, count: int, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.emitter", tenant, str(count), *extra],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
    )


def _emit(env: dict[str, str], tenant: str, count: int, *extra: str) -> None:
    proc = _emitter(env, tenant, count, *extra)
    assert proc.wait(timeout=300) == 0


def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_py_url(url), socket_timeout=5)


def _drained(url: str, queue: str) -> bool:
    stats = stream_stats(_redis(url), queue, 1)
    return stats["length"] == 0 and stats["pending"] == 0


def test_a_thousand_events_from_another_process_are_stored_once_and_re_emitting_changes_nothing(
    start_worker, worker_env, engine, tenant, redis_url, queue_name
):
    start_worker()
    _emit(worker_env, tenant, 1000)
    wait_for(lambda: _count(engine, tenant) == 1000, timeout_s=120, what="1000 events stored")
    for _ in range(3):
        _emit(worker_env, tenant, 1000)
    wait_for(lambda: _drained(redis_url, queue_name), timeout_s=120, what="the stream to drain")
    assert _count(engine, tenant) == 1000
    # the session counters moved only for rows actually inserted
    assert _turns_counted(engine, tenant) == 1000
    # acknowledged entries are deleted: the stream holds the backlog only, it never grows when consumers keep up
    assert _redis(redis_url).xlen(stream_key(queue_name)) == 0


def test_consumers_killed_with_sigkill_at_random_points_of_a_10000_event_stream_lose_and_duplicate_nothing(
    worker_env, engine, tenant, redis_url, queue_name, tmp_path
):
    """Two consumers share the group; three times, one of them is killed at a random moment and a new one
    started. What the dead one held is taken over by the others after the claim idle time (3 s here); every
    entry it held is stored within 60 s of the kill.

    A consumer holds entries only for the few milliseconds of a batch, so a bare SIGKILL at a random moment
    almost never finds it holding any: the victim is first frozen (SIGSTOP) for a random 0.2-1 s, during
    which Redis keeps handing it entries (its blocking read was already sent), then SIGKILLed."""
    seed = int(os.environ.get("MEMORY_TEST_SEED") or time.time())
    rng = random.Random(seed)
    # a long blocking read: a frozen consumer stays in Redis's queue of blocked readers and is handed entries
    env = {
        **worker_env,
        "MEMORY_INGEST_BATCH": "200",
        "MEMORY_INGEST_BLOCK_MS": "5000",
        "MEMORY_DEBOUNCE_IDLE_S": "3600",
    }
    consumers = [ConsumerProcess(env=env, log_path=tmp_path / f"consumer-{i}.log").start() for i in range(2)]
    client = _redis(redis_url)
    key = stream_key(queue_name)
    emitter = _emitter(env, tenant, 10_000, "--pause-every", "50", "--pause-s", "0.15")  # ~35 s of stream
    kills: list[tuple[float, list[str]]] = []
    try:
        for round_ in range(3):
            time.sleep(rng.uniform(0.5, 3.0))
            victim = consumers.pop(rng.randrange(len(consumers)))
            name = f"{os.uname().nodename}-{victim.proc.pid}"  # type: ignore[union-attr]

            def holding(name: str = name) -> list[str]:
                return [
                    p["message_id"].decode()
                    for p in client.xpending_range(
                        key, GROUP, min="-", max="+", count=100_000, consumername=name
                    )
                ]

            # freeze it at a random moment until Redis has handed it entries (a frozen consumer blocked in
            # its read keeps getting them; one frozen between reads gets none: thaw and try again)
            for _ in range(20):
                os.killpg(victim.proc.pid, signal.SIGSTOP)  # type: ignore[union-attr]
                deadline = time.monotonic() + 1.0
                while not holding() and time.monotonic() < deadline:
                    time.sleep(0.05)
                if holding():
                    break
                os.killpg(victim.proc.pid, signal.SIGCONT)  # type: ignore[union-attr]
                time.sleep(rng.uniform(0.05, 0.3))
            victim.kill()
            held = holding()
            kills.append((time.monotonic(), held))
            consumers.append(ConsumerProcess(env=env, log_path=tmp_path / f"consumer-r{round_}.log").start())
            # what the dead consumer held leaves the pending list (stored, acked, deleted) within 60 s
            wait_for(
                lambda held=held: (
                    not held
                    or not any(
                        p["message_id"].decode() in set(held)
                        for p in client.xpending_range(key, GROUP, min="-", max="+", count=100_000)
                    )
                ),
                timeout_s=60,
                interval_s=0.25,
                what=f"the entries held by the consumer killed in round {round_} (seed {seed})",
            )
        assert emitter.wait(timeout=300) == 0
        wait_for(lambda: _count(engine, tenant) == 10_000, timeout_s=60, interval_s=0.5, what="all 10,000")
        wait_for(lambda: _drained(redis_url, queue_name), timeout_s=30, what="the stream to drain")
    finally:
        if emitter.poll() is None:
            emitter.kill()
        for c in consumers:
            c.stop()
    assert _count(engine, tenant) == 10_000
    assert _turns_counted(engine, tenant) == 10_000  # no event counted twice
    assert _dead_letters(engine, tenant) == []
    # the kills landed mid-stream: at least one consumer died holding entries
    assert any(held for _, held in kills), f"no kill caught a consumer holding entries (seed {seed})"


def test_an_entry_stored_by_a_consumer_that_died_before_acking_is_not_stored_twice(
    database_url, engine, tenant, redis_url, queue_name
):
    """The window between the commit and the ack: consumer `a` commits a batch and dies before it acks (its
    ack raises); consumer `b` takes the entry over after the claim idle time and stores it again, which
    changes nothing: no second row, no second count on the session."""
    from worker.ingest_consumer import IngestConsumer

    settings = load_settings(
        database_url=database_url,
        redis_url=redis_url,
        queue=queue_name,
        ingest_claim_idle_s=0.2,
        ingest_block_ms=100,
        debounce_idle_s=3600,
    )
    client = _redis(redis_url)
    publisher = TaskPublisher(redis_url, queue=queue_name, timeout_s=2)
    a = IngestConsumer(client, engine, settings, publisher=publisher, name="a")
    b = IngestConsumer(client, engine, settings, publisher=publisher, name="b")

    def die(key: str, ids: list[str]) -> None:
        raise SystemExit("killed between the commit and the ack")

    a._ack = die  # type: ignore[method-assign]
    producer = StreamProducer(redis_url, queue=queue_name, timeout_s=2)
    events = [
        {"event_id": f"died-{i}", "user_id": "u", "session_id": "s", "content": f"turn {i}"} for i in range(5)
    ]
    producer.append({"tenant_id": tenant, "events": events})
    with pytest.raises(SystemExit):
        a.step()
    assert _count(engine, tenant) == 5  # committed
    assert stream_stats(client, queue_name, 1)["pending"] == 1  # but never acknowledged
    time.sleep(0.3)
    assert not client.exists(timer_key(tenant, "u", "s"))  # `a` died before firing the session's trigger
    assert b.step() == 1  # taken over from `a`
    assert _count(engine, tenant) == 5
    assert _turns_counted(engine, tenant) == 5
    assert _drained(redis_url, queue_name)
    # the re-delivery inserted nothing, but it fired the trigger `a` never fired: the idle timer is armed
    assert client.exists(timer_key(tenant, "u", "s"))


def test_a_redis_restart_mid_stream_loses_nothing_the_client_accepted(
    worker_env, engine, tenant, tmp_path, queue_name
):
    """A private Redis with an append-only file, restarted while events stream in: the client spools what it
    could not send and re-sends it; the consumers reconnect; every emitted event is stored once."""
    server = RedisServer(tmp_path / "redis").start()
    env = {**worker_env, "REDIS_URL": server.url, "MEMORY_DEBOUNCE_IDLE_S": "3600"}
    consumer = ConsumerProcess(env=env, log_path=tmp_path / "consumer.log").start()
    client = memory_client(tenant, server.url, queue_name, tmp_path)
    try:
        for n in range(3000):
            client.emit(user_id=f"u{n % 5}", session_id=f"s{n % 11}", content=f"turn {n}", event_id=f"r-{n}")
            if n == 1000:
                server.stop()  # SIGTERM: Redis writes its append-only file and exits
                server.start()
            if n % 200 == 0:
                time.sleep(0.05)
        wait_for(lambda: client.flush() >= 0 and not client._spool.size(), timeout_s=30, what="the spool")
        wait_for(lambda: _count(engine, tenant) == 3000, timeout_s=90, interval_s=0.5, what="all 3000 events")
        assert consumer.alive(), "the consumer must survive a Redis restart"
        wait_for(lambda: _drained(server.url, queue_name), timeout_s=30, what="the stream to drain")
    finally:
        client.close()
        consumer.stop()
        server.stop()
    assert _count(engine, tenant) == 3000
    assert _turns_counted(engine, tenant) == 3000


REFUSE_FUNCTION = """
CREATE OR REPLACE FUNCTION test_refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.event_id = 'db-refused' THEN
    RAISE EXCEPTION 'refused for the test' USING ERRCODE = '22023';
  END IF;
  RETURN NEW;
END $$
"""

BAD_PAYLOADS = [
    ("not an object", "envelope"),
    ({"tenant_id": "bad tenant!", "events": []}, "tenant_id"),
    ({"events": [{"user_id": "u", "session_id": "s"}]}, "tenant_id"),
    ({"tenant_id": "T", "events": "nope"}, "events"),
]


def test_poison_entries_are_dead_lettered_with_their_reason_and_the_rest_of_their_batch_is_stored(
    worker_env, engine, tenant, redis_url, queue_name, tmp_path
):
    producer = StreamProducer(redis_url, queue=queue_name, timeout_s=2)
    client = _redis(redis_url)
    key = stream_key(queue_name)
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
    # everything is queued before the consumer starts, so that it all arrives in one batch
    for i in range(20):
        producer.append(
            {"tenant_id": tenant, "events": [{"event_id": f"ok-{i}", "user_id": "u", "session_id": "s"}]}
        )
        if i < len(bad_events):
            good = {"event_id": f"good-{i}", "user_id": "u", "session_id": "s", "content": f"valid {i}"}
            producer.append({"tenant_id": tenant, "events": [bad_events[i][0], good]})
    for payload, _ in BAD_PAYLOADS:
        producer.append(payload)
    client.xadd(key, {b"e": b"{not json"})  # a producer of another version, or a bug
    client.xadd(key, {b"other": b"field"})
    # a payload the database refuses, in the middle of the batch (the contract already rejects everything we
    # know the database would, so the refusal is a trigger installed for this test: a real DataError)
    producer.append(
        {"tenant_id": tenant, "events": [{"event_id": "db-refused", "user_id": "u", "session_id": "s"}]}
    )
    for i in range(20, 25):
        producer.append(
            {"tenant_id": tenant, "events": [{"event_id": f"ok-{i}", "user_id": "u", "session_id": "s"}]}
        )

    with engine.begin() as conn:
        conn.execute(text(REFUSE_FUNCTION))
        conn.execute(
            text(
                "CREATE TRIGGER test_refuse_event BEFORE INSERT ON events FOR EACH ROW "
                "EXECUTE FUNCTION test_refuse_event()"
            )
        )
    consumer = ConsumerProcess(env=worker_env, log_path=tmp_path / "consumer.log").start()
    try:
        wait_for(lambda: _drained(redis_url, queue_name), timeout_s=60, what="the stream to drain")
    finally:
        consumer.stop()
        with engine.begin() as conn:
            conn.execute(text("DROP TRIGGER IF EXISTS test_refuse_event ON events"))
    # 25 + 4 good events stored; every bad one dead-lettered with its reason
    assert _count(engine, tenant) == 29
    reasons = dict(_dead_letters(engine, tenant))
    for event, field in bad_events:
        assert field in reasons[event["event_id"]], reasons
    all_reasons = [r for _, r in _dead_letters(engine)]
    for _, field in BAD_PAYLOADS:
        assert any(field in r for r in all_reasons), (field, all_reasons)
    assert any("not a JSON envelope" in r for r in all_reasons)
    assert any("without the envelope field" in r for r in all_reasons)
    refused = [r for _, r in _dead_letters(engine, tenant) if "database rejected the payload" in r]
    assert refused == ["database rejected the payload: InvalidParameterValue"], reasons
    # the 1 MiB content was not stored whole in the dead letter
    with engine.connect() as conn:
        size = conn.execute(
            text("SELECT length(payload::text) FROM dead_letters WHERE event_id = 'bad-big'")
        ).scalar()
    assert size is not None and size < 100_000
    batches = [json.loads(line) for line in consumer.log_text().splitlines() if '"ingest.batch"' in line]
    assert sum(b["isolated"] for b in batches) >= 1, batches  # the refused entry was found by splitting


def test_an_entry_every_consumer_died_on_is_dead_lettered_after_the_delivery_limit(
    worker_env, engine, tenant, redis_url, queue_name, tmp_path
):
    """Simulated with consumers that read the entry and vanish (XREADGROUP by a name that never acks), then
    claims by others, until its delivery count passes `ingest_max_deliveries`."""
    producer = StreamProducer(redis_url, queue=queue_name, timeout_s=2)
    client = _redis(redis_url)
    key = stream_key(queue_name)
    client.xgroup_create(key, GROUP, id="0", mkstream=True)
    producer.append(
        {"tenant_id": tenant, "events": [{"event_id": "cursed", "user_id": "u", "session_id": "s"}]}
    )
    client.xreadgroup(GROUP, "ghost-0", {key: ">"}, count=10)
    for i in range(1, 3):  # two more deliveries to consumers that die at once
        time.sleep(0.05)
        client.xautoclaim(key, GROUP, f"ghost-{i}", 1, start_id="0-0")
    env = {**worker_env, "MEMORY_INGEST_MAX_DELIVERIES": "3", "MEMORY_INGEST_CLAIM_IDLE_S": "0.5"}
    consumer = ConsumerProcess(env=env, log_path=tmp_path / "consumer.log").start()
    try:
        wait_for(lambda: _drained(redis_url, queue_name), timeout_s=30, what="the stream to drain")
    finally:
        consumer.stop()
    assert _count(engine, tenant) == 0
    reasons = [r for _, r in _dead_letters(engine, tenant)]
    assert len(reasons) == 1 and "delivered 4 times" in reasons[0], reasons


def test_a_message_queued_by_an_older_version_is_drained_onto_the_stream_and_stored(
    start_worker, engine, tenant, redis_url, queue_name
):
    """Before the stream, agents sent `memory.ingest` Celery messages; after an upgrade the worker moves any
    left on the queue onto the stream, where the consumer stores them."""
    old = TaskPublisher(redis_url, queue=queue_name, timeout_s=2)
    event = {"event_id": "from-v1", "user_id": "u", "session_id": "s", "content": "queued before the upgrade"}
    old.publish(tasknames.INGEST, [{"tenant_id": tenant, "events": [event]}])
    start_worker()
    wait_for(lambda: _count(engine, tenant) == 1, timeout_s=60, what="the old message, moved and stored")
    wait_for(lambda: _drained(redis_url, queue_name), timeout_s=30, what="the stream to drain")
    assert _redis(redis_url).llen(queue_name) == 0


def test_stats_show_the_backlog_pending_entries_their_age_and_the_consumers(
    worker_env, redis_url, queue_name, tenant, tmp_path, api_server
):
    producer = StreamProducer(redis_url, queue=queue_name, timeout_s=2)
    client = _redis(redis_url)
    key = stream_key(queue_name)
    client.xgroup_create(key, GROUP, id="0", mkstream=True)
    for i in range(7):
        producer.append(
            {"tenant_id": tenant, "events": [{"event_id": f"s-{i}", "user_id": "u", "session_id": "s"}]}
        )
    client.xreadgroup(GROUP, "reader-a", {key: ">"}, count=3)
    time.sleep(0.2)
    stats = stream_stats(client, queue_name, 1)
    assert stats["length"] == 7 and stats["pending"] == 3
    assert stats["oldest_pending_age_s"] >= 0.2 and stats["oldest_entry_age_s"] >= 0.2
    assert stats["consumers"]["reader-a"]["pending"] == 3
    # memctl stats says the same
    out = subprocess.run(
        [sys.executable, "-m", "memctl.cli", "stats", "--json"],
        env=worker_env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)["ingest_stream"]
    assert shown["length"] == 7 and shown["pending"] == 3 and "reader-a" in shown["consumers"]
    # and so does /metrics
    import httpx

    metrics = httpx.get(f"{api_server}/metrics", timeout=10).text
    assert 'memory_ingest_stream{what="length"} 7.0' in metrics
    assert 'memory_ingest_stream{what="pending"} 3.0' in metrics
    assert "memory_ingest_consumers 1.0" in metrics


def test_tasks_held_by_a_killed_worker_run_again_after_the_visibility_timeout(
    start_worker, engine, tenant, redis_url, queue_name
):
    """A task a worker had taken (a countdown keeps it in the worker's hands, unacknowledged) and then died
    with comes back after the visibility timeout (8 s in the tests; 180 s by default) and runs."""
    from shared.db.engine import session_scope

    with session_scope(engine) as db:
        db.execute(text("INSERT INTO tenants (id) VALUES (:t) ON CONFLICT DO NOTHING"), {"t": tenant})
    worker = start_worker(ingest=False)
    pub = TaskPublisher(redis_url, queue=queue_name, timeout_s=2)
    fire = datetime.now(UTC).isoformat()
    pub.publish(tasknames.SWEEP, [fire], countdown_s=4)
    time.sleep(1.5)  # taken by the worker, waiting for its countdown
    assert _redis(redis_url).llen(queue_name) == 0
    worker.kill()
    killed_at = time.monotonic()
    start_worker(ingest=False)

    def swept() -> bool:
        with engine.connect() as conn:
            return bool(
                conn.execute(
                    text(
                        "SELECT count(*) FROM consolidation_runs WHERE kind = 'sweep' AND outcome = 'ok' AND slot_key LIKE :s"
                    ),
                    {"s": f"%{fire}%"},
                ).scalar()
            )

    wait_for(swept, timeout_s=60, interval_s=0.5, what="the sweep the killed worker held")
    assert time.monotonic() - killed_at < 60


def test_events_sharded_over_several_streams_are_all_stored_by_consumers_reading_every_shard(
    database_url, engine, tenant, redis_url, queue_name
):
    from shared.stream import stream_keys
    from worker.ingest_consumer import IngestConsumer

    settings = load_settings(
        database_url=database_url,
        redis_url=redis_url,
        queue=queue_name,
        ingest_shards=4,
        ingest_block_ms=50,
        debounce_idle_s=3600,
    )
    client = _redis(redis_url)
    publisher = TaskPublisher(redis_url, queue=queue_name, timeout_s=2)
    consumers = [IngestConsumer(client, engine, settings, publisher=publisher, name=n) for n in ("a", "b")]
    producer = StreamProducer(redis_url, queue=queue_name, shards=4, timeout_s=2)
    events = [{"event_id": f"sh-{i}", "user_id": f"user-{i % 20}", "session_id": "s"} for i in range(200)]
    for start in range(0, 200, 10):  # envelopes of 10 events spanning several users: split per shard
        producer.append({"tenant_id": tenant, "events": events[start : start + 10]})
    lengths = [client.xlen(k) for k in stream_keys(queue_name, 4)]
    assert sum(1 for n in lengths if n) >= 3, lengths  # spread over the shards
    for _ in range(20):
        if sum(c.step() for c in consumers) == 0 and _count(engine, tenant) == 200:
            break
    assert _count(engine, tenant) == 200
    stats = stream_stats(client, queue_name, 4)
    assert stats["length"] == 0 and stats["pending"] == 0
