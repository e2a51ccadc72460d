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


def event_minutes(db: Session, tenant_id: str, *, minutes: int = 60) -> list[dict[str, Any]]:
    """Events received per minute over the last `minutes` (every minute, zeros included), with the mean
    and the worst lag (received to processed, seconds) of those already processed. Tenant-scoped reads."""
    rows = db.execute(
        text(
            "SELECT m.minute, count(e.event_id) AS events, "
            "avg(extract(epoch FROM e.processed_at - e.received_at)) AS lag_mean_s, "
            "max(extract(epoch FROM e.processed_at - e.received_at)) AS lag_max_s "
            "FROM generate_series(date_trunc('minute', now()) - make_interval(mins => :n - 1), "
            "date_trunc('minute', now()), interval '1 minute') AS m(minute) "
            "LEFT JOIN events e ON e.tenant_id = :t AND e.received_at >= m.minute "
            "AND e.received_at < m.minute + interval '1 minute' "
            "GROUP BY m.minute ORDER BY m.minute"
        ),
        {"n": minutes, "t": tenant_id},
    )
    return [dict(r) for r in rows.mappings().all()]


def events_by_status_hourly(db: Session, tenant_id: str, *, hours: int = 24) -> list[dict[str, Any]]:
    """Events received per hour over the last `hours`, by their status now."""
    rows = db.execute(
        text(
            "SELECT date_trunc('hour', received_at) AS hour, status, count(*) AS n FROM events "
            "WHERE tenant_id = :t AND received_at >= now() - make_interval(hours => :n) GROUP BY 1, 2 ORDER BY 1, 2"
        ),
        {"n": hours, "t": tenant_id},
    )
    return [dict(r) for r in rows.mappings().all()]


def oldest_pending_s(db: Session, tenant_id: str) -> float | None:
    """Age in seconds of the oldest event still waiting (pending or waiting for the LLM), None if none."""
    value = db.execute(
        text(
            "SELECT extract(epoch FROM now() - min(received_at)) FROM events "
            "WHERE tenant_id = :t AND status IN ('pending', 'llm_pending')"
        ),
        {"t": tenant_id},
    ).scalar()
    return float(value) if value is not None else None


def tokens_by_day(db: Session, tenant_id: str, *, days: int = 14) -> list[dict[str, Any]]:
    """LLM tokens (prompt + completion) and calls per day and stage over the last `days` (UTC days)."""
    rows = db.execute(
        text(
            "SELECT day, stage, sum(prompt_tokens + completion_tokens) AS tokens, sum(calls) AS calls "
            "FROM llm_usage WHERE tenant_id = :t "
            "AND day >= to_char((now() AT TIME ZONE 'UTC') - make_interval(days => :n - 1), 'YYYY-MM-DD') "
            "GROUP BY day, stage ORDER BY day, stage"
        ),
        {"n": days, "t": tenant_id},
    )
    return [dict(r) for r in rows.mappings().all()]


def memories_by_status_daily(db: Session, tenant_id: str, *, days: int = 14) -> list[dict[str, Any]]:
    """For each of the last `days` days (at its end, UTC), how many memories were current (recorded, not
    yet closed) and how many had been closed by then, by the status they have now."""
    rows = db.execute(
        text(
            "SELECT d.day, "
            "count(m.id) FILTER (WHERE (m.valid_to IS NULL OR m.valid_to > d.day_end) "
            "AND (m.archived_at IS NULL OR m.archived_at > d.day_end)) AS current, "
            "count(m.id) FILTER (WHERE m.status = 'superseded' AND NOT ((m.valid_to IS NULL OR m.valid_to > d.day_end) "
            "AND (m.archived_at IS NULL OR m.archived_at > d.day_end))) AS superseded, "
            "count(m.id) FILTER (WHERE m.status IN ('consolidated', 'archived') AND NOT ((m.valid_to IS NULL "
            "OR m.valid_to > d.day_end) AND (m.archived_at IS NULL OR m.archived_at > d.day_end))) AS archived, "
            "count(m.id) FILTER (WHERE m.status = 'deleted' AND NOT ((m.valid_to IS NULL OR m.valid_to > d.day_end) "
            "AND (m.archived_at IS NULL OR m.archived_at > d.day_end))) AS deleted "
            "FROM (SELECT (g AT TIME ZONE 'UTC')::date AS day, g + interval '1 day' AS day_end "
            "FROM generate_series(date_trunc('day', now(), 'UTC') - make_interval(days => :n - 1), "
            "date_trunc('day', now(), 'UTC'), interval '1 day') AS g) d "
            "LEFT JOIN memories m ON m.tenant_id = :t AND m.recorded_at < d.day_end "
            "GROUP BY d.day ORDER BY d.day"
        ),
        {"n": days, "t": tenant_id},
    )
    return [dict(r) for r in rows.mappings().all()]


def tokens_today_by_stage(db: Session, tenant_id: str) -> list[dict[str, Any]]:
    """Today's (UTC) LLM tokens and calls by tenant and stage (the session's tenant under row-level security)."""
    rows = db.execute(
        text(
            "SELECT tenant_id, stage, sum(prompt_tokens + completion_tokens) AS tokens, sum(calls) AS calls "
            "FROM llm_usage WHERE tenant_id = :t AND day = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') "
            "GROUP BY tenant_id, stage ORDER BY tenant_id, tokens DESC"
        ),
        {"t": tenant_id},
    )
    return [dict(r) for r in rows.mappings().all()]
