"""The `memory.ingest` task: validate, redact, store exactly once; poison payloads go to dead letters.

A database outage is retried with capped exponential backoff (the message stays in Redis until then:
late acks); a payload that can never succeed is dead-lettered, never retried forever.
"""

from __future__ import annotations

from typing import Any

import redis
import structlog
from celery.exceptions import Retry

from shared import tasknames
from shared.contract import utcnow
from store.ingest import split_envelope
from store.triggers import after_store
from worker import runtime
from worker.app import app
from worker.services import ingest as svc
from worker.tasks.base import retry_later

log = structlog.get_logger("worker.ingest")
# tenants this process has already upserted: one statement less per message (tenants are never deleted
# while a worker runs; a miss only costs the idempotent upsert again)
_known_tenants: set[str] = set()


def _retry(task: Any, exc: BaseException, max_s: int) -> Retry:
    orig = getattr(exc, "orig", None) or exc

    def before_retry(countdown: float) -> None:
        log.warning(
            "ingest.retry", error=type(orig).__name__, detail=str(orig)[:200], retry_in_s=round(countdown, 2)
        )
        _ledger(task, retry_in_s=countdown)

    return retry_later(task, exc, max_s=max_s, before_retry=before_retry)


def _ledger(task: Any, *, retry_in_s: float | None = None) -> None:
    """Settle this message's in-flight ledger entry (the events are stored or dead-lettered), or, with
    `retry_in_s`, postpone it past the retry. Advisory: if Redis is away the entry is redelivered later, and
    ingest is idempotent, so nothing is lost or duplicated either way."""
    task_id = getattr(task.request, "id", None)
    if not task_id:
        return
    try:
        if retry_in_s is None:
            runtime.publisher().settle(task_id)
        else:
            runtime.publisher().postpone(task_id, delay_s=retry_in_s)
    except redis.RedisError as exc:
        log.warning("ingest.ledger_unavailable", settle=retry_in_s is None, error=type(exc).__name__)


@app.task(name=tasknames.INGEST, bind=True, max_retries=None, acks_late=True, reject_on_worker_lost=True)
def ingest(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Store one envelope `{"tenant_id": ..., "events": [...]}`. Accepts any call shape, so that a
    malformed message is dead-lettered instead of failing inside Celery's argument binding."""
    settings = runtime.settings()
    now = utcnow()
    if not (len(args) == 1 and not kwargs):
        envelope = {"args": list(args), "kwargs": kwargs}
        try:
            done = svc.dead_letter_call(
                runtime.engine(), envelope, n_args=len(args), n_kwargs=len(kwargs), now=now
            )
        except Exception as exc:
            raise _retry(self, exc, settings.ingest_retry_backoff_max_s) from None
    else:
        split = split_envelope(args[0], now=now)
        users = {e.user_id for e in split.events}
        structlog.contextvars.bind_contextvars(
            **({"tenant_id": split.tenant_id} if split.tenant_id else {}),
            **({"user_id": next(iter(users))} if len(users) == 1 else {}),
            **({"event_id": split.events[0].event_id} if len(split.events) == 1 else {}),
        )
        try:
            done = svc.store_envelope(
                runtime.engine(), args[0], split, now=now, ensure_tenant=split.tenant_id not in _known_tenants
            )
        except Exception as exc:
            raise _retry(self, exc, settings.ingest_retry_backoff_max_s) from None
    _ledger(self)
    if done.sessions:
        after_store(runtime.publisher(), settings, done.tenant_id, done.sessions)
    return done.counts
