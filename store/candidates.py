"""Memory candidates (`candidates`): what extraction proposes, before reconciliation decides on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert
from sqlmodel import Session

from core.extraction.candidates import Candidate
from core.reconcile import PendingCandidate
from shared.db.models import CandidateRow
from shared.tokens import estimate_tokens


def insert_candidates(
    db: Session,
    candidates: Sequence[Candidate],
    *,
    tenant_id: str,
    user_id: str,
    session_id: str,
    agent_id: str | None,
    event_times: Mapping[str, datetime],
    now: datetime,
) -> int:
    """Insert the candidates of one session window (status `new`); each is dated by its newest source event
    in `event_times` (else `now`). Returns how many were inserted."""
    rows: list[dict[str, Any]] = []
    for c in candidates:
        source_times = [event_times[i] for i in c.source_event_ids if i in event_times]
        rows.append(
            {
                "tenant_id": tenant_id,
                "user_id": user_id,
                "agent_id": agent_id,
                "session_id": session_id,
                "op": str(c.op),
                "content": c.content,
                "kind": str(c.kind),
                "category": str(c.category),
                "tier": str(c.tier),
                "slot": c.slot,
                "value": c.value,
                "confidence": float(c.confidence),
                "lang": c.lang,
                "origin": c.origin,
                "rule": c.rule,
                "source_event_ids": list(c.source_event_ids),
                "source_turn_ids": list(c.source_turn_ids),
                "event_time": max(source_times) if source_times else now,
            }
        )
    if rows:
        db.execute(insert(CandidateRow.__table__).values(rows))  # type: ignore[attr-defined]
    return len(rows)


def existing_memories(db: Session, tenant_id: str, user_id: str, *, budget_tokens: int) -> list[str]:
    """What we already know about the user, newest first, within a token budget (for the LLM prompt)."""
    rows = db.execute(
        text(
            "SELECT DISTINCT ON (content) content, id FROM candidates "
            "WHERE tenant_id = :t AND user_id = :u AND op = 'remember' ORDER BY content, id DESC"
        ),
        {"t": tenant_id, "u": user_id},
    ).all()
    out: list[str] = []
    used = 0
    for content, _id in sorted(rows, key=lambda r: -int(r[1])):
        cost = estimate_tokens(content)
        if used + cost > budget_tokens:
            break
        out.append(content)
        used += cost
    return out


def session_memories(db: Session, tenant_id: str, user_id: str, session_id: str) -> list[str]:
    """Up to five distinct contents the session asked to remember (for its episode)."""
    return list(
        db.execute(
            text(
                "SELECT DISTINCT content FROM candidates WHERE tenant_id = :t AND user_id = :u AND session_id = :s "
                "AND op = 'remember' LIMIT 5"
            ),
            {"t": tenant_id, "u": user_id, "s": session_id},
        )
        .scalars()
        .all()
    )


def mark_reconciled(db: Session, candidate_id: int, *, decision: str, memory_id: str | None) -> None:
    """The candidate is decided: `decision` (the op) and the memory it went to, if any."""
    db.execute(
        text("UPDATE candidates SET status = 'reconciled', decision = :d, memory_id = :m WHERE id = :id"),
        {"d": decision, "m": memory_id, "id": candidate_id},
    )


def load_new_candidates(
    db: Session, tenant_id: str, user_id: str, *, limit: int = 200
) -> list[PendingCandidate]:
    """The user's candidates waiting for reconciliation, oldest event first."""
    rows = db.execute(
        text(
            "SELECT id, agent_id, op, content, kind, category, tier, slot, value, confidence, lang, "
            "source_event_ids, source_turn_ids, event_time, origin, rule FROM candidates "
            "WHERE tenant_id = :t AND user_id = :u AND status = 'new' ORDER BY event_time, id LIMIT :n"
        ),
        {"t": tenant_id, "u": user_id, "n": limit},
    )
    return [
        PendingCandidate(
            **{
                **r,
                "source_event_ids": tuple(r["source_event_ids"]),
                "source_turn_ids": tuple(r["source_turn_ids"]),
            }
        )
        for r in rows.mappings().all()
    ]
