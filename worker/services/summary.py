"""The session window's rolling summary: past `FOLD_AFTER_TURNS` turns, the turns older than the newest
`KEEP_RECENT_TURNS` are folded into it, by the LLM when one may be used, else extractively.

The LLM's part is stage `summarize`, with its own breaker: a failed call, or none behind an open breaker,
folds extractively instead and says so (`worker.services.llm_stage.fell_back`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from sqlmodel import Session

from core.extraction.candidates import Turn
from core.extraction.summary import extractive_summary
from core.prompts.summary import build_summary_messages, parse_summary_answer
from store import sessions
from store.usage import record_usage
from worker.llm import CircuitBreaker, LLMClient, LLMUsage
from worker.services import llm_stage

log = logging.getLogger(__name__)

FOLD_AFTER_TURNS = 40
KEEP_RECENT_TURNS = 20


def fold_summary(
    db: Session,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    llm: LLMClient | None,
    day: str,
    now: datetime,
    breaker: CircuitBreaker | None = None,
) -> int:
    """Fold the session's older turns into its summary (the session row stays locked meanwhile, so two
    folds never interleave). Returns the LLM tokens spent, recorded as stage `summarize` of `day`."""
    state = sessions.lock_fold_state(db, tenant_id, user_id, session_id)
    if state is None or state.turn_count <= FOLD_AFTER_TURNS:
        return 0
    old = sessions.turns_to_fold(
        db, tenant_id, user_id, session_id, through=state.summarized_through, keep_recent=KEEP_RECENT_TURNS
    )
    if not old:
        return 0
    turns = [turn for turn, _ in old]
    new_summary = None
    tokens = 0
    reason = None
    if llm is not None:
        reason = llm_stage.gate(llm_stage.SUMMARIZE, breaker)
    if llm is not None and reason is None:
        new_summary, usage, error = summarize(llm, previous_summary=state.summary, turns=turns)
        tokens = usage.tokens
        record_usage(
            db,
            tenant_id,
            day=day,
            stage="summarize",
            calls=usage.calls,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
        if new_summary:
            llm_stage.succeeded(breaker)
        else:
            reason = llm_stage.failed(llm_stage.SUMMARIZE, breaker, error or "empty_content")
    if not new_summary:
        new_summary = extractive_summary(state.summary, turns)
        if reason is not None:
            llm_stage.fell_back(
                db,
                llm_stage.SUMMARIZE,
                tenant_id,
                reason=reason,
                action=llm_stage.DETERMINISTIC,
                now=now,
                session_id=session_id,
                detail="extractive summary",
            )
    sessions.write_summary(db, tenant_id, user_id, session_id, summary=new_summary, through=old[-1][1])
    return tokens


def summarize(
    llm: LLMClient, *, previous_summary: str, turns: Sequence[Turn]
) -> tuple[str | None, LLMUsage, str | None]:
    """The LLM's rewrite of the whole summary from the previous one and `turns`, its usage, and why it
    failed (None when it did not; a refusal or an empty answer is a failure too)."""
    content, usage, error = llm.complete_text(
        build_summary_messages(previous_summary=previous_summary, turns=turns)
    )
    if error is not None:
        log.warning("llm summary failed: %s (calls=%d)", error, usage.calls)
        return None, usage, error
    summary = parse_summary_answer(content)
    if summary is None:
        log.warning("llm summary failed: empty_content")
        return None, usage, "empty_content"
    return summary, usage, None
