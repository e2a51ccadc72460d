"""The `memory.ingest` task: validate, redact, store exactly once; poison payloads go to dead letters.

A database outage is retried with capped exponential backoff (the message stays in Redis until then:
late acks); a payload that can never succeed is dead-lettered, never retried forever.
"""

from __future__ import annotations

from typing import Any

import redis
import structlog
from sqlalchemy.exc import DataError, IntegrityError

from shared import tasknames
from shared.contract import utcnow
from shared.db.engine import ALL_TENANTS, session_scope
from store.dead_letters import record_dead_letter
from store.ingest import split_envelope, store_events
from store.triggers import after_store
from worker import runtime
from worker.app import app
from worker.retry import retry_countdown

log = structlog.get_logger("worker.ingest")
# tenants this process has already upserted: one statement less per message (tenants are never deleted
# while a worker runs; a miss only costs the idempotent upsert again)
_known_tenants: set[str] = set()

# Only these mean "this payload can never be stored": a value the database refuses (bad encoding, out of
# range) or a constraint it breaks. Everything else (connection loss, a missing role or table during a
# deploy, a bug) is retried with backoff: the message stays in Redis until it succeeds, never acked and lost.
_PAYLOAD_ERRORS = (DataError, IntegrityError)


def _retry(task: Any, exc: BaseException, max_s: int) -> BaseException:
    countdown = retry_countdown(task.request.retries, max_s=max_s)
    orig = getattr(exc, "orig", None) or exc
    log.warning(
        "ingest.retry", error=type(orig).__name__, detail=str(orig)[:200], retry_in_s=round(countdown, 2)
    )
    _ledger(task, retry_in_s=countdown)
    return task.retry(exc=exc, countdown=countdown)  # type: ignore[no-any-return]


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
    envelope: Any = args[0] if len(args) == 1 and not kwargs else {"args": list(args), "kwargs": kwargs}
    if not (len(args) == 1 and not kwargs):
        try:
            with session_scope(runtime.engine(), tenant=ALL_TENANTS) as session:
                record_dead_letter(
                    session,
                    task_name=tasknames.INGEST,
                    payload=envelope,
                    now=now,
                    reason=f"task called with {len(args)} positional and {len(kwargs)} keyword "
                    "arguments; expected one envelope",
                )
        except Exception as exc:
            raise _retry(self, exc, settings.ingest_retry_backoff_max_s) from None
        _ledger(self)
        return {"outcome": "dead_lettered", "dead_lettered": 1}
    split = split_envelope(envelope, now=now)
    if split.tenant_id:
        structlog.contextvars.bind_contextvars(tenant_id=split.tenant_id)
    users = {e.user_id for e in split.events}
    if len(users) == 1:
        structlog.contextvars.bind_contextvars(user_id=next(iter(users)))
    if len(split.events) == 1:
        structlog.contextvars.bind_contextvars(event_id=split.events[0].event_id)
    # a dead letter without a tenant (a malformed envelope) is written in the worker's all-tenant scope
    scope = split.tenant_id or ALL_TENANTS
    try:
        with session_scope(runtime.engine(), tenant=scope) as session:
            result = (
                store_events(
                    session,
                    split.tenant_id or "",
                    split.events,
                    now=now,
                    ensure_tenant=split.tenant_id not in _known_tenants,
                )
                if split.events
                else None
            )
            for rej in split.rejected:
                record_dead_letter(
                    session,
                    task_name=tasknames.INGEST,
                    payload=rej.payload,
                    reason=rej.reason,
                    now=now,
                    tenant_id=rej.tenant_id,
                    event_id=rej.event_id,
                )
    except _PAYLOAD_ERRORS as exc:
        try:
            with session_scope(runtime.engine(), tenant=scope) as session:
                record_dead_letter(
                    session,
                    task_name=tasknames.INGEST,
                    payload=envelope,
                    reason=f"database rejected the payload: {type(exc.orig or exc).__name__}",
                    now=now,
                    tenant_id=split.tenant_id,
                )
        except Exception as dl_exc:  # the dead letter could not be written either: keep the message
            raise _retry(self, dl_exc, settings.ingest_retry_backoff_max_s) from None
        _ledger(self)
        return {"outcome": "dead_lettered", "received": len(split.events), "dead_lettered": 1}
    except Exception as exc:
        raise _retry(self, exc, settings.ingest_retry_backoff_max_s) from None
    if split.rejected:
        log.warning(
            "ingest.rejected", count=len(split.rejected), reasons=[r.reason[:200] for r in split.rejected]
        )
    _ledger(self)
    inserted = len(result.inserted) if result else 0
    if result and result.inserted:
        after_store(runtime.publisher(), settings, split.tenant_id or "", result.sessions)
    return {
        "outcome": "ok" if not split.rejected else "partial",
        "received": len(split.events) + len(split.rejected),
        "inserted": inserted,
        "duplicates": result.duplicates if result else 0,
        "dead_lettered": len(split.rejected),
    }
