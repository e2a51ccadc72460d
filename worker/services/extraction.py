"""Extraction of one session: pending turns -> gate -> rules -> (one LLM call) -> candidates.

`extract_session` is the whole run the `memory.extract_session` task makes: an idle timer that fired too
early is re-armed, one run per session at a time (a Redis lock), one window, the summary fold, and the
backlog re-enqueued. A window opens two short transactions, one to read it and one to store its outcome,
so that none stays open during the LLM call; the summary fold is a third. The planning is pure
(`worker.services.window`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import redis
import structlog
from sqlalchemy import Engine
from sqlmodel import Session

from core.extraction.candidates import Candidate
from shared import tasknames
from shared.db.engine import session_scope
from shared.publisher import TaskPublisher
from shared.settings import Settings
from store import sessions
from store.candidates import existing_memories, insert_candidates
from store.embeddings import Embedder
from store.trace import record_task_trace
from store.triggers import (
    DebouncePolicy,
    arm_idle_timer,
    enqueue_extraction,
    idle_remaining_s,
    llm_due,
    timer_key,
)
from store.usage import record_usage, within_budget
from store.window import index_turns, load_window, previous_turn_text, set_llm_states, set_statuses
from worker import metrics
from worker.llm import CircuitBreaker, LLMClient, failure_reason
from worker.services import llm_stage
from worker.services.llm_extraction import LLMResult, extract_candidates
from worker.services.summary import fold_summary
from worker.services.window import (
    LLMOutcome,
    LLMRetryPolicy,
    PendingEvent,
    Settled,
    WindowPlan,
    defer_llm,
    final_candidates,
    gate_summary,
    keyword_contexts,
    last_received_at,
    oldest_owed_at,
    plan_window,
    settle_llm,
    turn_trace,
)

log = structlog.get_logger("worker.extract")

WINDOW_LIMIT = 200  # turns per extraction run; a longer backlog is processed in several runs, in order
EXISTING_MEMORY_TOKENS = 300  # budget for "what we already know" in the extraction prompt


def extract_session(
    engine: Engine,
    publisher: TaskPublisher,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    reason: str,
    now: datetime,
    settings: Settings,
    llm: LLMClient | None,
    embedder: Embedder,
    breaker: CircuitBreaker | None = None,
    summary_breaker: CircuitBreaker | None = None,
    task_id: str | None = None,
) -> dict[str, Any]:
    """Extract the session's next window, unless its idle timer fired early (`deferred`) or another run
    holds the session (`locked`: that run re-checks for pending events when it finishes, so nothing is
    dropped). Returns the run's counts; a backlog left behind is enqueued as a `backlog` run."""
    policy = DebouncePolicy.from_settings(settings)
    if reason == "idle":
        with session_scope(engine, tenant=tenant_id) as db:
            activity = sessions.activity(db, tenant_id, user_id, session_id)
        deferred = _defer_if_not_idle(
            publisher, tenant_id, user_id, session_id, activity=activity, now=now, policy=policy
        )
        if deferred is not None:
            return {"outcome": "deferred", "in_s": round(deferred, 2)}
    lock = publisher.redis.lock(
        f"memory:lock:extract:{tenant_id}:{user_id}:{session_id}", timeout=settings.task_time_limit_s + 30
    )
    if not lock.acquire(blocking=False):
        return {"outcome": "locked"}
    try:
        counts = run_window(
            engine,
            publisher,
            tenant_id,
            user_id,
            session_id,
            reason=reason,
            now=now,
            settings=settings,
            llm=llm,
            embedder=embedder,
            breaker=breaker,
            summary_breaker=summary_breaker,
            task_id=task_id,
        )
    finally:
        try:
            lock.release()
        except redis.exceptions.LockError:
            log.warning("extract.lock_expired")
    if counts.pop("more", 0):
        enqueue_extraction(publisher, tenant_id, user_id, session_id, reason="backlog")
    return counts


