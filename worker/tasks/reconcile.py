"""The `memory.reconcile_user` task: turn a user's new candidates into memories, serialized per user."""

from __future__ import annotations

from typing import Any

import structlog
from sqlalchemy import text
from sqlalchemy.exc import InterfaceError, OperationalError

from shared import tasknames
from shared.contract import utcnow
from shared.db.engine import session_scope
from worker import runtime
from worker.app import app
from worker.retry import retry_countdown
from worker.services.extraction import record_usage, tenant_budget, tokens_used_today
from worker.services.reconcile import reconcile_user as reconcile

log = structlog.get_logger("worker.reconcile")

BATCH = 200


@app.task(name=tasknames.RECONCILE_USER, bind=True, max_retries=None, acks_late=True)
def reconcile_user(self: Any, tenant_id: str, user_id: str) -> dict[str, Any]:
    structlog.contextvars.bind_contextvars(tenant_id=tenant_id, user_id=user_id)
    runtime.check_schema()
    totals: dict[str, int] = {}
    try:
        while True:
            with session_scope(runtime.engine(), tenant=tenant_id) as db:
                counts = reconcile(
                    db,
                    tenant_id,
                    user_id,
                    embedder=runtime.embedder(),
                    policy=runtime.policy(),
                    actor=f"task:{self.request.id}",
                    now=utcnow(),
                    limit=BATCH,
                    llm=_judge_llm(db, tenant_id),
                )
                if counts.get("llm_calls"):
                    record_usage(
                        db,
                        tenant_id,
                        day=utcnow().date().isoformat(),
                        stage="reconcile",
                        calls=counts["llm_calls"],
                        prompt_tokens=counts.get("llm_tokens", 0),
                        completion_tokens=0,
                    )
            for k, v in counts.items():  # llm_* are usage, not decisions
                totals[k] = totals.get(k, 0) + v
            if sum(v for k, v in counts.items() if not k.startswith("llm_")) < BATCH:
                break
    except (OperationalError, InterfaceError) as exc:
        raise self.retry(exc=exc, countdown=retry_countdown(self.request.retries, max_s=60)) from None
    if totals:
        _distill_if_crowded(tenant_id, user_id)
    decisions = sum(v for k, v in totals.items() if not k.startswith("llm_"))
    return {"outcome": "ok", "candidates": decisions, **totals}


def _judge_llm(db: Any, tenant_id: str) -> Any:
    """The LLM for the judge, or None once the tenant's daily token budget is spent (the judge then decides
    without it, as with no LLM configured): the budget covers every stage, not only extraction."""
    llm = runtime.llm_extractor()
    if llm is None:
        return None
    budget = tenant_budget(db, tenant_id, default=runtime.settings().daily_token_budget)
    if tokens_used_today(db, tenant_id, day=utcnow().date().isoformat()) < budget:
        return llm
    log.warning("llm.budget_exhausted", stage="reconcile", budget=budget, detail="judging without the LLM")
    return None


def _distill_if_crowded(tenant_id: str, user_id: str) -> None:
    """Distill a user early when their active fragments pass the threshold (at most once an hour)."""
    settings = runtime.settings()
    with session_scope(runtime.engine(), tenant=tenant_id) as db:
        active = db.execute(
            text(
                "SELECT count(*) FROM memories WHERE tenant_id = :t AND user_id = :u AND status = 'active' "
                "AND slot IS NULL"
            ),
            {"t": tenant_id, "u": user_id},
        ).scalar()
    if int(active or 0) < settings.distill_fragment_threshold:
        return
    publisher = runtime.publisher()
    if publisher.set_once(f"memory:distill-early:{tenant_id}:{user_id}", 3600):
        publisher.publish(tasknames.DISTILL, [None, tenant_id, user_id])
