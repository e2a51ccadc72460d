"""Ingest service: split a queue envelope, store redacted events idempotently, track session counters.

Services never commit: the task that calls them owns the transaction.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert
from sqlmodel import Session

from shared.contract import EventIn, is_safe_id, parse_event
from shared.db.models import Event, SessionState, Tenant
from shared.errors import ContractError
from shared.redaction import redact_obj, redact_with_report
from shared.tokens import estimate_tokens


@dataclass
class Rejected:
    payload: Any
    reason: str
    tenant_id: str | None = None
    event_id: str | None = None


@dataclass
class SplitEnvelope:
    tenant_id: str | None
    events: list[EventIn] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


def split_envelope(envelope: object, *, now: datetime) -> SplitEnvelope:
    """Validate a queue envelope `{"tenant_id": ..., "events": [...]}` event by event (pure).

    A queue has no caller to answer, so valid events are kept and each invalid one is rejected alone
    with a readable reason; a malformed envelope is rejected whole.
    """
    if not isinstance(envelope, dict):
        return SplitEnvelope(None, rejected=[Rejected(envelope, "envelope: must be a JSON object")])
    tenant_id = envelope.get("tenant_id")
    if not is_safe_id(tenant_id):
        return SplitEnvelope(
            None, rejected=[Rejected(envelope, "tenant_id: missing or not 1-128 safe characters")]
        )
    assert isinstance(tenant_id, str)
    raw_events = envelope.get("events")
    if not isinstance(raw_events, list) or not raw_events:
        return SplitEnvelope(
            tenant_id, rejected=[Rejected(envelope, "events: must be a non-empty list", tenant_id)]
        )
    out = SplitEnvelope(tenant_id)
    for i, raw in enumerate(raw_events):
        try:
            event = parse_event(raw, now=now, prefix=f"events.{i}")
        except ContractError as exc:
            event_id = raw.get("event_id") if isinstance(raw, dict) else None
            out.rejected.append(
                Rejected(raw, str(exc), tenant_id, event_id if is_safe_id(event_id) else None)
            )
            continue
        if event.tenant_id not in (None, tenant_id):
            out.rejected.append(
                Rejected(
                    raw,
                    f"events.{i}.tenant_id: differs from the envelope's tenant",
                    tenant_id,
                    event.event_id,
                )
            )
            continue
        out.events.append(event)
    return out


@dataclass(frozen=True)
class SessionCounters:
    """A session's state right after a store: what the debounce decision needs."""

    user_id: str
    session_id: str
    pending_count: int
    pending_tokens: int
    status: str
    last_event_at: datetime | None


@dataclass
class StoreResult:
    inserted: list[str]
    duplicates: int
    sessions: list[SessionCounters]  # sessions that received new events


def event_row(tenant_id: str, event: EventIn, *, now: datetime) -> dict[str, Any]:
    """The row to insert for one validated event, redacted (pure)."""
    content, report = redact_with_report(event.content)
    return {
        "tenant_id": tenant_id,
        "event_id": event.event_id,
        "schema_version": event.schema_version,
        "type": event.type,
        "user_id": event.user_id,
        "agent_id": event.agent_id,
        "session_id": event.session_id,
        "role": event.role,
        "content": content,
        "token_count": estimate_tokens(content),
        "event_time": event.time_or(now),
        "source_turn_id": event.source_turn_id,
        "metadata": redact_obj(event.metadata),
        "redactions": report,
        "status": "pending",
        "attempts": 0,
        "received_at": now,
    }


def store_events(
    session: Session, tenant_id: str, events: list[EventIn], *, now: datetime, ensure_tenant: bool = True
) -> StoreResult:
    """Insert events with ON CONFLICT DO NOTHING; bump the counters of the sessions that got new rows.

    Re-delivering the same events changes nothing: only rows actually inserted count.
    """
    if not events:
        return StoreResult([], 0, [])
    rows = [event_row(tenant_id, e, now=now) for e in events]
    # one batch may repeat an event id: keep the first, like a second delivery would
    unique_rows = list({r["event_id"]: r for r in reversed(rows)}.values())[::-1]
    if ensure_tenant:
        session.execute(insert(Tenant).values(id=tenant_id).on_conflict_do_nothing())
    table = Event.__table__  # type: ignore[attr-defined]
    result = session.execute(
        insert(table).values(unique_rows).on_conflict_do_nothing().returning(table.c.event_id)
    )
    inserted = {row[0] for row in result}
    new_rows = [r for r in unique_rows if r["event_id"] in inserted]
    touched = _bump_sessions(session, tenant_id, new_rows, now=now)
    return StoreResult([r["event_id"] for r in new_rows], len(rows) - len(new_rows), touched)


def _bump_sessions(
    session: Session, tenant_id: str, rows: list[dict[str, Any]], *, now: datetime
) -> list[SessionCounters]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["user_id"], r["session_id"])].append(r)
    if not groups:
        return []
    values = []
    for (user_id, session_id), rs in sorted(groups.items()):
        turns = [r for r in rs if r["type"] == "turn"]
        ended = any(r["type"] == "session_end" for r in rs)
        times = [r["event_time"] for r in rs]
        values.append(
            {
                "tenant_id": tenant_id,
                "user_id": user_id,
                "session_id": session_id,
                "agent_id": next((r["agent_id"] for r in rs if r["agent_id"]), None),
                "status": "ended" if ended else "open",
                "pending_count": len(turns),
                "pending_tokens": sum(r["token_count"] for r in turns),
                "turn_count": len(turns),
                "first_event_at": min(times),
                "last_event_at": max(times),
                "ended_at": max(r["event_time"] for r in rs if r["type"] == "session_end") if ended else None,
                "updated_at": now,
            }
        )
    table = SessionState.__table__  # type: ignore[attr-defined]
    stmt = insert(table).values(values)
    ex = stmt.excluded
    stmt = stmt.on_conflict_do_update(
        index_elements=["tenant_id", "user_id", "session_id"],
        set_={
            "pending_count": table.c.pending_count + ex.pending_count,
            "pending_tokens": table.c.pending_tokens + ex.pending_tokens,
            "turn_count": table.c.turn_count + ex.turn_count,
            "first_event_at": text("LEAST(sessions.first_event_at, excluded.first_event_at)"),
            "last_event_at": text("GREATEST(sessions.last_event_at, excluded.last_event_at)"),
            "ended_at": text("COALESCE(excluded.ended_at, sessions.ended_at)"),
            # an explicit end wins; a new turn re-opens a session the idle sweeper had closed
            "status": text(
                "CASE WHEN excluded.status = 'ended' THEN 'ended' "
                "WHEN sessions.status = 'closed' THEN 'open' ELSE sessions.status END"
            ),
            "agent_id": text("COALESCE(sessions.agent_id, excluded.agent_id)"),
            "updated_at": ex.updated_at,
        },
    )
    returned = session.execute(
        stmt.returning(
            table.c.user_id,
            table.c.session_id,
            table.c.pending_count,
            table.c.pending_tokens,
            table.c.status,
            table.c.last_event_at,
        )
    )
    return [SessionCounters(*row) for row in returned]
