"""Redis (the broker) stopped for a while and started again on the same port: the worker process stays up,
reconnects, and processes what was published before, during (spooled by the client) and after the outage;
no process supervisor is needed for it.

Two ways a worker met an outage badly:
- it exited: an idle worker (its BRPOP pending) that holds an unacknowledged message (an extraction with a
  countdown, as the idle timer sends them) and notices the loss on its remote-control mailbox first; kombu
  then restored the message through a detached transport on the way to reconnecting ("Unrecoverable error
  ... 'hostname'", see worker/broker.py). The first test sets exactly that up.
- it stayed up but deaf: a busy worker (prefetch full, no BRPOP pending) whose acks fail during the outage
  notices the loss on no socket unless one is always polled (the remote-control mailbox's is: without
  remote control the worker consumed nothing after the restart). The second test sets that up.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from shared.publisher import TaskPublisher
from store.triggers import enqueue_extraction
from tests.fakes.openai_server import FakeOpenAI
from tests.services import RedisServer, memory_client, queue_depth, wait_for

pytestmark = pytest.mark.integration

IDLE_DOWN_S = 10.0
BUSY_DOWN_S = 10.0
LLM_DELAY_S = 8.0  # the model's answer, begun just before Redis stops, arrives during the outage
LLM_TURN = "We spent the morning debugging the flaky payment webhook; the retry queue was dropping jobs."


def stored(engine, tenant: str) -> set[str]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT event_id FROM events WHERE tenant_id = :t"), {"t": tenant})
        return {r[0] for r in rows}


def held(redis_url: str, queue: str) -> int:
    """Messages of `queue` a worker has taken and not yet acknowledged."""
    return queue_depth(redis_url, queue) - queue_depth(redis_url, queue, include_unacked=False)


def test_an_idle_worker_holding_a_message_survives_a_redis_restart_and_processes_work_published_after_it(
    tmp_path, start_worker, engine, tenant, queue_name
):
    broker = RedisServer(tmp_path / "redis").start()
    try:
        worker = start_worker(env={"REDIS_URL": broker.url})
        assert worker.proc is not None
        client = memory_client(tenant, broker.url, queue_name, tmp_path)
        client.emit(user_id="u", session_id="s", content="before the outage", event_id="before")
        wait_for(lambda: "before" in stored(engine, tenant), timeout_s=30, what="the first event")
        publisher = TaskPublisher(broker.url, queue=queue_name, timeout_s=2.0)
        enqueue_extraction(publisher, tenant, "u", "s", reason="idle", countdown_s=300)
        wait_for(lambda: held(broker.url, queue_name) >= 1, timeout_s=30, what="the worker to hold a message")
        publisher.close()
        time.sleep(1)  # idle again: its BRPOP pending

        broker.stop()
        time.sleep(IDLE_DOWN_S)  # the worker meets a dead broker and keeps trying
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


def test_a_busy_worker_survives_a_redis_restart_and_processes_what_was_sent_during_and_after_it(
    tmp_path, start_worker, engine, tenant, queue_name
):
    """Both pool processes are in a slow LLM call when Redis stops (the prefetch is full: no BRPOP pending)
    and finish during the outage, so their acks fail."""
    broker = RedisServer(tmp_path / "redis").start()
    with FakeOpenAI() as llm:
        llm.delay_s = LLM_DELAY_S
        try:
            worker = start_worker(
                env={
                    "REDIS_URL": broker.url,
                    "OPENAI_API_KEY": "test-key",
                    "OPENAI_BASE_URL": llm.base_url,
                    "OPENAI_MAX_RETRIES": "0",
                    "OPENAI_TIMEOUT_S": str(LLM_DELAY_S * 3),
                    "MEMORY_DEBOUNCE_IDLE_S": "1",
                    "MEMORY_LLM_BATCH_TURNS": "1",
                }
            )
            assert worker.proc is not None
            client = memory_client(tenant, broker.url, queue_name, tmp_path)
            for n in range(2):  # two sessions, two extraction tasks, each waiting on the model
                client.emit(
                    user_id="u",
                    session_id=f"s{n}",
                    content=LLM_TURN,
                    event_id=f"slow-{n}",
                    event_time=datetime(2026, 1, 1, tzinfo=UTC),
                )
            client.flush()
            wait_for(lambda: len(llm.calls) >= 2, timeout_s=30, what="both processes in an LLM call")

            broker.stop()
            sent = [f"slow-{n}" for n in range(2)]
            for n in range(5):  # spooled by the client while Redis is down
                client.emit(user_id="u", session_id="s9", content=f"during the outage {n}", event_id=f"d-{n}")
                sent.append(f"d-{n}")
            time.sleep(BUSY_DOWN_S)  # the LLM calls end meanwhile; their acks fail
            assert worker.proc.poll() is None, worker.log_tail()
            broker.start()
            for n in range(5):
                client.emit(user_id="u", session_id="s9", content=f"after the outage {n}", event_id=f"a-{n}")
                sent.append(f"a-{n}")

            def spool_sent() -> bool:
                client.flush()
                return bool(client._spool.size() == 0)

            wait_for(spool_sent, timeout_s=30, interval_s=0.5, what="the client's spool sent")
            wait_for(
                lambda: set(sent) <= stored(engine, tenant),
                timeout_s=60,
                interval_s=0.5,
                what="every event stored",
            )
            assert worker.proc.poll() is None, worker.log_tail()
            log = worker.log_text()
            assert "Connection to broker lost" in log  # it did see the outage
            assert "Unrecoverable error" not in log, worker.log_tail()
            client.close()
        finally:
            broker.stop()
