"""Ingest service: split a queue envelope, store redacted events idempotently, track session counters.

Services never commit: the task that calls them owns the transaction.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.dialects.postgresql import insert
from sqlmodel import Session

from shared.contract import EventIn, is_safe_id, parse_event
from shared.db.models import Tenant
from shared.db.raw import fetch_all
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
    sessions: list[SessionCounters]  # sessions that received new events, then those of the duplicates


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


# One statement per batch whatever its size: the rows travel as one array per column and are unnested by the
# server. A multi-row VALUES built by SQLAlchemy cost ~0.5 ms of client CPU per event to compile and bind
# (BENCHMARKS.md, ingest: "Where the time goes"); this costs a few microseconds.
_INSERT_EVENTS = """
INSERT INTO events (tenant_id, event_id, schema_version, type, user_id, agent_id, session_id, role, content,
                    token_count, event_time, source_turn_id, metadata, redactions, status, attempts, received_at,
                    ingested_by)
SELECT :tenant_id, e.event_id, e.schema_version, e.type, e.user_id, e.agent_id, e.session_id, e.role, e.content,
       e.token_count, e.event_time, e.source_turn_id, e.metadata::jsonb, e.redactions::jsonb, 'pending', 0,
       :received_at, CAST(:ingested_by AS varchar)
FROM unnest(:event_id::text[], :schema_version::smallint[], :type::text[], :user_id::text[], :agent_id::text[],
            :session_id::text[], :role::text[], :content::text[], :token_count::int[],
            :event_time::timestamptz[], :source_turn_id::text[], :metadata::text[], :redactions::text[])
     AS e(event_id, schema_version, type, user_id, agent_id, session_id, role, content, token_count, event_time,
          source_turn_id, metadata, redactions)
ON CONFLICT DO NOTHING
RETURNING event_id
"""

_BUMP_SESSIONS = """
INSERT INTO sessions AS s (tenant_id, user_id, session_id, agent_id, status, pending_count, pending_tokens,
                           turn_count, first_event_at, last_event_at, ended_at, updated_at)
SELECT :tenant_id, v.user_id, v.session_id, v.agent_id, v.status, v.turns, v.tokens, v.turns, v.first_at,
       v.last_at, v.ended_at, :now
FROM unnest(:user_id::text[], :session_id::text[], :agent_id::text[], :status::text[], :turns::int[],
            :tokens::int[], :first_at::timestamptz[], :last_at::timestamptz[], :ended_at::timestamptz[])
     AS v(user_id, session_id, agent_id, status, turns, tokens, first_at, last_at, ended_at)
ON CONFLICT (tenant_id, user_id, session_id) DO UPDATE SET
    pending_count = s.pending_count + excluded.pending_count,
    pending_tokens = s.pending_tokens + excluded.pending_tokens,
    turn_count = s.turn_count + excluded.turn_count,
    first_event_at = LEAST(s.first_event_at, excluded.first_event_at),
    last_event_at = GREATEST(s.last_event_at, excluded.last_event_at),
    ended_at = COALESCE(excluded.ended_at, s.ended_at),
    -- an explicit end wins; a new turn re-opens a session the idle sweeper had closed
    status = CASE WHEN excluded.status = 'ended' THEN 'ended'
                  WHEN s.status = 'closed' THEN 'open' ELSE s.status END,
    agent_id = COALESCE(s.agent_id, excluded.agent_id),
    updated_at = excluded.updated_at
RETURNING user_id, session_id, pending_count, pending_tokens, status, last_event_at
"""


_SESSIONS_OF = """
SELECT s.user_id, s.session_id, s.pending_count, s.pending_tokens, s.status, s.last_event_at
FROM sessions s JOIN unnest(:user_id::text[], :session_id::text[]) AS k(user_id, session_id)
  ON s.user_id = k.user_id AND s.session_id = k.session_id
WHERE s.tenant_id = :tenant_id
"""


def store_events(
    session: Session,
    tenant_id: str,
    events: list[EventIn],
    *,
    now: datetime,
    ensure_tenant: bool = True,
    ingested_by: str | None = None,
) -> StoreResult:
    """Insert events with ON CONFLICT DO NOTHING; bump the counters of the sessions that got new rows.
    `ingested_by` names the path that stored them (`consumer:<name>`, `api:<key id>`), for the event trace.

    Re-delivering the same events changes nothing: only rows actually inserted count. Two statements (three
    with `ensure_tenant`) whatever the number of events.
    """
    if not events:
        return StoreResult([], 0, [])
    rows = [event_row(tenant_id, e, now=now) for e in events]
    # one batch may repeat an event id: keep the first, like a second delivery would
    unique_rows = list({r["event_id"]: r for r in reversed(rows)}.values())[::-1]
    if ensure_tenant:
        session.execute(insert(Tenant).values(id=tenant_id).on_conflict_do_nothing())
    columns = {
        name: [r[name] for r in unique_rows]
        for name in ("event_id", "schema_version", "type", "user_id", "agent_id", "session_id", "role",
                     "content", "token_count", "event_time", "source_turn_id")
    }  # fmt: skip
    columns["metadata"] = [json.dumps(r["metadata"], ensure_ascii=False) for r in unique_rows]
    columns["redactions"] = [json.dumps(r["redactions"], ensure_ascii=False) for r in unique_rows]
    params = {
        "tenant_id": tenant_id,
        "received_at": now,
        "ingested_by": ingested_by[:64] if ingested_by else None,
    }
    inserted = {row.event_id for row in fetch_all(session, _INSERT_EVENTS, {**params, **columns})}
    new_rows = [r for r in unique_rows if r["event_id"] in inserted]
    touched = _bump_sessions(session, tenant_id, new_rows, now=now)
    # A re-delivery inserts nothing, but its first delivery may have been committed by a consumer that then
    # lost Redis before firing the triggers: the sessions of duplicates are returned too (their counters as
    # they are), so that the caller re-fires what is due. Triggers are idempotent.
    seen = {(c.user_id, c.session_id) for c in touched}
    again = sorted({(r["user_id"], r["session_id"]) for r in unique_rows} - seen)
    if again:
        touched += [
            SessionCounters(*row)
            for row in fetch_all(
                session,
                _SESSIONS_OF,
                {
                    "tenant_id": tenant_id,
                    "user_id": [u for u, _ in again],
                    "session_id": [s for _, s in again],
                },
            )
        ]
    return StoreResult([r["event_id"] for r in new_rows], len(rows) - len(new_rows), touched)


def _bump_sessions(
    session: Session, tenant_id: str, rows: list[dict[str, Any]], *, now: datetime
) -> list[SessionCounters]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["user_id"], r["session_id"])].append(r)
    if not groups:
        return []
    cols: dict[str, list[Any]] = defaultdict(list)
    for (user_id, session_id), rs in sorted(groups.items()):
        turns = [r for r in rs if r["type"] == "turn"]
        ends = [r["event_time"] for r in rs if r["type"] == "session_end"]
        times = [r["event_time"] for r in rs]
        cols["user_id"].append(user_id)
        cols["session_id"].append(session_id)
        cols["agent_id"].append(next((r["agent_id"] for r in rs if r["agent_id"]), None))
        cols["status"].append("ended" if ends else "open")
        cols["turns"].append(len(turns))
        cols["tokens"].append(sum(r["token_count"] for r in turns))
        cols["first_at"].append(min(times))
        cols["last_at"].append(max(times))
        cols["ended_at"].append(max(ends) if ends else None)
    returned = fetch_all(session, _BUMP_SESSIONS, {"tenant_id": tenant_id, "now": now, **cols})
    return [SessionCounters(*row) for row in returned]
