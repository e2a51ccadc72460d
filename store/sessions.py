"""Session state (`sessions`) and the session's turns: as the worker reads them (activity for the idle timer,
pending counters, the rolling summary and its fold, closing a finished session), and as an agent reads them
back (`session_window`: the summary and the most recent turns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlmodel import Session

from core.extraction.candidates import Turn


@dataclass(frozen=True)
class Activity:
    last_event_at: datetime | None
    pending_count: int
    status: str  # open | ended | closed


@dataclass(frozen=True)
class SummaryState:
    summary: str
    status: str


@dataclass(frozen=True)
class FoldState:
    turn_count: int
    summary: str
    summarized_through: datetime | None  # event time of the newest turn folded into `summary` so far


@dataclass(frozen=True)
class ClosingSession:
    summary: str
    agent_id: str | None
    first_event_at: datetime | None
    last_event_at: datetime | None


def _key(tenant_id: str, user_id: str, session_id: str) -> dict[str, str]:
    return {"t": tenant_id, "u": user_id, "s": session_id}


def activity(db: Session, tenant_id: str, user_id: str, session_id: str) -> Activity | None:
    """When the session last saw an event, and its state; None for an unknown session."""
    row = db.execute(
        text(
            "SELECT last_event_at, pending_count, status FROM sessions "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
        ),
        _key(tenant_id, user_id, session_id),
    ).first()
    return Activity(row[0], row[1], row[2]) if row is not None else None


def summary_state(db: Session, tenant_id: str, user_id: str, session_id: str) -> SummaryState | None:
    """The session's rolling summary and status; None for an unknown session."""
    row = db.execute(
        text(
            "SELECT summary, status FROM sessions WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
        ),
        _key(tenant_id, user_id, session_id),
    ).first()
    return SummaryState(row[0], row[1]) if row is not None else None


def count_pending(db: Session, tenant_id: str, user_id: str, session_id: str) -> int:
    """Events of the session still waiting for their first extraction."""
    value = db.execute(
        text(
            "SELECT count(*) FROM events WHERE tenant_id = :t AND user_id = :u AND session_id = :s "
            "AND status = 'pending'"
        ),
        _key(tenant_id, user_id, session_id),
    ).scalar()
    return int(value or 0)


def lock_fold_state(db: Session, tenant_id: str, user_id: str, session_id: str) -> FoldState | None:
    """The summary's state, the session row locked until the end of the transaction (one fold at a time)."""
    row = db.execute(
        text(
            "SELECT turn_count, summary, summarized_through FROM sessions "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s FOR UPDATE"
        ),
        _key(tenant_id, user_id, session_id),
    ).first()
    return FoldState(row[0], row[1], row[2]) if row is not None else None


def turns_to_fold(
    db: Session,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    through: datetime | None,
    keep_recent: int,
) -> list[tuple[Turn, datetime]]:
    """The session's turns after `through` and older than its newest `keep_recent`, each with its event
    time, in event-time order."""
    rows = db.execute(
        text(
            "SELECT event_id, role, content, source_turn_id, event_time FROM events "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND type = 'turn' "
            "AND (CAST(:through AS timestamptz) IS NULL OR event_time > :through) "
            "AND event_time < (SELECT event_time FROM events WHERE tenant_id = :t AND user_id = :u "
            "  AND session_id = :s AND type = 'turn' ORDER BY event_time DESC OFFSET :keep LIMIT 1) "
            "ORDER BY event_time, event_id"
        ),
        {**_key(tenant_id, user_id, session_id), "through": through, "keep": keep_recent - 1},
    ).all()
    return [(Turn(event_id=r[0], role=r[1], content=r[2], source_turn_id=r[3]), r[4]) for r in rows]


def write_summary(
    db: Session, tenant_id: str, user_id: str, session_id: str, *, summary: str, through: datetime
) -> None:
    """Replace the rolling summary, which now covers the turns up to `through` (event time)."""
    db.execute(
        text(
            "UPDATE sessions SET summary = :sum, summarized_through = :th, updated_at = now() "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
        ),
        {**_key(tenant_id, user_id, session_id), "sum": summary, "th": through},
    )


def refresh_counters(db: Session, tenant_id: str, user_id: str, session_id: str) -> None:
    """Recount the session's pending turns and their tokens from its events."""
    db.execute(
        text(
            "UPDATE sessions SET (pending_count, pending_tokens) = ("
            "  SELECT count(*), coalesce(sum(token_count), 0) FROM events "
            "  WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND status = 'pending' AND type = 'turn'"
            "), updated_at = now() WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
        ),
        _key(tenant_id, user_id, session_id),
    )


def sessions_to_close(
    db: Session, *, now: datetime, idle_s: float, settle_s: float = 0.0, limit: int = 500
) -> list[tuple[str, str, str]]:
    """Sessions whose turns are all extracted and that were ended by the agent, with nothing received for
    them in the last `settle_s` (the events of one session travel in separate messages, so its end can be
    stored before a turn sent just before it), or idle for `idle_s` of event time."""
    rows = db.execute(
        text(
            "SELECT tenant_id, user_id, session_id FROM sessions WHERE pending_count = 0 AND "
            "((status = 'ended' AND updated_at <= :settled) OR (status = 'open' AND last_event_at < :cutoff)) "
            "ORDER BY last_event_at LIMIT :n"
        ),
        {"cutoff": now - timedelta(seconds=idle_s), "settled": now - timedelta(seconds=settle_s), "n": limit},
    ).all()
    return [(r[0], r[1], r[2]) for r in rows]


