"""Storing one queue envelope: valid events stored exactly once, invalid ones and poison payloads
dead-lettered with the reason.

Only payload errors are handled here (a value the database refuses, a constraint the payload breaks): any
other error, the dead letter's own write included, propagates for the task to retry, so the message stays
in Redis until it is stored or dead-lettered, never acked and lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import DataError, IntegrityError

from shared import tasknames
from shared.db.engine import ALL_TENANTS, session_scope
from store.dead_letters import record_dead_letter
from store.ingest import SessionCounters, SplitEnvelope, store_events

log = structlog.get_logger("worker.ingest")

# Only these mean "this payload can never be stored": a value the database refuses (bad encoding, out of
# range) or a constraint it breaks. Everything else (connection loss, a missing role or table during a
# deploy, a bug) is retried with backoff by the task.
_PAYLOAD_ERRORS = (DataError, IntegrityError)


@dataclass
class Ingested:
    counts: dict[str, Any]  # what the task returns
    tenant_id: str = ""
    sessions: list[SessionCounters] = field(default_factory=list)  # sessions that received new events


def dead_letter_call(engine: Engine, envelope: Any, *, n_args: int, n_kwargs: int, now: datetime) -> Ingested:
    """A task call that is not one envelope: the whole call dead-lettered, in the all-tenant scope."""
    with session_scope(engine, tenant=ALL_TENANTS) as session:
        record_dead_letter(
            session,
            task_name=tasknames.INGEST,
            payload=envelope,
            now=now,
            reason=f"task called with {n_args} positional and {n_kwargs} keyword "
            "arguments; expected one envelope",
        )
    return Ingested({"outcome": "dead_lettered", "dead_lettered": 1})


def store_envelope(
    engine: Engine, envelope: Any, split: SplitEnvelope, *, now: datetime, ensure_tenant: bool
) -> Ingested:
    """Store the valid events of `split` and dead-letter its rejected ones in one transaction; a payload
    the database refuses is dead-lettered whole (`envelope`) in a second one."""
    # a dead letter without a tenant (a malformed envelope) is written in the worker's all-tenant scope
    scope = split.tenant_id or ALL_TENANTS
    try:
        with session_scope(engine, tenant=scope) as session:
            result = (
                store_events(
                    session, split.tenant_id or "", split.events, now=now, ensure_tenant=ensure_tenant
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
        with session_scope(engine, tenant=scope) as session:
            record_dead_letter(
                session,
                task_name=tasknames.INGEST,
                payload=envelope,
                reason=f"database rejected the payload: {type(exc.orig or exc).__name__}",
                now=now,
                tenant_id=split.tenant_id,
            )
        return Ingested({"outcome": "dead_lettered", "received": len(split.events), "dead_lettered": 1})
    if split.rejected:
        log.warning(
            "ingest.rejected", count=len(split.rejected), reasons=[r.reason[:200] for r in split.rejected]
        )
    counts = {
        "outcome": "ok" if not split.rejected else "partial",
        "received": len(split.events) + len(split.rejected),
        "inserted": len(result.inserted) if result else 0,
        "duplicates": result.duplicates if result else 0,
        "dead_lettered": len(split.rejected),
    }
    return Ingested(counts, split.tenant_id or "", result.sessions if result and result.inserted else [])