def _defer_if_not_idle(
    publisher: TaskPublisher,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    activity: sessions.Activity | None,
    now: datetime,
    policy: DebouncePolicy,
) -> float | None:
    """An idle timer fired: if newer turns arrived meanwhile, re-arm it for the rest of the delay."""
    if activity is None or activity.status == "ended":
        return None
    remaining = idle_remaining_s(activity.last_event_at, now=now, policy=policy)
    if remaining <= 0.25:
        return None
    publisher.redis.set(timer_key(tenant_id, user_id, session_id), b"1", px=int(remaining * 1000))
    enqueue_extraction(publisher, tenant_id, user_id, session_id, reason="idle", countdown_s=remaining)
    return remaining


def run_window(
    engine: Engine,
    publisher: TaskPublisher,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    reason: str,
    now: datetime,
    settings: Settings,
    llm: LLMClient | None,
    embedder: Embedder,
    breaker: CircuitBreaker | None = None,
    summary_breaker: CircuitBreaker | None = None,
    task_id: str | None = None,
) -> dict[str, Any]:
    """Extract one window of the session's pending events and fold its summary. The counts include `more`
    (events still pending after this window).

    The LLM part never ends silently: the answer is parsed, or every turn it owed keeps the reason
    (`settle_llm`) and the fallback is said and counted (stage `extract`); an open `breaker` makes no call at
    all (reason `circuit_open`). The summary fold has its own breaker (`summary_breaker`, stage
    `summarize`). The window's trace (`store.trace.record_task_trace`: its log fields, per turn the gate, the
    rules and the LLM) is stored with its outcome, under `task_id`."""
    policy = DebouncePolicy.from_settings(settings)
    day = now.date().isoformat()
    with session_scope(engine, tenant=tenant_id) as db:
        use_llm = llm is not None and _budget_allows_llm(db, tenant_id, day=day, settings=settings)
        events = load_window(
            db, tenant_id, user_id, session_id, include_llm_pending=use_llm, limit=WINDOW_LIMIT, now=now
        )
        state = sessions.summary_state(db, tenant_id, user_id, session_id)
        summary = (state.summary if state else None) or ""
        existing = (
            existing_memories(db, tenant_id, user_id, budget_tokens=EXISTING_MEMORY_TOKENS) if use_llm else []
        )
    if not events:
        return {"outcome": "empty"}
    plan = plan_window(events, llm_available=use_llm, residual=llm is None)
    if plan.llm_turns and not _llm_due(plan, events, state, reason=reason, now=now, policy=policy):
        plan = defer_llm(plan)
    result = None
    outcome = LLMOutcome(answered=False)  # no call owed now (deferred, or no LLM configured)
    if plan.llm_turns and llm is not None:
        gate = breaker.allow() if breaker is not None else None
        if gate is None or gate.allowed:
            result = _ask_llm(llm, tenant_id, plan, summary=summary, existing=existing, breaker=breaker)
            outcome = _outcome(result)
        else:
            retry_at = datetime.fromtimestamp(gate.retry_at, UTC) if gate.retry_at else None
            outcome = LLMOutcome(answered=False, reason=llm_stage.CIRCUIT_OPEN, retry_at=retry_at)
            metrics.LLM_FAILURES.labels(llm_stage.EXTRACT, llm_stage.CIRCUIT_OPEN).inc()
    elif llm is not None and not use_llm and plan.needs_llm_ids:
        outcome = LLMOutcome(answered=False, reason="budget_exhausted")
    usage = result.usage if result else None
    llm_error = outcome.reason
    llm_candidates = result.candidates if result and result.ok else None
    candidates = final_candidates(plan, llm_candidates)
    settled = settle_llm(
        events,
        plan,
        outcome,
        now=now,
        policy=LLMRetryPolicy(max_attempts=settings.llm_max_attempts, retry_s=settings.llm_retry_s),
    )
    kept = [e.turn() for e in events if e.type == "turn" and e.event_id not in plan.skipped_ids]
    vectors = embedder.embed([t.content for t in kept]) if settings.index_turns and kept else []
    with session_scope(engine, tenant=tenant_id) as db:
        if vectors:
            before = previous_turn_text(db, tenant_id, user_id, session_id, events[0])
            contexts = keyword_contexts(events, before=before)
            index_turns(db, tenant_id, kept, vectors, contexts=contexts)
        counts: dict[str, Any] = apply_outcome(
            db,
            tenant_id=tenant_id,
            user_id=user_id,
            session_id=session_id,
            events=events,
            candidates=candidates,
            settled=settled,
            now=now,
        )
        if usage is not None:
            record_usage(
                db,
                tenant_id,
                day=day,
                stage="extract",
                calls=usage.calls,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
            )
            metrics.LLM_TOKENS.labels(tenant_id, "extract", "in").inc(usage.prompt_tokens)
            metrics.LLM_TOKENS.labels(tenant_id, "extract", "out").inc(usage.completion_tokens)
        if llm_error:
            waiting = counts["llm_pending"]
            llm_stage.fell_back(
                db,
                llm_stage.EXTRACT,
                tenant_id,
                reason=llm_error,
                action=llm_stage.DEFERRED if waiting else llm_stage.DETERMINISTIC,
                now=now,
                session_id=session_id,
                turns_waiting=waiting,
                detail="rule candidates kept; turns llm_pending" if waiting else "rule candidates final",
            )
        more = sessions.count_pending(db, tenant_id, user_id, session_id)
        record_task_trace(
            db,
            tenant_id=tenant_id,
            user_id=user_id,
            session_id=session_id,
            stage="extract",
            task_name=tasknames.EXTRACT_SESSION,
            task_id=task_id,
            now=now,
            event_ids=[e.event_id for e in events],
            summary={
                "outcome": "ok" if llm_error is None else "rules_only",
                "reason": reason,
                **counts,
                "llm_calls": usage.calls if usage else 0,
                "prompt_tokens": usage.prompt_tokens if usage else 0,
                "completion_tokens": usage.completion_tokens if usage else 0,
                **gate_summary(plan),
                **({"llm_deferred": len(plan.needs_llm_ids)} if plan.deferred else {}),
                **({"llm_error": llm_error} if llm_error else {}),
                **({"llm_given_up": settled.given_up} if settled.given_up else {}),
                "more": more,
            },
            turns=turn_trace(events, plan, settled, outcome, called=result is not None),
        )
    for c in candidates:
        metrics.CANDIDATES.labels(c.origin).inc()
    if settled.given_up and llm_error:
        metrics.LLM_TURNS_GIVEN_UP.labels(llm_error).inc(settled.given_up)
        log.warning("llm.turns_given_up", turns=settled.given_up, reason=llm_error, detail="final with rules")
    if settled.silent:
        metrics.LLM_SILENT_LOSSES.inc(settled.silent)
        log.error("llm.silent_loss", turns=settled.silent)
    if candidates:
        publisher.publish(tasknames.RECONCILE_USER, [tenant_id, user_id])
    if plan.deferred:
        _keep_idle_timer(
            publisher,
            tenant_id,
            user_id,
            session_id,
            last_received_at=last_received_at(events),
            now=now,
            policy=policy,
        )
    with session_scope(engine, tenant=tenant_id) as db:
        fold_tokens = fold_summary(
            db,
            tenant_id,
            user_id,
            session_id,
            llm=llm if use_llm else None,
            day=day,
            now=now,
            breaker=summary_breaker,
        )
    counts.update(
        outcome="ok" if llm_error is None else "rules_only",
        llm_calls=usage.calls if usage else 0,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        summary_tokens=fold_tokens,
        more=more,
    )
    counts.update(gate_summary(plan))
    if plan.deferred:
        counts["llm_deferred"] = len(plan.needs_llm_ids)
    if llm_error:
        counts["llm_error"] = llm_error
    if settled.given_up:
        counts["llm_given_up"] = settled.given_up
    return counts


