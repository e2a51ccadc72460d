"""Sessions closed into episodes: what happened, its outcome and lesson, searchable like memories.

An episode is written by the LLM when one is configured (validated), else assembled deterministically from
the session's summary, turns and remembered candidates (`core.episodes`). The LLM's part is stage `episode`,
with its own breaker: a failed call, or none behind an open breaker, writes the deterministic episode and
says so (`worker.services.llm_stage`).

Closing a session also rewrites the user's working memory (from that episode and the current memories) in
the same transaction: "where we are" changes when a session ends.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from core.episodes import EpisodeText, deterministic_episode
from core.prompts.episode import build_episode_messages, parse_episode_answer
from shared.db.engine import ALL_TENANTS, session_scope
from shared.db.vectors import vector_literal
from store import sessions
from store.candidates import session_memories
from store.embeddings import Embedder
from store.episodes import upsert_episode
from worker.llm import CircuitBreaker, LLMClient
from worker.services import llm_stage
from worker.services.working_memory import rewrite_working_memory


def close_session(
    db: Session,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    embedder: Embedder,
    llm: LLMClient | None,
    now: datetime,
    breaker: CircuitBreaker | None = None,
    working_memory_breaker: CircuitBreaker | None = None,
) -> dict[str, Any]:
    """Write (or rewrite) the session's episode, rewrite the user's working memory from it and the current
    memories (nothing is rewritten when neither changed), and mark the session closed. Idempotent per
    session."""
    state = sessions.lock_for_closing(db, tenant_id, user_id, session_id)
    if state is None:
        return {"episodes": 0}
    turns = sessions.session_turns(db, tenant_id, user_id, session_id)
    memories = session_memories(db, tenant_id, user_id, session_id)
    tokens = 0
    mode = "deterministic"
    episode: EpisodeText | None = None
    reason = llm_stage.gate(llm_stage.EPISODE, breaker) if llm is not None and turns else None
    if llm is not None and turns and reason is None:
        content, usage, error = llm.complete_json(build_episode_messages(summary=state.summary, turns=turns))
        tokens = usage.tokens
        episode = parse_episode_answer(content) if not error else None
        if episode is not None:
            mode = "llm"
            llm_stage.succeeded(breaker)
        else:
            error = error or "invalid_output: not an episode"
            reason = llm_stage.failed(llm_stage.EPISODE, breaker, error, session_id=session_id)
    if episode is None:
        episode = deterministic_episode(turns, summary=state.summary or "", memories=memories)
        if reason is not None:
            llm_stage.fell_back(
                db,
                llm_stage.EPISODE,
                tenant_id,
                reason=reason,
                action=llm_stage.DETERMINISTIC,
                now=now,
                session_id=session_id,
                detail="deterministic episode",
            )
    if turns:
        upsert_episode(
            db,
            tenant_id,
            user_id,
            session_id,
            session=state,
            episode=episode,
            turns=turns,
            mode=mode,
            vector=vector_literal(embedder.embed([episode.as_text()])[0]),
            now=now,
        )
    # the agent-less document (agent_id ''): the one the context block reads
    wm_changed, wm_tokens = rewrite_working_memory(
        db, tenant_id, user_id, now=now, llm=llm, breaker=working_memory_breaker
    )
    sessions.mark_closed(db, tenant_id, user_id, session_id, now=now)
    return {
        "episodes": 1 if turns else 0,
        "tokens": tokens + wm_tokens,
        "mode": mode,
        "working_memory": int(wm_changed),
    }


def close_idle_sessions(
    engine: Engine,
    *,
    now: datetime,
    idle_s: float,
    settle_s: float,
    embedder: Embedder,
    llm: LLMClient | None,
    breaker: CircuitBreaker | None = None,
    working_memory_breaker: CircuitBreaker | None = None,
) -> dict[str, int]:
    """Close every session that ended (and settled) or went idle into its episode, one transaction per
    session. Returns the sessions closed, the episodes written and the LLM tokens spent."""
    with session_scope(engine, tenant=ALL_TENANTS) as db:
        todo = sessions.sessions_to_close(db, now=now, idle_s=idle_s, settle_s=settle_s)
    totals = {"sessions": 0, "episodes": 0, "tokens": 0, "working_memory": 0}
    for tenant_id, user_id, session_id in todo:
        with session_scope(engine, tenant=tenant_id) as db:
            out = close_session(
                db,
                tenant_id,
                user_id,
                session_id,
                embedder=embedder,
                llm=llm,
                now=now,
                breaker=breaker,
                working_memory_breaker=working_memory_breaker,
            )
        totals["sessions"] += 1
        totals["episodes"] += out.get("episodes", 0)
        totals["tokens"] += out.get("tokens", 0)
        totals["working_memory"] += out.get("working_memory", 0)
    return totals