def lock_for_closing(db: Session, tenant_id: str, user_id: str, session_id: str) -> ClosingSession | None:
    """What the session's episode needs, the session row locked until the end of the transaction."""
    row = db.execute(
        text(
            "SELECT summary, agent_id, first_event_at, last_event_at FROM sessions WHERE "
            "tenant_id = :t AND user_id = :u AND session_id = :s FOR UPDATE"
        ),
        _key(tenant_id, user_id, session_id),
    ).first()
    return ClosingSession(row[0], row[1], row[2], row[3]) if row is not None else None


def session_turns(db: Session, tenant_id: str, user_id: str, session_id: str) -> list[Turn]:
    """Every turn of the session the gate did not skip, in event-time order."""
    rows = db.execute(
        text(
            "SELECT event_id, role, content, source_turn_id FROM events WHERE tenant_id = :t AND user_id = :u "
            "AND session_id = :s AND type = 'turn' AND status <> 'skipped' ORDER BY event_time, event_id"
        ),
        _key(tenant_id, user_id, session_id),
    ).all()
    return [Turn(event_id=r[0], role=r[1], content=r[2], source_turn_id=r[3]) for r in rows]


def mark_closed(db: Session, tenant_id: str, user_id: str, session_id: str, *, now: datetime) -> None:
    db.execute(
        text(
            "UPDATE sessions SET status = 'closed', updated_at = :now WHERE tenant_id = :t AND "
            "user_id = :u AND session_id = :s"
        ),
        {**_key(tenant_id, user_id, session_id), "now": now},
    )


@dataclass(frozen=True)
class WindowTurn:
    event_id: str
    role: str
    content: str
    event_time: datetime
    source_turn_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)  # the event's (redacted) metadata, as sent


@dataclass(frozen=True)
class SessionWindow:
    """What an agent gets back for a session: its rolling summary and its most recent turns, oldest first."""

    session_id: str
    user_id: str
    status: str
    turn_count: int
    summary: str
    summarized_through: datetime | None
    turns: list[WindowTurn]


def find_session_owners(db: Session, tenant_id: str, session_id: str, *, user_id: str | None) -> list[str]:
    """The users with a session of this id (at most two: enough to tell one from several)."""
    rows = db.execute(
        text(
            "SELECT user_id FROM sessions WHERE tenant_id = :t AND session_id = :s "
            "AND (CAST(:u AS text) IS NULL OR user_id = :u) LIMIT 2"
        ),
        {"t": tenant_id, "s": session_id, "u": user_id},
    )
    return [str(u) for u in rows.scalars().all()]


def session_window(
    db: Session, tenant_id: str, user_id: str, session_id: str, *, last: int
) -> SessionWindow | None:
    """The session's summary and its `last` most recent turns, or None when there is no such session."""
    key = _key(tenant_id, user_id, session_id)
    state = db.execute(
        text(
            "SELECT status, turn_count, summary, summarized_through FROM sessions "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
        ),
        key,
    ).first()
    if state is None:
        return None
    turns = db.execute(
        text(
            "SELECT event_id, role, content, event_time, source_turn_id, metadata FROM events "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND type = 'turn' "
            "ORDER BY event_time DESC, event_id DESC LIMIT :n"
        ),
        {**key, "n": last},
    ).all()
    return SessionWindow(
        session_id=session_id,
        user_id=user_id,
        status=state[0],
        turn_count=state[1],
        summary=state[2],
        summarized_through=state[3],
        turns=[WindowTurn(*r) for r in reversed(turns)],
    )


def pop_last_turn(db: Session, tenant_id: str, user_id: str, session_id: str) -> WindowTurn | None:
    """Delete the session's most recent turn (an agent framework's "pop the last item": an undo or an edited
    message) and return it; None when the session has no turn. The turn leaves the window and the turn
    index; memories already extracted from it stay (their history names the event: forget them to undo)."""
    key = _key(tenant_id, user_id, session_id)
    row = db.execute(
        text(
            "DELETE FROM events WHERE tenant_id = :t AND event_id = ("
            "  SELECT event_id FROM events WHERE tenant_id = :t AND user_id = :u AND session_id = :s "
            "  AND type = 'turn' ORDER BY event_time DESC, event_id DESC LIMIT 1 FOR UPDATE) "
            "RETURNING event_id, role, content, event_time, source_turn_id, metadata"
        ),
        key,
    ).first()
    if row is None:
        return None
    db.execute(
        text(
            "UPDATE sessions SET turn_count = greatest(turn_count - 1, 0), updated_at = now() "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
        ),
        key,
    )
    refresh_counters(db, tenant_id, user_id, session_id)
    return WindowTurn(*row)


def clear_session(db: Session, tenant_id: str, user_id: str, session_id: str) -> int:
    """Delete the session's events and its state (summary, counters): the conversation starts again under
    the same id. Memories and episodes already made from it stay. Returns how many events were deleted."""
    key = _key(tenant_id, user_id, session_id)
    deleted = db.execute(
        text("DELETE FROM events WHERE tenant_id = :t AND user_id = :u AND session_id = :s RETURNING 1"), key
    ).all()
    db.execute(text("DELETE FROM sessions WHERE tenant_id = :t AND user_id = :u AND session_id = :s"), key)
    return len(deleted)
