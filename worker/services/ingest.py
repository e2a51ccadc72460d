"""Storing a batch of ingest envelopes: valid events stored exactly once in one transaction, invalid ones and
poison entries dead-lettered with the reason.

Only payload errors are handled here (a value the database refuses, a constraint the payload breaks), and
they never cost the rest of the batch: the batch is split in halves and retried until the bad entry is
alone, and that one is dead-lettered. Any other error (connection loss, a missing role or table during a
deploy, a bug) propagates: the caller keeps the entries pending and retries, so nothing is acknowledged
before it is committed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import DataError, IntegrityError
from sqlmodel import Session

from shared import tasknames
from shared.contract import EventIn
from shared.db.engine import ALL_TENANTS, session_scope
from store.dead_letters import record_dead_letter
from store.ingest import Rejected, SessionCounters, split_envelope, store_events

log = structlog.get_logger("worker.ingest")

# Only these mean "this payload can never be stored": a value the database refuses (bad encoding, out of
# range) or a constraint it breaks.
_PAYLOAD_ERRORS = (DataError, IntegrityError)


@dataclass
class Item:
    """One stream entry: its id, and the envelope it carries (or why it carries none)."""

    entry_id: str
    envelope: Any = None
    poison: str | None = None  # set: dead-letter the raw entry with this reason, store nothing

    def event_count(self) -> int:
        events = self.envelope.get("events") if isinstance(self.envelope, dict) else None
        return len(events) if isinstance(events, list) else 1

    @classmethod
    def decode(cls, entry_id: str, raw: bytes | None) -> Item:
        if raw is None:
            return cls(entry_id, None, "stream entry without the envelope field")
        try:
            return cls(entry_id, json.loads(raw))
        except (ValueError, UnicodeDecodeError) as exc:
            return cls(entry_id, raw.decode("utf-8", "replace")[:4096], f"not a JSON envelope: {exc}")


@dataclass
class BatchResult:
    received: int = 0  # events in the envelopes
    inserted: int = 0
    duplicates: int = 0
    dead_lettered: int = 0  # dead letters written (an event, an envelope or an entry)
    isolated: int = 0  # entries stored or dead-lettered on their own after their batch was refused
    sessions: dict[str, list[SessionCounters]] = field(
        default_factory=dict
    )  # tenant -> sessions with new rows

    def add(self, other: BatchResult) -> None:
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for tenant, sessions in other.sessions.items():
            self.sessions.setdefault(tenant, []).extend(sessions)

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTS}


COUNTS = ("received", "inserted", "duplicates", "dead_lettered", "isolated")


def store_items(
    engine: Engine,
    items: list[Item],
    *,
    now: datetime,
    known_tenants: set[str] | None = None,
    ingested_by: str | None = None,
) -> BatchResult:
    """Store the items in one transaction; on a payload error, split and retry until it is isolated.
    `ingested_by` (the consumer's name) is kept on each stored event, for its trace."""
    known = known_tenants if known_tenants is not None else set()
    try:
        return _store_once(engine, items, now=now, known_tenants=known, ingested_by=ingested_by)
    except _PAYLOAD_ERRORS as exc:
        if len(items) == 1:
            return _dead_letter_item(engine, items[0], exc, now=now)
        mid = len(items) // 2
        out = BatchResult()
        for half in (items[:mid], items[mid:]):
            part = store_items(engine, half, now=now, known_tenants=known, ingested_by=ingested_by)
            part.isolated += len(half) if len(half) == 1 else 0
            out.add(part)
        return out


def _store_once(
    engine: Engine, items: list[Item], *, now: datetime, known_tenants: set[str], ingested_by: str | None
) -> BatchResult:
    out = BatchResult()
    events: dict[str, list[EventIn]] = defaultdict(list)
    rejected: list[Rejected] = []
    for item in items:
        if item.poison is not None:
            rejected.append(Rejected({"entry_id": item.entry_id, "raw": item.envelope}, item.poison))
            continue
        split = split_envelope(item.envelope, now=now)
        out.received += len(split.events) + sum(1 for r in split.rejected if r.event_id is not None)
        if split.tenant_id and split.events:
            events[split.tenant_id].extend(split.events)
        rejected.extend(split.rejected)
    # the worker's all-tenant scope: one transaction for every tenant of the batch
    with session_scope(engine, tenant=ALL_TENANTS) as session:
        for tenant_id, tenant_events in events.items():
            result = store_events(
                session,
                tenant_id,
                tenant_events,
                now=now,
                ensure_tenant=tenant_id not in known_tenants,
                ingested_by=ingested_by,
            )
            out.inserted += len(result.inserted)
            out.duplicates += result.duplicates
            if result.sessions:
                out.sessions[tenant_id] = result.sessions
        _record(session, rejected, now=now)
    out.dead_lettered += len(rejected)
    known_tenants.update(events)
    if rejected:
        log.warning("ingest.rejected", count=len(rejected), reasons=[r.reason[:200] for r in rejected[:20]])
    return out


def _record(session: Session, rejected: list[Rejected], *, now: datetime) -> None:
    for rej in rejected:
        record_dead_letter(
            session,
            task_name=tasknames.INGEST,
            payload=rej.payload,
            reason=rej.reason,
            now=now,
            tenant_id=rej.tenant_id,
            event_id=rej.event_id,
        )


def _dead_letter_item(engine: Engine, item: Item, exc: BaseException, *, now: datetime) -> BatchResult:
    orig = getattr(exc, "orig", None) or exc
    dead_letter_entry(engine, item, f"database rejected the payload: {type(orig).__name__}", now=now)
    log.warning("ingest.poison", entry_id=item.entry_id, error=type(orig).__name__)
    return BatchResult(dead_lettered=1)


def dead_letter_entry(engine: Engine, item: Item, reason: str, *, now: datetime) -> None:
    """Keep an entry that can never be stored (the database refuses it, or every consumer that took it died)
    with the reason, in a transaction of its own; it is never tried again."""
    envelope = item.envelope if isinstance(item.envelope, dict) else None
    tenant_id = envelope.get("tenant_id") if envelope else None
    with session_scope(engine, tenant=ALL_TENANTS) as session:
        record_dead_letter(
            session,
            task_name=tasknames.INGEST,
            payload=item.envelope,
            reason=reason,
            now=now,
            tenant_id=tenant_id if isinstance(tenant_id, str) else None,
        )
