"""PostgreSQL down for 20 s during ingest: the ingest consumer keeps the batch pending, retries with backoff, and
every event is stored once when the database is back."""

from __future__ import annotations

import time

import pytest
import redis
from sqlalchemy import text

from shared.client import MemoryClient
from shared.db.engine import get_engine
from shared.db.migrate import migrate
from shared.embedded import redis_py_url, start_postgres
from shared.stream import stream_stats
from tests.services import wait_for

pytestmark = pytest.mark.integration


def _drained(url: str, queue: str) -> bool:
    stats = stream_stats(redis.Redis.from_url(redis_py_url(url)), queue, 1)
    return stats["length"] == 0 and stats["pending"] == 0


def test_events_sent_while_postgres_is_down_are_stored_once_it_is_back(
    tmp_path, start_worker, tenant, redis_url, queue_name
):
    pg = start_postgres(tmp_path / "outage")
    try:
        migrate(pg.url)
        engine = get_engine(pg.url)
        worker = start_worker(env={"DATABASE_URL": pg.url})
        client = MemoryClient(
            tenant,
            broker_url=redis_url,
            queue=queue_name,
            spool_path=tmp_path / "s.jsonl",
            flush_at_exit=False,
        )

        def stored() -> int:
            with engine.connect() as conn:
                return int(
                    conn.execute(
                        text("SELECT count(*) FROM events WHERE tenant_id = :t"), {"t": tenant}
                    ).scalar()
                )

        for n in range(100):
            client.emit(user_id="u", session_id="s", content=f"before {n}", event_id=f"a-{n}")
        wait_for(lambda: stored() == 100, timeout_s=60, what="the first 100 events")

        pg.stop()
        engine.dispose()
        for n in range(200):
            client.emit(user_id="u", session_id="s", content=f"during {n}", event_id=f"b-{n}")
        time.sleep(20)  # the consumer meets a dead database and retries, the entries pending meanwhile
        assert worker.consumer is not None and worker.consumer.alive()
        assert '"ingest.retry"' in worker.consumer.log_text()
        pg.server.start()  # type: ignore[attr-defined]

        wait_for(
            lambda: stored() == 300, timeout_s=120, interval_s=0.5, what="all 300 events after the outage"
        )
        with engine.connect() as conn:
            turns = conn.execute(
                text("SELECT turn_count FROM sessions WHERE tenant_id = :t"), {"t": tenant}
            ).scalar()
        assert turns == 300
        wait_for(lambda: _drained(redis_url, queue_name), timeout_s=30, what="the stream to drain")
        client.close()
    finally:
        get_engine(pg.url).dispose()
        pg.stop()
