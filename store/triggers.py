"""Debounced extraction triggers: after events are stored, decide per session whether extraction runs now,
later (one idle timer per session), or not yet. The decision is pure; `after_store` does the I/O.

Two levels of batching: the debounce (turns / tokens / idle) decides when a window's rules run; `llm_due`
decides whether that window also makes the LLM call or leaves its LLM-needing turns `llm_pending` for a
later window (rules applied), so one call covers several small windows. Nothing waits forever: session
end, the idle timer, the sweeper (`sweep`, `llm_retry`) and `llm_max_defer_s` always force the call."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import redis
import structlog

from shared import tasknames
from shared.publisher import TaskPublisher
from shared.settings import Settings
from store.ingest import SessionCounters

log = structlog.get_logger("worker.triggers")

Due = Literal["now", "later", "no"]


# Reasons that make the LLM call whatever the batch holds: nothing later is sure to come for the session.
FORCING_REASONS = frozenset({"session_end", "idle", "sweep", "llm_retry"})


@dataclass(frozen=True)
class DebouncePolicy:
    turns: int = 12
    tokens: int = 1500
    idle_s: float = 20.0
    llm_batch_turns: int = 24
    llm_batch_tokens: int = 3000
    llm_max_defer_s: float = 300.0

    @classmethod
    def from_settings(cls, settings: Settings) -> DebouncePolicy:
        return cls(
            turns=settings.debounce_turns,
            tokens=settings.debounce_tokens,
            idle_s=settings.debounce_idle_s,
            llm_batch_turns=settings.llm_batch_turns,
            llm_batch_tokens=settings.llm_batch_tokens,
            llm_max_defer_s=settings.llm_max_defer_s,
        )


def extraction_due(counters: SessionCounters, *, policy: DebouncePolicy) -> Due:
    """`now` when the window is full (turns or tokens) or the agent ended the session; `later` (after the idle
    delay) when some turns are pending; `no` when nothing is."""
    if counters.status == "ended":
        return "now"
    if counters.pending_count <= 0:
        return "no"
    if counters.pending_count >= policy.turns or counters.pending_tokens >= policy.tokens:
        return "now"
    return "later" if policy.idle_s > 0 else "now"


def llm_due(
    *,
    reason: str,
    session_ended: bool,
    owed_turns: int,
    owed_tokens: int,
    oldest_owed_at: datetime | None,
    last_received_at: datetime | None,
    now: datetime,
    policy: DebouncePolicy,
) -> bool:
    """Whether a window that owes the LLM `owed_turns` turns (`owed_tokens` tokens, the oldest received at
    `oldest_owed_at`) makes the call now. False only for a small batch of a live session (its last event
    received less than the idle delay ago), which a later window, the idle timer or the sweeper will carry.
    Receipt times, not event times: a replayed or imported transcript carries event times from the past."""
    if owed_turns <= 0:
        return False
    if reason in FORCING_REASONS or session_ended:
        return True
    if owed_turns >= policy.llm_batch_turns or owed_tokens >= policy.llm_batch_tokens:
        return True
    if idle_remaining_s(last_received_at, now=now, policy=policy) <= 0:
        return True  # the session is idle already: no later window is coming soon
    waited_s = (now - oldest_owed_at).total_seconds() if oldest_owed_at is not None else 0.0
    return waited_s >= policy.llm_max_defer_s > 0 or policy.llm_max_defer_s == 0


def idle_remaining_s(last_event_at: datetime | None, *, now: datetime, policy: DebouncePolicy) -> float:
    """Seconds until a session has been idle for `policy.idle_s` (0 when it already has)."""
    if last_event_at is None:
        return 0.0
    return max(0.0, policy.idle_s - (now - last_event_at).total_seconds())


def timer_key(tenant_id: str, user_id: str, session_id: str) -> str:
    return f"memory:debounce:{tenant_id}:{user_id}:{session_id}"


def enqueue_extraction(
    publisher: TaskPublisher,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    reason: str,
    countdown_s: float | None = None,
) -> None:
    publisher.publish(
        tasknames.EXTRACT_SESSION, [tenant_id, user_id, session_id, reason], countdown_s=countdown_s
    )


def arm_idle_timer(
    publisher: TaskPublisher, tenant_id: str, user_id: str, session_id: str, *, delay_s: float
) -> bool:
    """Schedule one idle check per session; later events within the delay do not add timers."""
    if not publisher.set_once(timer_key(tenant_id, user_id, session_id), delay_s):
        return False
    enqueue_extraction(publisher, tenant_id, user_id, session_id, reason="idle", countdown_s=delay_s)
    return True


def after_store(
    publisher: TaskPublisher, settings: Settings, tenant_id: str, sessions: list[SessionCounters]
) -> None:
    """Called after events are committed. Never raises: the sweeper re-enqueues whatever is missed, because
    the pending set lives in Postgres, not in these messages. The idle timers of a whole batch are armed in
    one round trip."""
    policy = DebouncePolicy.from_settings(settings)
    due_now: list[SessionCounters] = []
    later: list[SessionCounters] = []
    for counters in sessions:
        due = extraction_due(counters, policy=policy)
        if due == "now":
            due_now.append(counters)
        elif due == "later":
            later.append(counters)
    try:
        for counters in due_now:
            enqueue_extraction(
                publisher,
                tenant_id,
                counters.user_id,
                counters.session_id,
                reason="session_end" if counters.status == "ended" else "threshold",
            )
        armed = publisher.set_many_once(
            [timer_key(tenant_id, c.user_id, c.session_id) for c in later], policy.idle_s
        )
        for counters, first in zip(later, armed, strict=True):
            if first:
                enqueue_extraction(
                    publisher,
                    tenant_id,
                    counters.user_id,
                    counters.session_id,
                    reason="idle",
                    countdown_s=policy.idle_s,
                )
    except redis.RedisError as exc:
        log.warning(
            "trigger.enqueue_failed", tenant_id=tenant_id, sessions=len(sessions), error=type(exc).__name__
        )
