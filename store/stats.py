"""The operator's overview (`memctl stats`): events by status, memories by kind and status, LLM tokens today
per tenant, LLM failures by reason (turns still waiting for the LLM, and turns made final without it), LLM
failures by stage and reason (every time a stage did without the LLM, and what it did instead), dead letters
waiting, and the latest run of each kind. Read in the owner's (all-tenant) scope."""

from __future__ import annotations

from datetime import date, timedelta
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
    and the worst lag (received to processed, seconds) of those already processed."""
    rows = db.execute(
        text(
            "WITH per AS (SELECT date_trunc('minute', received_at) AS minute, count(*) AS events, "
            "avg(date_part('epoch', processed_at - received_at)) AS lag_mean_s, "
            "max(date_part('epoch', processed_at - received_at)) AS lag_max_s FROM events "
            "WHERE tenant_id = :t AND received_at >= date_trunc('minute', now()) - make_interval(mins => :n - 1) "
            "GROUP BY 1) "
            "SELECT m.minute, coalesce(per.events, 0) AS events, per.lag_mean_s, per.lag_max_s "
            "FROM generate_series(date_trunc('minute', now()) - make_interval(mins => :n - 1), "
            "date_trunc('minute', now()), interval '1 minute') AS m(minute) "
            "LEFT JOIN per ON per.minute = m.minute ORDER BY m.minute"
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
    """For each of the last `days` days (UTC), how many of the tenant's memories were current at its end
    (recorded, not yet closed: superseded, consolidated, archived or forgotten) and how many had been closed
    by then, by the status they have now. One scan: the memories grouped by the day they were recorded and
    the day they were closed (both clamped to the first day shown; GREATEST and LEAST skip NULLs, hence the
    CASE for a memory never closed), summed per day here."""
    rows = db.execute(
        text(
            "WITH w AS (SELECT floor(date_part('epoch', now()) / 86400)::int - (:n - 1) AS start) "
            "SELECT greatest(floor(date_part('epoch', recorded_at) / 86400)::int, w.start) AS opened, "
            "CASE WHEN valid_to IS NULL AND archived_at IS NULL THEN NULL ELSE greatest(floor(date_part('epoch', "
            "greatest(least(valid_to, archived_at), recorded_at)) / 86400)::int, w.start) END AS closed, "
            "status, count(*) FROM memories, w WHERE tenant_id = :t GROUP BY 1, 2, 3"
        ),
        {"t": tenant_id, "n": days},
    ).all()
    epoch = date(1970, 1, 1)
    today = db.execute(text("SELECT floor(date_part('epoch', now()) / 86400)::int")).scalar_one()
    buckets = {
        "superseded": "superseded",
        "consolidated": "archived",
        "archived": "archived",
        "deleted": "deleted",
    }
    out = []
    for k in range(days - 1, -1, -1):
        day = today - k
        counts: dict[str, Any] = {
            "day": epoch + timedelta(days=day),
            "current": 0,
            "superseded": 0,
            "archived": 0,
            "deleted": 0,
        }
        for opened, closed, status, n in rows:
            if opened > day:
                continue
            if closed is None or closed > day:
                counts["current"] += n
            elif status in buckets:
                counts[buckets[status]] += n
        out.append(counts)
    return out


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