def _outcome(result: LLMResult) -> LLMOutcome:
    if result.ok:
        return LLMOutcome(answered=True)
    return LLMOutcome(
        answered=False, reason=failure_reason(result.error or "client_error"), called=result.usage.calls > 0
    )


def _llm_due(
    plan: WindowPlan,
    events: Sequence[PendingEvent],
    state: sessions.SummaryState | None,
    *,
    reason: str,
    now: datetime,
    policy: DebouncePolicy,
) -> bool:
    """Whether this window makes the LLM call, or leaves it to a later one (see `triggers.llm_due`)."""
    return llm_due(
        reason=reason,
        session_ended=state is None or state.status != "open" or any(e.type == "session_end" for e in events),
        owed_turns=len(plan.needs_llm_ids),
        owed_tokens=plan.owed_tokens,
        oldest_owed_at=oldest_owed_at(events, plan),
        last_received_at=last_received_at(events),
        now=now,
        policy=policy,
    )


def _ask_llm(
    llm: LLMClient,
    tenant_id: str,
    plan: WindowPlan,
    *,
    summary: str,
    existing: Sequence[str],
    breaker: CircuitBreaker | None,
) -> LLMResult:
    """The window's one LLM extraction call, counted and reported to the breaker; a failure is logged and
    leaves the rules' result."""
    result = extract_candidates(
        llm,
        turns=plan.llm_turns,
        summary=summary,
        existing_memories=existing,
        rule_candidates=plan.prompt_candidates,
    )
    metrics.LLM_CALLS.labels(tenant_id, "extract", "ok" if result.ok else "error").inc(result.usage.calls)
    if result.ok:
        if breaker is not None:
            breaker.success()
        return result
    reason = failure_reason(result.error or "client_error")
    metrics.LLM_FAILURES.labels("extract", reason).inc()
    log.warning(
        "llm.extract_failed",
        reason=reason,
        error=result.error,
        calls=result.usage.calls,
        detail="rule candidates kept; turns llm_pending with the reason",
    )
    if breaker is not None and breaker.failure() is not None:
        metrics.LLM_BREAKER_OPENED.labels("extract").inc()
    return result


