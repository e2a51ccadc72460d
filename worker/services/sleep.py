"""Sleep-time services: close idle sessions into episodes, rewrite working memory, sweep stuck work."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import text
from sqlmodel import Session

from core import keywords
from core.episodes import EpisodeText, WMItem, deterministic_episode, working_memory_document
from core.extraction.candidates import Turn
from shared.db.vectors import vector_literal
from store.dead_letters import record_dead_letter
from store.embeddings import Embedder
from worker.llm.extractor import LLMExtractor

EPISODE_PROMPT = (
    "Summarise one finished session between a user and an assistant as an episode for long-term memory. "
    'Reply with JSON only: {"what_happened": str, "outcome": str, "lesson": str}, each at most two sentences, '
    "in the language of the conversation; empty strings when there is no clear outcome or lesson."
)
MAX_EPISODE_TURNS = 60


class _EpisodeAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    what_happened: str = Field(min_length=1, max_length=2000)
    outcome: str = Field(default="", max_length=2000)
    lesson: str = Field(default="", max_length=2000)


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


def close_session(
    db: Session,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    embedder: Embedder,
    llm: LLMExtractor | None,
    now: datetime,
) -> dict[str, Any]:
    """Write (or rewrite) the session's episode and mark the session closed. Idempotent per session."""
    params = {"t": tenant_id, "u": user_id, "s": session_id}
    state = db.execute(
        text(
            "SELECT summary, agent_id, first_event_at, last_event_at FROM sessions WHERE "
            "tenant_id = :t AND user_id = :u AND session_id = :s FOR UPDATE"
        ),
        params,
    ).first()
    if state is None:
        return {"episodes": 0}
    rows = db.execute(
        text(
            "SELECT event_id, role, content, source_turn_id FROM events WHERE tenant_id = :t AND user_id = :u "
            "AND session_id = :s AND type = 'turn' AND status <> 'skipped' ORDER BY event_time, event_id"
        ),
        params,
    ).all()
    turns = [Turn(event_id=r[0], role=r[1], content=r[2], source_turn_id=r[3]) for r in rows]
    memories = (
        db.execute(
            text(
                "SELECT DISTINCT content FROM candidates WHERE tenant_id = :t AND user_id = :u AND session_id = :s "
                "AND op = 'remember' LIMIT 5"
            ),
            params,
        )
        .scalars()
        .all()
    )
    tokens = 0
    mode = "deterministic"
    episode: EpisodeText | None = None
    if llm is not None and turns:
        shown = turns[-MAX_EPISODE_TURNS:]
        transcript = "\n".join(f"{t.role}: {t.content[:800]}" for t in shown)
        content, usage, error = llm.complete_json(
            [
                {"role": "system", "content": EPISODE_PROMPT},
                {
                    "role": "user",
                    "content": f"Session summary so far:\n{state[0] or '(none)'}\n\nTurns:\n{transcript}",
                },
            ]
        )
        tokens = usage.prompt_tokens + usage.completion_tokens
        if content and not error:
            try:
                a = _EpisodeAnswer.model_validate_json(content)
                episode = EpisodeText(a.what_happened.strip(), a.outcome.strip(), a.lesson.strip())
                mode = "llm"
            except ValidationError:
                episode = None
    if episode is None:
        episode = deterministic_episode(turns, summary=state[0] or "", memories=memories)
    if turns:
        vec = vector_literal(embedder.embed([episode.as_text()])[0])
        db.execute(
            text(
                "INSERT INTO episodes (tenant_id, user_id, agent_id, session_id, started_at, ended_at, what_happened, "
                "outcome, lesson, source_event_ids, source_turn_ids, mode, embedding, search_tokens, created_at) "
                "VALUES (:t, :u, :a, :s, :st, :en, :w, :o, :l, :se, :tt, :m, CAST(:v AS vector), "
                "to_tsvector('simple', :doc), :now) ON CONFLICT (tenant_id, user_id, session_id) DO UPDATE SET "
                "ended_at = excluded.ended_at, what_happened = excluded.what_happened, outcome = excluded.outcome, "
                "lesson = excluded.lesson, source_event_ids = excluded.source_event_ids, "
                "source_turn_ids = excluded.source_turn_ids, mode = excluded.mode, embedding = excluded.embedding, "
                "search_tokens = excluded.search_tokens"
            ),
            {
                **params,
                "a": state[1],
                "st": state[2],
                "en": state[3],
                "w": episode.what_happened,
                "o": episode.outcome,
                "l": episode.lesson,
                "se": [t.event_id for t in turns],
                "tt": [t.source_turn_id for t in turns if t.source_turn_id],
                "m": mode,
                "v": vec,
                "doc": keywords.document(episode.as_text()),
                "now": now,
            },
        )
    db.execute(
        text(
            "UPDATE sessions SET status = 'closed', updated_at = :now WHERE tenant_id = :t AND "
            "user_id = :u AND session_id = :s"
        ),
        {**params, "now": now},
    )
    return {"episodes": 1 if turns else 0, "tokens": tokens, "mode": mode}


WORKING_MEMORY_PROMPT = (
    "Rewrite the working-memory document an assistant keeps about one user and their project: where things "
    "stand, what was decided, what to avoid. Use exactly these markdown sections, in this order: "
    "## Constraints, ## Decisions, ## Current progress, ## Lessons; short bullet points; drop anything stale "
    "or superseded; keep names, versions and dates; write '- (none)' for an empty section. Reply with the "
    "document only."
)
_WM_SECTIONS = ("## Constraints", "## Decisions", "## Current progress", "## Lessons")


