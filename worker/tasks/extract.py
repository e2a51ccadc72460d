"""The `memory.extract_session` task: one debounced window of one session, at most one run per session.

Arguments are ids only; the pending set is read from Postgres, so a lost or repeated trigger is harmless:
a repeat finds nothing pending, a lost one is re-sent by the sweeper.
"""

from __future__ import annotations

from typing import Any

import structlog

from shared import tasknames
from shared.contract import utcnow
from worker import runtime
from worker.app import app
from worker.services.extraction import extract_session as extract
from worker.tasks.base import DatabaseTask


@app.task(name=tasknames.EXTRACT_SESSION, base=DatabaseTask, bind=True, acks_late=True)
def extract_session(
    self: Any, tenant_id: str, user_id: str, session_id: str, reason: str = "threshold"
) -> dict[str, Any]:
    structlog.contextvars.bind_contextvars(
        tenant_id=tenant_id, user_id=user_id, session_id=session_id, reason=reason
    )
    runtime.check_schema()
    return extract(
        runtime.engine(),
        runtime.publisher(),
        tenant_id,
        user_id,
        session_id,
        reason=reason,
        now=utcnow(),
        settings=runtime.settings(),
        llm=runtime.llm(),
        embedder=runtime.embedder(),
        breaker=runtime.breaker("extract"),
        summary_breaker=runtime.breaker("summarize"),
        task_id=self.request.id,
    )
