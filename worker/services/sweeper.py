"""The sweeper: stuck work found (`store.sweeper`) and sent again, so an accepted event is never lost."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from shared import tasknames
from shared.db.engine import ALL_TENANTS, session_scope
from shared.publisher import TaskPublisher
from store.sweeper import find_stuck_work
from store.triggers import enqueue_extraction
from worker.llm import CircuitBreaker


def sweep(
    engine: Engine,
    publisher: TaskPublisher,
    *,
    now: datetime,
    stale_after_s: float,
    max_attempts: int,
    llm_available: bool,
    breaker: CircuitBreaker | None = None,
) -> dict[str, int]:
    """Dead-letter poison events, then re-enqueue (after the commit) the extractions of sessions with stale
    or `llm_pending` events due for a retry and the reconciliations of users whose candidates wait. While
    the extraction breaker is open, `llm_pending` sessions are left alone (their windows would make no
    call). Returns the counts."""
    if breaker is not None and breaker.is_open():
        llm_available = False
    with session_scope(engine, tenant=ALL_TENANTS) as db:
        stuck = find_stuck_work(
            db, now=now, stale_after_s=stale_after_s, max_attempts=max_attempts, llm_available=llm_available
        )
    for tenant_id, user_id, session_id, reason in stuck.sessions:
        enqueue_extraction(publisher, tenant_id, user_id, session_id, reason=reason)
    for tenant_id, user_id in stuck.users:
        publisher.publish(tasknames.RECONCILE_USER, [tenant_id, user_id])
    return stuck.counts
