"""Scheduled and manual maintenance tasks: prune, purge, sweep, close idle sessions, distill.

Each takes the scheduled fire time (ISO) as its first argument when the scheduler sends it: the run record's
slot key makes a slot run once even if its message arrives twice. Manual runs pass None.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.forgetting import ForgettingPolicy
from shared import tasknames
from shared.db.engine import ALL_TENANTS, session_scope
from store import pruning
from worker import runtime
from worker.app import app
from worker.services import distillation, episodes, sweeper
from worker.services.runs import recorded_run


def _actor(task: Any, fire_time: str | None) -> str:
    return f"schedule:{task.name}@{fire_time}" if fire_time else f"task:{task.request.id}"


def _policy() -> ForgettingPolicy:
    return ForgettingPolicy(retention_days=runtime.settings().retention_days)


@app.task(name=tasknames.PRUNE, bind=True, acks_late=True)
def prune(self: Any, fire_time: str | None = None, *_: Any) -> dict[str, Any]:
    actor = _actor(self, fire_time)

    def body(now: datetime) -> dict[str, int]:
        with session_scope(runtime.engine(), tenant=ALL_TENANTS) as db:
            return pruning.prune(db, now=now, policy=_policy(), actor=actor)

    return recorded_run(runtime.engine(), kind="prune", actor=actor, fire_time=fire_time, body=body)


@app.task(name=tasknames.PURGE, bind=True, acks_late=True)
def purge(self: Any, fire_time: str | None = None, *_: Any) -> dict[str, Any]:
    actor = _actor(self, fire_time)

    def body(now: datetime) -> dict[str, int]:
        settings = runtime.settings()
        with session_scope(runtime.engine(), tenant=ALL_TENANTS) as db:
            counts = pruning.purge(db, now=now, policy=_policy(), actor=actor)
            # one scheduled purge for everything past retention: archived memories, turn text, candidates
            counts.update(
                pruning.purge_transcripts(
                    db,
                    now=now,
                    turn_days=settings.turn_retention_days,
                    candidate_days=settings.candidate_retention_days,
                )
            )
            return counts

    return recorded_run(runtime.engine(), kind="purge", actor=actor, fire_time=fire_time, body=body)


@app.task(name=tasknames.SWEEP, bind=True, acks_late=True)
def sweep(self: Any, fire_time: str | None = None, *_: Any) -> dict[str, Any]:
    settings = runtime.settings()

    def body(now: datetime) -> dict[str, int]:
        return sweeper.sweep(
            runtime.engine(),
            runtime.publisher(),
            now=now,
            stale_after_s=settings.sweep_stale_s,
            max_attempts=settings.sweep_max_attempts,
            llm_available=settings.llm_configured,
            breaker=runtime.breaker("extract"),
        )

    return recorded_run(
        runtime.engine(), kind="sweep", actor=_actor(self, fire_time), fire_time=fire_time, body=body
    )


@app.task(name=tasknames.CLOSE_IDLE_SESSIONS, bind=True, acks_late=True)
def close_idle_sessions(self: Any, fire_time: str | None = None, *_: Any) -> dict[str, Any]:
    settings = runtime.settings()

    def body(now: datetime) -> dict[str, int]:
        return episodes.close_idle_sessions(
            runtime.engine(),
            now=now,
            idle_s=settings.session_idle_s,
            settle_s=settings.session_end_settle_s,
            embedder=runtime.embedder(),
            llm=runtime.llm(),
            breaker=runtime.breaker("episode"),
            working_memory_breaker=runtime.breaker("working_memory"),
        )

    return recorded_run(
        runtime.engine(), kind="close_sessions", actor=_actor(self, fire_time), fire_time=fire_time, body=body
    )


@app.task(name=tasknames.DISTILL, bind=True, acks_late=True, soft_time_limit=3000, time_limit=3600)
def distill(
    self: Any, fire_time: str | None = None, tenant_id: str | None = None, user_id: str | None = None, *_: Any
) -> dict[str, Any]:
    """Distill every user with new fragments (nightly), or one user (manual / fragment threshold)."""
    runtime.check_schema()
    totals = distillation.distill_users(
        runtime.engine(),
        only=(tenant_id, user_id) if tenant_id and user_id else None,
        actor=_actor(self, fire_time),
        fire_time=fire_time,
        token_cap=runtime.settings().distill_token_cap,
        embedder=runtime.embedder(),
        llm=runtime.llm(),
        distill_breaker=runtime.breaker("distill"),
        working_memory_breaker=runtime.breaker("working_memory"),
    )
    return {"outcome": "ok", **totals}
