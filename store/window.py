"""A session's extraction window in `events`: its pending events read, their statuses after the run, and
the turn index (embedding + keyword tokens) that recall searches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlmodel import Session

from core import keywords
from core.extraction.candidates import Turn
from shared.db.vectors import vector_literal


@dataclass(frozen=True)
class PendingEvent:
    event_id: str
    type: str
    role: str
    content: str
    source_turn_id: str | None
    event_time: datetime
    status: str  # pending | llm_pending
    agent_id: str | None
    received_at: datetime | None = None
    llm_attempts: int = 0  # failed LLM calls this turn was part of

    def turn(self) -> Turn:
        return Turn(
            event_id=self.event_id, role=self.role, content=self.content, source_turn_id=self.source_turn_id
        )


def load_window(
    db: Session,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    include_llm_pending: bool,
    limit: int,
    now: datetime | None = None,
) -> list[PendingEvent]:
    """The session's first `limit` unprocessed events in event-time order (ties by receipt, then id). An
    `llm_pending` event whose `llm_retry_at` is after `now` (a failed LLM call's backoff) is left out: a
    failed turn does not ride along in every later window."""
    statuses = ("pending", "llm_pending") if include_llm_pending else ("pending",)
    rows = db.execute(
        text(
            "SELECT event_id, type, role, content, source_turn_id, event_time, status, agent_id, received_at, "
            "llm_attempts FROM events "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND status = ANY(:st) "
            "AND (status = 'pending' OR llm_retry_at IS NULL "
            "OR llm_retry_at <= coalesce(CAST(:now AS timestamptz), 'infinity')) "
            "ORDER BY event_time, received_at, event_id LIMIT :lim"
        ),
        {"t": tenant_id, "u": user_id, "s": session_id, "st": list(statuses), "lim": limit, "now": now},
    ).all()
    return [PendingEvent(*row) for row in rows]


def previous_turn_text(
    db: Session, tenant_id: str, user_id: str, session_id: str, first: PendingEvent
) -> str:
    """The turn just before `first` in its session (whatever its status), or ""."""
    value = db.execute(
        text(
            "SELECT content FROM events WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND type = 'turn' "
            "AND (event_time, event_id) < (:ts, :id) ORDER BY event_time DESC, event_id DESC LIMIT 1"
        ),
        {"t": tenant_id, "u": user_id, "s": session_id, "ts": first.event_time, "id": first.event_id},
    ).scalar()
    return str(value or "")


def set_statuses(db: Session, tenant_id: str, status_of: Mapping[str, str], *, now: datetime) -> None:
    """Move each event to its status (one UPDATE per distinct status), counting the attempt."""
    for status in set(status_of.values()):
        ids = [i for i, s in status_of.items() if s == status]
        db.execute(
            text(
                "UPDATE events SET status = :st, processed_at = :now, attempts = attempts + 1 "
                "WHERE tenant_id = :t AND event_id = ANY(:ids)"
            ),
            {"st": status, "now": now, "t": tenant_id, "ids": ids},
        )


@dataclass(frozen=True)
class LLMState:
    """What an event keeps of the LLM's last look at it: the failure's category (None: cleared), the failed
    calls it was part of, and when it may be sent again (None: whenever)."""

    event_id: str
    error: str | None
    attempts: int
    retry_at: datetime | None


def set_llm_states(db: Session, tenant_id: str, states: Sequence[LLMState]) -> None:
    """Write each event's LLM state (one statement)."""
    if not states:
        return
    db.execute(
        text(
            "UPDATE events e SET llm_error = v.err, llm_attempts = v.att, llm_retry_at = v.retry "
            "FROM unnest(CAST(:ids AS text[]), CAST(:errs AS text[]), CAST(:atts AS int[]), "
            "CAST(:retries AS timestamptz[])) AS v(id, err, att, retry) "
            "WHERE e.tenant_id = :t AND e.event_id = v.id"
        ),
        {
            "t": tenant_id,
            "ids": [s.event_id for s in states],
            "errs": [s.error for s in states],
            "atts": [min(s.attempts, 32767) for s in states],
            "retries": [s.retry_at for s in states],
        },
    )


def index_turns(
    db: Session,
    tenant_id: str,
    turns: Sequence[Turn],
    vectors: Sequence[Sequence[float]],
    *,
    contexts: dict[str, str] | None = None,
) -> int:
    """Store the embedding (of the turn) and keyword tokens (of the turn with its predecessor, when given)
    of each kept turn: the turn index for recall."""
    if not turns:
        return 0
    db.execute(
        text(
            "UPDATE events e SET embedding = CAST(v.vec AS vector), search_tokens = to_tsvector('simple', v.doc) "
            "FROM unnest(CAST(:ids AS text[]), CAST(:vecs AS text[]), CAST(:docs AS text[])) AS v(id, vec, doc) "
            "WHERE e.tenant_id = :t AND e.event_id = v.id"
        ),
        {
            "t": tenant_id,
            "ids": [t.event_id for t in turns],
            "vecs": [vector_literal(v) for v in vectors],
            "docs": [keywords.document((contexts or {}).get(t.event_id, t.content)) for t in turns],
        },
    )
    return len(turns)
