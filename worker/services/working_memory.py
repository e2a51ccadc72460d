"""Working memory: one document per user (and agent) saying where things stand, what was decided, what to
avoid; rewritten as a whole from the active memories and recent episodes, never appended to. The LLM's part
is stage `working_memory`, with its own breaker: a failed call, or none behind an open breaker, writes the
deterministic document and says so (`worker.services.llm_stage`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime

from sqlmodel import Session

from core.episodes import working_memory_document
from core.prompts.working_memory import build_working_memory_messages, parse_working_memory_answer
from store import working_memory as wm_store
from store.episodes import recent_episodes
from worker.llm import CircuitBreaker, LLMClient
from worker.services import llm_stage


def rewrite_working_memory(
    db: Session,
    tenant_id: str,
    user_id: str,
    *,
    now: datetime,
    agent_id: str = "",
    llm: LLMClient | None = None,
    breaker: CircuitBreaker | None = None,
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
    reason = llm_stage.gate(llm_stage.WORKING_MEMORY, breaker) if llm is not None else None
    if llm is not None and reason is None:
        content, usage, error = llm.complete_text(build_working_memory_messages(deterministic))
        tokens = usage.tokens
        written = parse_working_memory_answer(content) if not error else None
        if written is not None:
            document, mode = written, "llm"
            llm_stage.succeeded(breaker)
        else:
            error = error or "invalid_output: not the four sections in order"
            reason = llm_stage.failed(llm_stage.WORKING_MEMORY, breaker, error, user_id=user_id)
    if reason is not None:
        llm_stage.fell_back(
            db,
            llm_stage.WORKING_MEMORY,
            tenant_id,
            reason=reason,
            action=llm_stage.DETERMINISTIC,
            now=now,
            user_id=user_id,
            detail="deterministic document",
        )
    if current is not None:
        wm_store.archive_document(db, tenant_id, user_id, agent_id, current, now=now)
    wm_store.write_document(
        db, tenant_id, user_id, agent_id, content=document, mode=mode, source_hash=source_hash, now=now
    )
    return True, tokens


def refresh_if_stale(
    db: Session,
    tenant_id: str,
    user_id: str,
    changed: Iterable[tuple[str, str | None]],
    *,
    now: datetime,
    llm: LLMClient | None = None,
    breaker: CircuitBreaker | None = None,
) -> tuple[bool, int]:
    """Rewrite the user's working memory in the transaction that replaced or forgot memories (`changed`: the
    old rows' content and value) when the document mentions one of them, so the context block never shows
    a slot's old value under "Working memory" beside its new one. Returns (changed, LLM tokens)."""
    if not wm_store.names_any(db, tenant_id, user_id, changed):
        return False, 0
    return rewrite_working_memory(db, tenant_id, user_id, now=now, llm=llm, breaker=breaker)
