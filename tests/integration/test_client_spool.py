"""MemoryClient when the broker goes away: emit stays fast and spools; flush delivers each event once."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import text

from shared.client import MemoryClient
from tests.services import RedisServer, wait_for

pytestmark = pytest.mark.integration


def test_emit_spools_within_milliseconds_while_redis_is_down_and_flush_delivers_each_event_once(
    tmp_path, start_worker, engine, tenant, queue_name
):
    redis_server = RedisServer(tmp_path / "redis").start()
    client = MemoryClient(
        tenant,
        broker_url=redis_server.url,
        queue=queue_name,
        spool_path=tmp_path / "spool.jsonl",
        flush_at_exit=False,
    )
    try:
        for n in range(50):
            client.emit(user_id="u", session_id="s", content=f"before the outage {n}", event_id=f"pre-{n}")
        redis_server.stop()
        durations = []
        for n in range(300):
            started = time.perf_counter()
            client.emit(user_id="u", session_id="s", content=f"during the outage {n}", event_id=f"down-{n}")
            durations.append(time.perf_counter() - started)
        durations.sort()
        # "within 5 ms", fsync of the spool included. The median is asserted: a shared, loaded CI machine
        # can stall any single fsync; BENCHMARKS.md reports the full distribution.
        assert durations[len(durations) // 2] < 0.005, durations[-5:]
        assert client.spooled == 300
        assert client.flush() == 0  # still down: nothing sent, nothing lost

        redis_server.start()
        start_worker(env={"REDIS_URL": redis_server.url})
        assert client.flush() == 300
        assert client.flush() == 0  # the spool is empty now: a second flush sends nothing twice

        def stored() -> int:
            with engine.connect() as conn:
                return int(
                    conn.execute(
                        text("SELECT count(*) FROM events WHERE tenant_id = :t"), {"t": tenant}
                    ).scalar()
                )

        wait_for(lambda: stored() == 350, timeout_s=60, what="all 350 events")
        time.sleep(1.0)
        assert stored() == 350
        with engine.connect() as conn:
            turns = conn.execute(
                text("SELECT turn_count FROM sessions WHERE tenant_id = :t"), {"t": tenant}
            ).scalar()
        assert turns == 350
    finally:
        client.close()
        redis_server.stop()


def test_emit_rejects_invalid_arguments_at_once_with_value_error(tmp_path):
    client = MemoryClient(
        "tenant-x", broker_url="redis://127.0.0.1:1/0", spool_path=tmp_path / "s.jsonl", flush_at_exit=False
    )
    with pytest.raises(ValueError, match="role"):
        client.emit(user_id="u", session_id="s", role="robot")
    with pytest.raises(ValueError, match="user_id"):
        client.emit(user_id="", session_id="s")
    with pytest.raises(ValueError, match="content"):
        client.emit(user_id="u", session_id="s", content="x" * 40_000)
    assert client.spooled == 0


def test_an_event_without_a_time_carries_the_time_it_was_emitted(tmp_path):
    """The events of one session travel in separate messages, stored by whichever worker takes each: the
    time of emission, not of storage, keeps them in the order the agent sent them."""
    spool = tmp_path / "s.jsonl"
    client = MemoryClient("tenant-x", broker_url="redis://127.0.0.1:1/0", spool_path=spool, flush_at_exit=False)
    for i in range(5):
        client.emit(user_id="u", session_id="s", content=f"turn {i}", event_id=f"e{i}")
    times = [json.loads(line)["args"][0]["events"][0]["event_time"] for line in spool.read_text().splitlines()]
    assert len(times) == 5 and times == sorted(times) and len(set(times)) == 5
