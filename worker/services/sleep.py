"""Sleep-time services: close idle sessions into episodes, rewrite working memory, sweep stuck work."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlmodel import Session

from core.episodes import EpisodeText, deterministic_episode, working_memory_document
from shared.db.vectors import vector_literal
from store import sessions
from store import working_memory as wm_store
from store.candidates import session_memories
from store.embeddings import Embedder
from store.episodes import recent_episodes, upsert_episode
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
    state = sessions.lock_for_closing(db, tenant_id, user_id, session_id)
    if state is None:
        return {"episodes": 0}
    turns = sessions.session_turns(db, tenant_id, user_id, session_id)
    memories = session_memories(db, tenant_id, user_id, session_id)
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
                    "content": f"Session summary so far:\n{state.summary or '(none)'}\n\nTurns:\n{transcript}",
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
        episode = deterministic_episode(turns, summary=state.summary or "", memories=memories)
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
    sessions.mark_closed(db, tenant_id, user_id, session_id, now=now)
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
    items = wm_store.active_items(db, tenant_id, user_id)
    episodes = recent_episodes(db, tenant_id, user_id)
    deterministic = working_memory_document(items, episodes)
    source_hash = hashlib.sha256(deterministic.encode("utf-8")).hexdigest()
    current = wm_store.lock_document(db, tenant_id, user_id, agent_id)
    if current is not None and (current.source_hash == source_hash or current.content == deterministic):
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
        wm_store.archive_document(db, tenant_id, user_id, agent_id, current, now=now)
    wm_store.write_document(
        db, tenant_id, user_id, agent_id, content=document, mode=mode, source_hash=source_hash, now=now
    )
    return True, tokens
