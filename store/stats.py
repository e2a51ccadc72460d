"""The operator's overview (`memctl stats`): events by status, memories by kind and status, LLM tokens today
per tenant, LLM failures by reason (turns still waiting for the LLM, and turns made final without it), LLM
failures by stage and reason (every time a stage did without the LLM, and what it did instead), dead letters
waiting, and the latest run of each kind. Read in the owner's (all-tenant) scope."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlmodel import Session

from store.runs import last_runs_by_kind


def overview(db: Session) -> dict[str, Any]:
    events = dict(db.execute(text("SELECT status, count(*) FROM events GROUP BY status")).tuples().all())
    memories = db.execute(
        text("SELECT kind, status, count(*) AS n FROM memories GROUP BY kind, status ORDER BY kind, status")
    )
    tokens = db.execute(
        text(
            "SELECT tenant_id, sum(prompt_tokens + completion_tokens) AS tokens, sum(calls) AS calls "
            "FROM llm_usage WHERE day = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') "
            "GROUP BY tenant_id ORDER BY 2 DESC"
        )
    )
    failures = db.execute(
        text(
            "SELECT llm_error AS reason, count(*) FILTER (WHERE status = 'llm_pending') AS waiting, "
            "count(*) FILTER (WHERE status <> 'llm_pending') AS final, max(llm_attempts) AS max_attempts "
            "FROM events WHERE llm_error IS NOT NULL GROUP BY llm_error ORDER BY 2 DESC, 3 DESC, 1"
        )
    )
    by_stage = db.execute(
        text(
            "SELECT stage, reason, action, "
            "coalesce(sum(count) FILTER (WHERE day = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD')), 0) "
            "AS today, sum(count) AS total, max(last_at) AS last_at "
            "FROM llm_failures GROUP BY stage, reason, action ORDER BY stage, total DESC, reason, action"
        )
    )
    return {
        "events": events,
        "llm_failures": [dict(r) for r in failures.mappings().all()],
        "llm_failures_by_stage": [dict(r) for r in by_stage.mappings().all()],
        "dead_letters": db.execute(
            text("SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL")
        ).scalar(),
        "memories": [dict(r) for r in memories.mappings().all()],
        "tokens_today": [dict(r) for r in tokens.mappings().all()],
        "last_runs": last_runs_by_kind(db),
    }