def rewrite_working_memory(
    db: Session,
    tenant_id: str,
    user_id: str,
    *,
    now: datetime,
    agent_id: str = "",
    llm: LLMExtractor | None = None,
) -> tuple[bool, int]:
    """Rebuild the user's working-memory document as a whole (never appended to); the previous version goes
    to history. With an LLM the document is written by it (validated: the four sections, in order), else
    assembled deterministically. Nothing is rewritten, and no LLM is called, when the inputs did not change.
    Returns (changed, LLM tokens)."""
    items = [
        WMItem(*r)
        for r in db.execute(
            text(
                "SELECT kind, category, content FROM memories WHERE tenant_id = :t AND user_id = :u AND "
                "status = 'active' ORDER BY importance DESC, last_confirmed_at DESC LIMIT 200"
            ),
            {"t": tenant_id, "u": user_id},
        ).all()
    ]
    episodes = [
        EpisodeText(*r)
        for r in db.execute(
            text(
                "SELECT what_happened, outcome, lesson FROM episodes WHERE tenant_id = :t AND user_id = :u "
                "ORDER BY ended_at DESC NULLS LAST LIMIT 10"
            ),
            {"t": tenant_id, "u": user_id},
        ).all()
    ]
    deterministic = working_memory_document(items, episodes)
    source_hash = hashlib.sha256(deterministic.encode("utf-8")).hexdigest()
    current = db.execute(
        text(
            "SELECT content, version, source_hash FROM working_memory WHERE tenant_id = :t AND user_id = :u "
            "AND agent_id = :a FOR UPDATE"
        ),
        {"t": tenant_id, "u": user_id, "a": agent_id},
    ).first()
    if current is not None and (current[2] == source_hash or current[0] == deterministic):
        return False, 0
    document, mode, tokens = deterministic, "deterministic", 0
    if llm is not None:
        content, usage, error = llm.complete_text(
            [
                {"role": "system", "content": WORKING_MEMORY_PROMPT},
                {"role": "user", "content": "Current memories and recent episodes:\n\n" + deterministic},
            ]
        )
        tokens = usage.prompt_tokens + usage.completion_tokens
        positions = [content.find(h) for h in _WM_SECTIONS] if content and not error else []
        if positions and all(p >= 0 for p in positions) and positions == sorted(positions):
            document, mode = content.strip(), "llm"  # type: ignore[union-attr]
    if current is not None:
        db.execute(
            text(
                "INSERT INTO working_memory_history (tenant_id, user_id, agent_id, version, content, "
                "replaced_at) VALUES (:t, :u, :a, :v, :c, :now)"
            ),
            {"t": tenant_id, "u": user_id, "a": agent_id, "v": current[1], "c": current[0], "now": now},
        )
    db.execute(
        text(
            "INSERT INTO working_memory (tenant_id, user_id, agent_id, content, version, mode, source_hash, "
            "updated_at) VALUES (:t, :u, :a, :c, 1, :m, :h, :now) ON CONFLICT (tenant_id, user_id, agent_id) "
            "DO UPDATE SET content = excluded.content, version = working_memory.version + 1, "
            "mode = excluded.mode, source_hash = excluded.source_hash, updated_at = excluded.updated_at"
        ),
        {"t": tenant_id, "u": user_id, "a": agent_id, "c": document, "m": mode, "h": source_hash, "now": now},
    )
    return True, tokens


def sweep(
    db: Session, *, now: datetime, stale_after_s: float, max_attempts: int, llm_available: bool
) -> tuple[dict[str, int], list[tuple[str, str, str, str]], list[tuple[str, str]]]:
    """Find stuck work. Returns counts, the sessions to re-extract (tenant, user, session, reason) and the users
    whose candidates wait for reconciliation. Events past `max_attempts` go to dead letters."""
    cutoff = now - timedelta(seconds=stale_after_s)
    poisoned = db.execute(
        text(
            "UPDATE events SET status = 'failed', processed_at = :now WHERE status = 'pending' AND "
            "received_at < :cutoff AND attempts >= :max RETURNING tenant_id, event_id, user_id, session_id, role, "
            "event_time"
        ),
        {"now": now, "cutoff": cutoff, "max": max_attempts},
    ).all()
    for r in poisoned:
        record_dead_letter(
            db,
            task_name="memory.extract_session",
            now=now,
            tenant_id=r[0],
            event_id=r[1],
            payload={
                "event_id": r[1],
                "user_id": r[2],
                "session_id": r[3],
                "role": r[4],
                "event_time": r[5].isoformat(),
            },
            reason=f"still pending after {max_attempts} sweeps; extraction keeps failing",
        )
    stale = db.execute(
        text(
            "WITH s AS (UPDATE events SET attempts = attempts + 1 WHERE status = 'pending' AND received_at < :cutoff "
            "RETURNING tenant_id, user_id, session_id) SELECT DISTINCT tenant_id, user_id, session_id FROM s"
        ),
        {"cutoff": cutoff},
    ).all()
    sessions = [(r[0], r[1], r[2], "sweep") for r in stale]
    if llm_available:
        retry = db.execute(
            text(
                "SELECT DISTINCT tenant_id, user_id, session_id FROM events WHERE status = 'llm_pending' "
                "LIMIT 200"
            )
        ).all()
        sessions += [(r[0], r[1], r[2], "llm_retry") for r in retry]
    users = db.execute(
        text(
            "SELECT DISTINCT tenant_id, user_id FROM candidates WHERE status = 'new' AND created_at < :cutoff"
        ),
        {"cutoff": now - timedelta(seconds=min(stale_after_s, 300))},
    ).all()
    counts = {
        "dead_lettered": len(poisoned),
        "sessions_requeued": len(sessions),
        "users_requeued": len(users),
    }
    return counts, sessions, [(u[0], u[1]) for u in users]
