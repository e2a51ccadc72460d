"""Working memory: one document per user (and agent) saying where things stand, what was decided, what to
avoid; rewritten as a whole from the active memories and recent episodes, never appended to."""

from __future__ import annotations

import hashlib
from datetime import datetime

from sqlmodel import Session

from core.episodes import working_memory_document
from store import working_memory as wm_store
from store.episodes import recent_episodes
from worker.llm import LLMClient

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
    llm: LLMClient | None = None,
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
        tokens = usage.tokens
        positions = [content.find(h) for h in _WM_SECTIONS] if content and not error else []
        if positions and all(p >= 0 for p in positions) and positions == sorted(positions):
            document, mode = content.strip(), "llm"  # type: ignore[union-attr]
    if current is not None:
        wm_store.archive_document(db, tenant_id, user_id, agent_id, current, now=now)
    wm_store.write_document(
        db, tenant_id, user_id, agent_id, content=document, mode=mode, source_hash=source_hash, now=now
    )
    return True, tokens
