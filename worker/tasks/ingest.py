"""The `memory.ingest` task, kept only to drain what an older version queued.

Before issue #14, agents sent each envelope as a `memory.ingest` Celery message; events now go on the ingest
stream (`shared/stream.py`) and are stored by the ingest consumer. A worker of this version still consumes
the old messages left on the queue after an upgrade: each envelope is appended to the stream as it is, and
the message is acknowledged only after the append (late ack), so nothing is lost in between. The consumer
stores it like any other entry (validation, redaction, dead letters, idempotency by event id).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from shared import tasknames
from shared.db.engine import resolve_redis_url
from shared.stream import StreamProducer
from worker import runtime
from worker.app import app


@lru_cache(maxsize=1)
def _stream() -> StreamProducer:
    s = runtime.settings()
    return StreamProducer(resolve_redis_url(s), queue=s.queue, shards=s.ingest_shards, timeout_s=5.0)


@app.task(
    name=tasknames.INGEST,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(Exception,),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=None,
)
def ingest(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Move one queued envelope onto the ingest stream (any call shape: the consumer dead-letters what is
    not an envelope, with the reason)."""
    envelope = args[0] if len(args) == 1 and not kwargs else {"args": list(args), "kwargs": kwargs}
    _stream().append(envelope)
    return {"outcome": "moved_to_stream"}
