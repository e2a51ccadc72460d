"""The `memory.reconcile_user` task: turn a user's new candidates into memories, serialized per user."""

from __future__ import annotations

from typing import Any

import structlog

from shared import tasknames
from shared.contract import utcnow
from worker import runtime
from worker.app import app
from worker.services.reconcile import reconcile_backlog
from worker.tasks.base import DatabaseTask


@app.task(name=tasknames.RECONCILE_USER, base=DatabaseTask, bind=True, acks_late=True)
def reconcile_user(self: Any, tenant_id: str, user_id: str) -> dict[str, Any]:
    structlog.contextvars.bind_contextvars(tenant_id=tenant_id, user_id=user_id)
    runtime.check_schema()
    settings = runtime.settings()
    totals = reconcile_backlog(
        runtime.engine(),
        runtime.publisher(),
        tenant_id,
        user_id,
        embedder=runtime.embedder(),
        policy=runtime.policy(),
        llm=runtime.llm(),
        actor=f"task:{self.request.id}",
        clock=utcnow,
        daily_token_budget=settings.daily_token_budget,
        distill_fragment_threshold=settings.distill_fragment_threshold,
        breaker=runtime.breaker("reconcile"),
        working_memory_breaker=runtime.breaker("working_memory"),
        task_id=self.request.id,
    )
    decisions = sum(v for k, v in totals.items() if not k.startswith("llm_") and k != "working_memory")
    return {"outcome": "ok", "candidates": decisions, **totals}
