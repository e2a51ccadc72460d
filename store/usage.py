"""LLM usage per tenant, day and stage (`llm_usage`), the tenant's daily token budget, and the times a stage
did without the LLM (`llm_failures`, by stage, reason and what it did instead)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert
from sqlmodel import Session

from shared.db.models import LlmUsage


def record_usage(
    db: Session,
    tenant_id: str,
    *,
    day: str,
    stage: str,
    calls: int,
    prompt_tokens: int,
    completion_tokens: int,
) -> None:
    """Add one stage's calls and tokens to the tenant's row of `day` (nothing when no call was made)."""
    if not calls:
        return
    table = LlmUsage.__table__  # type: ignore[attr-defined]
    stmt = insert(table).values(
        tenant_id=tenant_id,
        day=day,
        stage=stage,
        calls=calls,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["tenant_id", "day", "stage"],
        set_={
            "calls": table.c.calls + stmt.excluded.calls,
            "prompt_tokens": table.c.prompt_tokens + stmt.excluded.prompt_tokens,
            "completion_tokens": table.c.completion_tokens + stmt.excluded.completion_tokens,
        },
    )
    db.execute(stmt)


def record_failure(
    db: Session, tenant_id: str, *, day: str, stage: str, reason: str, action: str, count: int = 1
) -> None:
    """Count `count` fallbacks of `stage` for `reason` (a `worker.llm.FAILURE_REASONS` category) on `day`;
    `action` is what the stage did instead (`deterministic` or `deferred`)."""
    db.execute(
        text(
            "INSERT INTO llm_failures (tenant_id, day, stage, reason, action, count, last_at) "
            "VALUES (:t, :d, :s, :r, :a, :n, now()) ON CONFLICT (tenant_id, day, stage, reason, action) "
            "DO UPDATE SET count = llm_failures.count + excluded.count, last_at = excluded.last_at"
        ),
        {"t": tenant_id, "d": day, "s": stage, "r": reason[:32], "a": action[:16], "n": count},
    )


def tokens_used_today(db: Session, tenant_id: str, *, day: str) -> int:
    """Prompt and completion tokens the tenant spent on `day` (ISO date, UTC), every stage together."""
    value = db.execute(
        text(
            "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM llm_usage "
            "WHERE tenant_id = :t AND day = :d"
        ),
        {"t": tenant_id, "d": day},
    ).scalar()
    return int(value or 0)


def tenant_budget(db: Session, tenant_id: str, *, default: int) -> int:
    """The tenant's daily token budget (`settings.daily_token_budget` of its row), else `default`."""
    value = db.execute(
        text("SELECT settings->>'daily_token_budget' FROM tenants WHERE id = :t"), {"t": tenant_id}
    ).scalar()
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def within_budget(db: Session, tenant_id: str, *, day: str, default_budget: int) -> tuple[bool, int]:
    """(whether the tenant has tokens left on `day`, its daily budget)."""
    budget = tenant_budget(db, tenant_id, default=default_budget)
    return tokens_used_today(db, tenant_id, day=day) < budget, budget