def _budget_allows_llm(db: Session, tenant_id: str, *, day: str, settings: Settings) -> bool:
    """False once the tenant's daily token budget is spent: the window then runs rules-only."""
    allowed, budget = within_budget(db, tenant_id, day=day, default_budget=settings.daily_token_budget)
    if not allowed:
        metrics.LLM_BUDGET_EXHAUSTED.labels(tenant_id).inc()
        log.warning("llm.budget_exhausted", budget=budget, detail="rules-only until tomorrow (UTC)")
    return allowed


def _keep_idle_timer(
    publisher: TaskPublisher,
    tenant_id: str,
    user_id: str,
    session_id: str,
    *,
    last_received_at: datetime | None,
    now: datetime,
    policy: DebouncePolicy,
) -> None:
    """A window left turns `llm_pending`: make sure the session's idle timer is armed, so they are sent once
    the session goes quiet even when no later window comes (the sweeper's `llm_retry` is the backstop)."""
    delay = max(idle_remaining_s(last_received_at, now=now, policy=policy), 0.5)
    try:
        arm_idle_timer(publisher, tenant_id, user_id, session_id, delay_s=delay)
    except redis.RedisError as exc:
        log.warning("extract.idle_timer_failed", error=type(exc).__name__, detail="the sweeper will retry")


def apply_outcome(
    db: Session,
    *,
    tenant_id: str,
    user_id: str,
    session_id: str,
    events: Sequence[PendingEvent],
    candidates: Sequence[Candidate],
    settled: Settled,
    now: datetime,
) -> dict[str, int]:
    """Store candidates and move each event to its status, with what it keeps of the LLM's outcome, in one
    transaction (set-based)."""
    stored = insert_candidates(
        db,
        candidates,
        tenant_id=tenant_id,
        user_id=user_id,
        session_id=session_id,
        agent_id=next((e.agent_id for e in events if e.agent_id), None),
        event_times={e.event_id: e.event_time for e in events},
        now=now,
    )
    status_of = settled.status_of
    set_statuses(db, tenant_id, status_of, now=now)
    set_llm_states(db, tenant_id, settled.llm_states)
    sessions.refresh_counters(db, tenant_id, user_id, session_id)
    return {
        "turns": len(events),
        "candidates": stored,
        "skipped": sum(s == "skipped" for s in status_of.values()),
        "llm_pending": sum(s == "llm_pending" for s in status_of.values()),
    }
