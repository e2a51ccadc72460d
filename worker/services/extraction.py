"""Extraction of one session window: pending turns -> gate -> rules -> (one LLM call) -> candidates.

`plan_window` is pure (gate + rules + which turns need the LLM); `load_window` and `apply_outcome` do the
I/O in two short transactions, so no transaction stays open during the LLM call. `defer_llm` turns a plan
into one that applies its rules now and leaves the LLM-needing turns `llm_pending` for a later window (see
`triggers.llm_due` for when).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert
from sqlmodel import Session

from core.extraction.candidates import Candidate, Turn
from core.extraction.gate import GateDecision, gate_window
from core.extraction.merge import merge_candidates
from core.extraction.rules import dedupe
from shared.db.models import CandidateRow, LlmUsage

WINDOW_LIMIT = 200  # turns per extraction run; a longer backlog is processed in several runs, in order
EXISTING_MEMORY_TOKENS = 300  # budget for "what we already know" in the extraction prompt


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

    def turn(self) -> Turn:
        return Turn(
            event_id=self.event_id, role=self.role, content=self.content, source_turn_id=self.source_turn_id
        )


@dataclass
class WindowPlan:
    """What to do with one window, decided without I/O."""

    rule_candidates: list[Candidate]  # of the window's new turns: stored by this run
    llm_turns: list[Turn]  # kept turns to send to the LLM (empty: no call)
    needs_llm_ids: set[str]  # events whose extraction is complete only after the LLM saw them
    skipped_ids: set[str]
    done_ids: set[str]  # fully handled by rules
    gate_reasons: dict[str, str] = field(default_factory=dict)
    # rule candidates of the `llm_pending` turns, stored by an earlier run: shown to the LLM, never stored again
    earlier_candidates: list[Candidate] = field(default_factory=list)
    owed_tokens: int = 0  # estimated tokens of the turns in needs_llm_ids
    deferred: bool = False  # the LLM call was left to a later window (see defer_llm)

    @property
    def prompt_candidates(self) -> list[Candidate]:
        """The rule candidates the LLM is shown: those of every kept turn of the window."""
        return [*self.earlier_candidates, *self.rule_candidates]


def plan_window(events: Sequence[PendingEvent], *, llm_available: bool) -> WindowPlan:
    """Gate every turn, take the rule candidates of the new ones, and pick the turns the LLM must see.

    The gate runs the rule extractor on each turn it does not skip and hands over its candidates, so the
    rules run once per turn. Events already `llm_pending` had their rule pass before: they go to the LLM only
    (their candidates are shown to it, not stored twice). Skipped turns never reach the LLM.
    """
    from shared.tokens import estimate_tokens

    turns = [e.turn() for e in events if e.type == "turn"]
    results = gate_window(turns)
    by_id = {e.event_id: e for e in events}
    skipped: set[str] = {e.event_id for e in events if e.type != "turn"}
    kept: list[Turn] = []
    needs_llm: set[str] = set()
    done: set[str] = set()
    reasons: dict[str, str] = {}
    fresh: list[Candidate] = []
    earlier: list[Candidate] = []
    owed_tokens = 0
    for turn, result in zip(turns, results, strict=True):
        reasons[turn.event_id] = result.reason
        if result.decision == GateDecision.SKIP:
            skipped.add(turn.event_id)
            continue
        kept.append(turn)
        was_pending = by_id[turn.event_id].status == "llm_pending"
        (earlier if was_pending else fresh).extend(result.candidates)
        if result.decision == GateDecision.NEEDS_LLM or was_pending:
            needs_llm.add(turn.event_id)
            owed_tokens += estimate_tokens(turn.content)
        else:
            done.add(turn.event_id)
    llm_turns = kept if (llm_available and needs_llm) else []
    return WindowPlan(
        dedupe(fresh),
        llm_turns,
        needs_llm,
        skipped,
        done,
        reasons,
        earlier_candidates=dedupe(earlier),
        owed_tokens=owed_tokens,
    )


def oldest_owed_at(events: Sequence[PendingEvent], plan: WindowPlan) -> datetime | None:
    """When the longest-waiting turn the LLM owes was received (None when unknown or none is owed)."""
    times = [e.received_at for e in events if e.event_id in plan.needs_llm_ids and e.received_at is not None]
    return min(times, default=None)


def last_received_at(events: Sequence[PendingEvent]) -> datetime | None:
    """When the newest event of the window was received (the window holds the session's newest events)."""
    return max((e.received_at for e in events if e.received_at is not None), default=None)


def defer_llm(plan: WindowPlan) -> WindowPlan:
    """The same window with its LLM call left to a later one: rules apply now, LLM-needing turns stay
    `llm_pending` (apply_outcome with llm_ok=False), and the next window sends them with its own."""
    return dataclasses.replace(plan, llm_turns=[], deferred=True)


def load_window(
    db: Session,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    include_llm_pending: bool,
    limit: int = WINDOW_LIMIT,
) -> list[PendingEvent]:
    """The session's unprocessed events in event-time order (ties by receipt, then id)."""
    statuses = ("pending", "llm_pending") if include_llm_pending else ("pending",)
    rows = db.execute(
        text(
            "SELECT event_id, type, role, content, source_turn_id, event_time, status, agent_id, received_at "
            "FROM events "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND status = ANY(:st) "
            "ORDER BY event_time, received_at, event_id LIMIT :lim"
        ),
        {"t": tenant_id, "u": user_id, "s": session_id, "st": list(statuses), "lim": limit},
    ).all()
    return [PendingEvent(*row) for row in rows]


def existing_memories(
    db: Session, tenant_id: str, user_id: str, *, budget_tokens: int = EXISTING_MEMORY_TOKENS
) -> list[str]:
    """What we already know about the user, newest first, within a token budget (for the LLM prompt)."""
    from shared.tokens import estimate_tokens

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


def tokens_used_today(db: Session, tenant_id: str, *, day: str) -> int:
    value = db.execute(
        text(
            "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM llm_usage "
            "WHERE tenant_id = :t AND day = :d"
        ),
        {"t": tenant_id, "d": day},
    ).scalar()
    return int(value or 0)


def tenant_budget(db: Session, tenant_id: str, *, default: int) -> int:
    value = db.execute(
        text("SELECT settings->>'daily_token_budget' FROM tenants WHERE id = :t"), {"t": tenant_id}
    ).scalar()
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def record_usage(
    db: Session,
    tenant_id: str,
    *,
    day: str,
    stage: str,
    calls: int,
    prompt_tokens: int,
    completion_tokens: int,
) -> None:
    if not calls:
        return
    table = LlmUsage.__table__  # type: ignore[attr-defined]
    stmt = insert(table).values(
        tenant_id=tenant_id,
        day=day,
        stage=stage,
        calls=calls,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["tenant_id", "day", "stage"],
        set_={
            "calls": table.c.calls + stmt.excluded.calls,
            "prompt_tokens": table.c.prompt_tokens + stmt.excluded.prompt_tokens,
            "completion_tokens": table.c.completion_tokens + stmt.excluded.completion_tokens,
        },
    )
    db.execute(stmt)


def final_candidates(plan: WindowPlan, llm_candidates: list[Candidate] | None) -> list[Candidate]:
    """The candidates this run stores: the new turns' rule candidates, merged with the LLM's when it answered
    (a MUST rule candidate is never dropped). An LLM candidate repeating a rule candidate an earlier run
    stored (of an `llm_pending` turn) folds into it and is not stored again."""
    if llm_candidates is None:
        return list(plan.rule_candidates)
    earlier = plan.earlier_candidates
    return merge_candidates([*earlier, *plan.rule_candidates], llm_candidates)[len(earlier) :]


def apply_outcome(
    db: Session,
    *,
    tenant_id: str,
    user_id: str,
    session_id: str,
    events: Sequence[PendingEvent],
    plan: WindowPlan,
    candidates: Sequence[Candidate],
    llm_ok: bool,
    now: datetime,
) -> dict[str, int]:
    """Store candidates and move each event to its final status, in one transaction (set-based)."""
    times = {e.event_id: e.event_time for e in events}
    agent = next((e.agent_id for e in events if e.agent_id), None)
    rows: list[dict[str, Any]] = []
    for c in candidates:
        source_times = [times[i] for i in c.source_event_ids if i in times]
        rows.append(
            {
                "tenant_id": tenant_id,
                "user_id": user_id,
                "agent_id": agent,
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
    status_of: dict[str, str] = {}
    for e in events:
        if e.event_id in plan.skipped_ids:
            status_of[e.event_id] = "skipped"
        elif e.event_id in plan.needs_llm_ids:
            status_of[e.event_id] = "extracted" if llm_ok else "llm_pending"
        else:
            status_of[e.event_id] = "extracted"
    for status in set(status_of.values()):
        ids = [i for i, s in status_of.items() if s == status]
        db.execute(
            text(
                "UPDATE events SET status = :st, processed_at = :now, attempts = attempts + 1 "
                "WHERE tenant_id = :t AND event_id = ANY(:ids)"
            ),
            {"st": status, "now": now, "t": tenant_id, "ids": ids},
        )
    refresh_session_counters(db, tenant_id, user_id, session_id)
    return {
        "turns": len(events),
        "candidates": len(rows),
        "skipped": sum(s == "skipped" for s in status_of.values()),
        "llm_pending": sum(s == "llm_pending" for s in status_of.values()),
    }


def refresh_session_counters(db: Session, tenant_id: str, user_id: str, session_id: str) -> None:
    db.execute(
        text(
            "UPDATE sessions SET (pending_count, pending_tokens) = ("
            "  SELECT count(*), coalesce(sum(token_count), 0) FROM events "
            "  WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND status = 'pending' AND type = 'turn'"
            "), updated_at = now() WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
        ),
        {"t": tenant_id, "u": user_id, "s": session_id},
    )


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


def keyword_contexts(events: Sequence[PendingEvent], *, before: str) -> dict[str, str]:
    """Each turn's keyword document: the previous turn of the session and the turn itself (pure).

    An answer rarely repeats its question's words ("What did you do?" / "Went hiking"): indexing the pair
    lets the turn that holds the fact be found by the words of the turn that asked for it."""
    out: dict[str, str] = {}
    previous = before
    for e in events:
        if e.type != "turn":
            continue
        out[e.event_id] = f"{previous}\n{e.content}" if previous else e.content
        previous = e.content
    return out


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
    from core import keywords
    from shared.db.vectors import vector_literal

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
