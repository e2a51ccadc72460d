"""Scheduled and manual maintenance tasks: prune, purge, sweep, close idle sessions, distill.

Each takes the scheduled fire time (ISO) as its first argument when the scheduler sends it: the run record's
slot key makes a slot run once even if its message arrives twice. Manual runs pass None.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog

from core.forgetting import ForgettingPolicy
from shared import tasknames
from shared.contract import utcnow
from shared.db.engine import ALL_TENANTS, session_scope
from store import pruning
from store.memories import lock_user
from store.runs import finish_run, last_run_start, start_run
from store.triggers import enqueue_extraction
from worker import runtime
from worker.app import app
from worker.services import distillation, sleep

log = structlog.get_logger("worker.maintenance")


def _slot(kind: str, fire_time: str | None, suffix: str = "") -> str | None:
    return f"{kind}:{fire_time}{suffix}" if fire_time else None


def _actor(task: Any, fire_time: str | None) -> str:
    return f"schedule:{task.name}@{fire_time}" if fire_time else f"task:{task.request.id}"


def _policy() -> ForgettingPolicy:
    return ForgettingPolicy(retention_days=runtime.settings().retention_days)


def _run(task: Any, kind: str, fire_time: str | None, body: Any) -> dict[str, Any]:
    """Record a run around `body(actor, now) -> counts`; skip a slot that already ran."""
    engine = runtime.engine()
    now = utcnow()
    actor = _actor(task, fire_time)
    run_id = start_run(engine, kind=kind, scope="all", actor=actor, now=now, slot_key=_slot(kind, fire_time))
    if run_id is None:
        return {"outcome": "duplicate_slot"}
    try:
        counts = body(actor, now)
    except Exception as exc:
        finish_run(
            engine, run_id, outcome="error", counts={"errors": 1}, now=utcnow(), detail=type(exc).__name__
        )
        raise
    finish_run(engine, run_id, outcome="ok", counts=counts, now=utcnow())
    return {"outcome": "ok", "run_id": run_id, **counts}


@app.task(name=tasknames.PRUNE, bind=True, acks_late=True)
def prune(self: Any, fire_time: str | None = None, *_: Any) -> dict[str, Any]:
    def body(actor: str, now: datetime) -> dict[str, int]:
        with session_scope(runtime.engine(), tenant=ALL_TENANTS) as db:
            return pruning.prune(db, now=now, policy=_policy(), actor=actor)

    return _run(self, "prune", fire_time, body)


@app.task(name=tasknames.PURGE, bind=True, acks_late=True)
def purge(self: Any, fire_time: str | None = None, *_: Any) -> dict[str, Any]:
    def body(actor: str, now: datetime) -> dict[str, int]:
        with session_scope(runtime.engine(), tenant=ALL_TENANTS) as db:
            return pruning.purge(db, now=now, policy=_policy(), actor=actor)

    return _run(self, "purge", fire_time, body)


@app.task(name=tasknames.SWEEP, bind=True, acks_late=True)
def sweep(self: Any, fire_time: str | None = None, *_: Any) -> dict[str, Any]:
    settings = runtime.settings()

    def body(actor: str, now: datetime) -> dict[str, int]:
        with session_scope(runtime.engine(), tenant=ALL_TENANTS) as db:
            counts, sessions, users = sleep.sweep(
                db,
                now=now,
                stale_after_s=settings.sweep_stale_s,
                max_attempts=settings.sweep_max_attempts,
                llm_available=settings.llm_configured,
            )
        publisher = runtime.publisher()
        for tenant_id, user_id, session_id, reason in sessions:
            enqueue_extraction(publisher, tenant_id, user_id, session_id, reason=reason)
        for tenant_id, user_id in users:
            publisher.publish(tasknames.RECONCILE_USER, [tenant_id, user_id])
        return counts

    return _run(self, "sweep", fire_time, body)


@app.task(name=tasknames.CLOSE_IDLE_SESSIONS, bind=True, acks_late=True)
def close_idle_sessions(self: Any, fire_time: str | None = None, *_: Any) -> dict[str, Any]:
    settings = runtime.settings()

    def body(actor: str, now: datetime) -> dict[str, int]:
        with session_scope(runtime.engine(), tenant=ALL_TENANTS) as db:
            todo = sleep.sessions_to_close(
                db, now=now, idle_s=settings.session_idle_s, settle_s=settings.session_end_settle_s
            )
        llm = runtime.llm_extractor()
        totals = {"sessions": 0, "episodes": 0, "tokens": 0}
        for tenant_id, user_id, session_id in todo:
            with session_scope(runtime.engine(), tenant=tenant_id) as db:
                out = sleep.close_session(
                    db, tenant_id, user_id, session_id, embedder=runtime.embedder(), llm=llm, now=now
                )
            totals["sessions"] += 1
            totals["episodes"] += out.get("episodes", 0)
            totals["tokens"] += out.get("tokens", 0)
        return totals

    return _run(self, "close_sessions", fire_time, body)


@app.task(name=tasknames.DISTILL, bind=True, acks_late=True, soft_time_limit=3000, time_limit=3600)
def distill(
    self: Any, fire_time: str | None = None, tenant_id: str | None = None, user_id: str | None = None, *_: Any
) -> dict[str, Any]:
    """Distill every user with new fragments (nightly), or one user (manual / fragment threshold)."""
    settings = runtime.settings()
    engine = runtime.engine()
    runtime.check_schema()
    if tenant_id and user_id:
        users = [(tenant_id, user_id)]
    else:
        with session_scope(engine, tenant=ALL_TENANTS) as db:
            users = distillation.users_to_distill(db)
    llm = runtime.llm_extractor()
    totals: dict[str, Any] = {
        "users": 0,
        "clusters": 0,
        "consolidated": 0,
        "created": 0,
        "tokens": 0,
        "errors": 0,
        "working_memory": 0,
    }
    spent: dict[str, int] = {}
    for t, u in users:
        now = utcnow()
        actor = _actor(self, fire_time)
        run_id = start_run(
            engine,
            kind="distill",
            scope=f"{t}/{u}",
            actor=actor,
            now=now,
            tenant_id=t,
            user_id=u,
            slot_key=_slot("distill", fire_time, f":{t}:{u}"),
        )
        if run_id is None:
            continue
        since = last_run_start(engine, kind="distill", tenant_id=t, user_id=u)
        try:
            with session_scope(engine, tenant=t) as db:
                lock_user(db, t, u)  # reconciliation of this user waits; others go on
                cap = max(0, settings.distill_token_cap - spent.get(t, 0))
                result = distillation.distill_user(
                    db,
                    t,
                    u,
                    embedder=runtime.embedder(),
                    llm=llm if cap > 0 else None,
                    now=now,
                    actor=actor,
                    new_since=since,
                    token_cap=cap,
                )
                wm, wm_tokens = sleep.rewrite_working_memory(db, t, u, now=now, llm=llm if cap > 0 else None)
        except Exception as exc:
            finish_run(
                engine, run_id, outcome="error", counts={"errors": 1}, now=utcnow(), detail=repr(exc)[:500]
            )
            totals["errors"] += 1
            log.exception("distill.user_failed", tenant_id=t, user_id=u)
            continue
        spent[t] = spent.get(t, 0) + result.tokens + wm_tokens
        counts = {
            "clusters": result.clusters,
            "consolidated": result.consolidated,
            "created": result.created,
            "tokens": result.tokens + wm_tokens,
            "working_memory": int(wm),
            "errors": len(result.errors),
        }
        finish_run(
            engine,
            run_id,
            outcome="partial" if result.errors else "ok",
            counts=counts,
            now=utcnow(),
            mode=result.mode,
            detail="; ".join(result.errors) or None,
        )
        totals["users"] += 1
        for k in ("clusters", "consolidated", "created", "tokens", "errors", "working_memory"):
            totals[k] += counts[k]
    return {"outcome": "ok", **totals}
