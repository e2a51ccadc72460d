"""The `memory.extract_session` task: one debounced window of one session, at most one run per session.

Arguments are ids only; the pending set is read from Postgres, so a lost or repeated trigger is harmless:
a repeat finds nothing pending, a lost one is re-sent by the sweeper.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import redis
import structlog
from sqlalchemy import text
from sqlalchemy.exc import InterfaceError, OperationalError

from core.extraction.candidates import Turn
from core.extraction.summary import extractive_summary
from shared import tasknames
from shared.contract import utcnow
from shared.db.engine import session_scope
from store.triggers import (
    DebouncePolicy,
    arm_idle_timer,
    enqueue_extraction,
    idle_remaining_s,
    llm_due,
    timer_key,
)
from worker import metrics, runtime
from worker.app import app
from worker.retry import retry_countdown
from worker.services import extraction as svc

log = structlog.get_logger("worker.extract")

FOLD_AFTER_TURNS = 40
KEEP_RECENT_TURNS = 20


@app.task(name=tasknames.EXTRACT_SESSION, bind=True, max_retries=None, acks_late=True)
def extract_session(
    self: Any, tenant_id: str, user_id: str, session_id: str, reason: str = "threshold"
) -> dict[str, Any]:
    structlog.contextvars.bind_contextvars(
        tenant_id=tenant_id, user_id=user_id, session_id=session_id, reason=reason
    )
    settings = runtime.settings()
    now = utcnow()
    publisher = runtime.publisher()
    try:
        if reason == "idle":
            deferred = _defer_if_not_idle(tenant_id, user_id, session_id, now=now)
            if deferred is not None:
                return {"outcome": "deferred", "in_s": round(deferred, 2)}
        lock = publisher.redis.lock(
            f"memory:lock:extract:{tenant_id}:{user_id}:{session_id}", timeout=settings.task_time_limit_s + 30
        )
        if not lock.acquire(blocking=False):
            # The holder re-checks for pending events when it finishes, so nothing is dropped here.
            return {"outcome": "locked"}
        try:
            counts = _run_window(tenant_id, user_id, session_id, now=now, reason=reason)
        finally:
            try:
                lock.release()
            except redis.exceptions.LockError:
                log.warning("extract.lock_expired")
    except (OperationalError, InterfaceError) as exc:
        raise self.retry(exc=exc, countdown=retry_countdown(self.request.retries, max_s=60)) from None
    if counts.pop("more", 0):
        enqueue_extraction(publisher, tenant_id, user_id, session_id, reason="backlog")
    return counts


def _defer_if_not_idle(tenant_id: str, user_id: str, session_id: str, *, now: datetime) -> float | None:
    """An idle timer fired: if newer turns arrived meanwhile, re-arm it for the rest of the delay."""
    policy = DebouncePolicy.from_settings(runtime.settings())
    with session_scope(runtime.engine(), tenant=tenant_id) as db:
        row = db.execute(
            text(
                "SELECT last_event_at, pending_count, status FROM sessions "
                "WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
            ),
            {"t": tenant_id, "u": user_id, "s": session_id},
        ).first()
    if row is None or row[2] == "ended":
        return None
    remaining = idle_remaining_s(row[0], now=now, policy=policy)
    if remaining <= 0.25:
        return None
    publisher = runtime.publisher()
    publisher.redis.set(timer_key(tenant_id, user_id, session_id), b"1", px=int(remaining * 1000))
    enqueue_extraction(publisher, tenant_id, user_id, session_id, reason="idle", countdown_s=remaining)
    return remaining


def _run_window(
    tenant_id: str, user_id: str, session_id: str, *, now: datetime, reason: str = "threshold"
) -> dict[str, Any]:
    settings = runtime.settings()
    policy = DebouncePolicy.from_settings(settings)
    runtime.check_schema()
    llm = runtime.llm_extractor()
    day = now.date().isoformat()
    with session_scope(runtime.engine(), tenant=tenant_id) as db:
        budget_ok = True
        if llm is not None:
            budget = svc.tenant_budget(db, tenant_id, default=settings.daily_token_budget)
            budget_ok = svc.tokens_used_today(db, tenant_id, day=day) < budget
            if not budget_ok:
                metrics.LLM_BUDGET_EXHAUSTED.labels(tenant_id).inc()
                log.warning("llm.budget_exhausted", budget=budget, detail="rules-only until tomorrow (UTC)")
        use_llm = llm is not None and budget_ok
        events = svc.load_window(db, tenant_id, user_id, session_id, include_llm_pending=use_llm)
        session = db.execute(
            text(
                "SELECT summary, status FROM sessions "
                "WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
            ),
            {"t": tenant_id, "u": user_id, "s": session_id},
        ).first()
        summary = (session[0] if session else None) or ""
        existing = svc.existing_memories(db, tenant_id, user_id) if use_llm else []
    if not events:
        return {"outcome": "empty"}
    plan = svc.plan_window(events, llm_available=use_llm)
    if plan.llm_turns and not llm_due(
        reason=reason,
        session_ended=session is None or session[1] != "open" or any(e.type == "session_end" for e in events),
        owed_turns=len(plan.needs_llm_ids),
        owed_tokens=plan.owed_tokens,
        oldest_owed_at=svc.oldest_owed_at(events, plan),
        last_received_at=svc.last_received_at(events),
        now=now,
        policy=policy,
    ):
        plan = svc.defer_llm(plan)
    llm_candidates = None
    usage = None
    llm_error = None
    if plan.llm_turns and llm is not None:
        result = llm.extract(
            turns=plan.llm_turns,
            summary=summary,
            existing_memories=existing,
            rule_candidates=plan.prompt_candidates,
        )
        usage = result.usage
        metrics.LLM_CALLS.labels(tenant_id, "extract", "ok" if result.ok else "error").inc(result.usage.calls)
        if result.ok:
            llm_candidates = result.candidates
        else:
            llm_error = result.error
            log.warning(
                "llm.extract_failed", error=result.error, detail="rule candidates kept; turns llm_pending"
            )
    candidates = svc.final_candidates(plan, llm_candidates)
    kept = [e.turn() for e in events if e.type == "turn" and e.event_id not in plan.skipped_ids]
    vectors = runtime.embedder().embed([t.content for t in kept]) if settings.index_turns and kept else []
    with session_scope(runtime.engine(), tenant=tenant_id) as db:
        if vectors:
            before = svc.previous_turn_text(db, tenant_id, user_id, session_id, events[0])
            contexts = svc.keyword_contexts(events, before=before)
            svc.index_turns(db, tenant_id, kept, vectors, contexts=contexts)
        counts: dict[str, Any] = svc.apply_outcome(
            db,
            tenant_id=tenant_id,
            user_id=user_id,
            session_id=session_id,
            events=events,
            plan=plan,
            candidates=candidates,
            llm_ok=llm_candidates is not None,
            now=now,
        )
        if usage is not None:
            svc.record_usage(
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
        more = db.execute(
            text(
                "SELECT count(*) FROM events WHERE tenant_id = :t AND user_id = :u AND session_id = :s "
                "AND status = 'pending'"
            ),
            {"t": tenant_id, "u": user_id, "s": session_id},
        ).scalar()
    for c in candidates:
        metrics.CANDIDATES.labels(c.origin).inc()
    if candidates:
        runtime.publisher().publish(tasknames.RECONCILE_USER, [tenant_id, user_id])
    if plan.deferred:
        _keep_idle_timer(
            tenant_id, user_id, session_id, last_received_at=svc.last_received_at(events), now=now
        )
    fold_tokens = _fold_summary(tenant_id, user_id, session_id, use_llm=use_llm, day=day)
    counts.update(
        outcome="ok" if llm_error is None else "rules_only",
        llm_calls=usage.calls if usage else 0,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        summary_tokens=fold_tokens,
        more=int(more or 0),
    )
    if plan.deferred:
        counts["llm_deferred"] = len(plan.needs_llm_ids)
    if llm_error:
        counts["llm_error"] = llm_error
    return counts


def _keep_idle_timer(
    tenant_id: str, user_id: str, session_id: str, *, last_received_at: datetime | None, now: datetime
) -> None:
    """A window left turns `llm_pending`: make sure the session's idle timer is armed, so they are sent once
    the session goes quiet even when no later window comes (the sweeper's `llm_retry` is the backstop)."""
    policy = DebouncePolicy.from_settings(runtime.settings())
    delay = max(idle_remaining_s(last_received_at, now=now, policy=policy), 0.5)
    try:
        arm_idle_timer(runtime.publisher(), tenant_id, user_id, session_id, delay_s=delay)
    except redis.RedisError as exc:
        log.warning("extract.idle_timer_failed", error=type(exc).__name__, detail="the sweeper will retry")


def _fold_summary(tenant_id: str, user_id: str, session_id: str, *, use_llm: bool, day: str) -> int:
    """Past 40 turns, fold the turns older than the last 20 into the rolling summary. Returns LLM tokens."""
    params = {"t": tenant_id, "u": user_id, "s": session_id}
    with session_scope(runtime.engine(), tenant=tenant_id) as db:
        row = db.execute(
            text(
                "SELECT turn_count, summary, summarized_through FROM sessions "
                "WHERE tenant_id = :t AND user_id = :u AND session_id = :s FOR UPDATE"
            ),
            params,
        ).first()
        if row is None or row[0] <= FOLD_AFTER_TURNS:
            return 0
        previous, through = row[1], row[2]
        old = db.execute(
            text(
                "SELECT event_id, role, content, source_turn_id, event_time FROM events "
                "WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND type = 'turn' "
                "AND (CAST(:through AS timestamptz) IS NULL OR event_time > :through) "
                "AND event_time < (SELECT event_time FROM events WHERE tenant_id = :t AND user_id = :u "
                "  AND session_id = :s AND type = 'turn' ORDER BY event_time DESC OFFSET :keep LIMIT 1) "
                "ORDER BY event_time, event_id"
            ),
            {**params, "through": through, "keep": KEEP_RECENT_TURNS - 1},
        ).all()
        if not old:
            return 0
        turns = [Turn(event_id=r[0], role=r[1], content=r[2], source_turn_id=r[3]) for r in old]
        llm = runtime.llm_extractor() if use_llm else None
        new_summary = None
        tokens = 0
        if llm is not None:
            new_summary, usage = llm.summarize(previous_summary=previous, turns=turns)
            tokens = usage.prompt_tokens + usage.completion_tokens
            svc.record_usage(
                db,
                tenant_id,
                day=day,
                stage="summarize",
                calls=usage.calls,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
            )
        if not new_summary:
            new_summary = extractive_summary(previous, turns)
        db.execute(
            text(
                "UPDATE sessions SET summary = :sum, summarized_through = :th, updated_at = now() "
                "WHERE tenant_id = :t AND user_id = :u AND session_id = :s"
            ),
            {**params, "sum": new_summary, "th": old[-1][4]},
        )
    return tokens
