"""Redis (the broker) stopped for a while and started again on the same port: the worker process stays up,
reconnects, and processes work published after the restart; no process supervisor is needed for it.

The worker holds an unacknowledged message when Redis stops (an extraction with a countdown, as the idle
timer sends them): that is what made it exit before (kombu restoring it through a detached transport on
the way to reconnecting, "Unrecoverable error ... 'hostname'"), so the test makes sure it holds one."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text

from shared.publisher import RedisPublisher
from store.triggers import enqueue_extraction
from tests.services import RedisServer, memory_client, queue_depth, wait_for

pytestmark = pytest.mark.integration

DOWN_S = 10.0


def stored(engine, tenant: str) -> set[str]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT event_id FROM events WHERE tenant_id = :t"), {"t": tenant})
        return {r[0] for r in rows}


def held(redis_url: str, queue: str) -> int:
    """Messages of `queue` a worker has taken and not yet acknowledged."""
    return queue_depth(redis_url, queue) - queue_depth(redis_url, queue, include_unacked=False)


def test_the_worker_survives_a_redis_restart_and_processes_work_published_after_it(
    tmp_path, start_worker, engine, tenant, queue_name
):
    broker = RedisServer(tmp_path / "redis").start()
    try:
        worker = start_worker(env={"REDIS_URL": broker.url})
        assert worker.proc is not None
        client = memory_client(tenant, broker.url, queue_name, tmp_path)
        client.emit(user_id="u", session_id="s", content="before the outage", event_id="before")
        wait_for(lambda: "before" in stored(engine, tenant), timeout_s=30, what="the first event")
        publisher = RedisPublisher(broker.url, queue=queue_name, timeout_s=2.0)
        enqueue_extraction(publisher, tenant, "u", "s", reason="idle", countdown_s=300)
        wait_for(lambda: held(broker.url, queue_name) >= 1, timeout_s=30, what="the worker to hold a message")
        publisher.close()

        broker.stop()
        time.sleep(DOWN_S)  # the worker meets a dead broker and keeps trying
        assert worker.proc.poll() is None, worker.log_tail()
        broker.start()

        client.emit(user_id="u", session_id="s", content="after the outage", event_id="after")
        client.flush()
        wait_for(
            lambda: "after" in stored(engine, tenant),
            timeout_s=60,
            interval_s=0.5,
            what="the event published after the restart",
        )
        assert worker.proc.poll() is None, worker.log_tail()
        log = worker.log_text()
        assert "Connection to broker lost" in log  # it did see the outage
        assert "Unrecoverable error" not in log, worker.log_tail()
        client.close()
    finally:
        broker.stop()
