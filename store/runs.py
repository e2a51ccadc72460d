"""Run records (`consolidation_runs`): what each scheduled or manual run did, for `memctl runs` and /v1/runs.

`start_run` with a `slot_key` (job id + scheduled fire time) returns None when that slot already ran: a
schedule slot is executed once even if its message is delivered twice.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from shared.db.engine import ALL_TENANTS, session_scope


def start_run(
    engine: Engine,
    *,
    kind: str,
    scope: str,
    actor: str,
    now: datetime,
    slot_key: str | None = None,
    tenant_id: str | None = None,
    user_id: str | None = None,
) -> int | None:
    with session_scope(engine, tenant=ALL_TENANTS) as db:
        run_id = db.execute(
            text(
                "INSERT INTO consolidation_runs (kind, scope, tenant_id, user_id, slot_key, actor, started_at) "
                "VALUES (:k, :s, :t, :u, :slot, :a, :now) ON CONFLICT (slot_key) DO NOTHING RETURNING id"
            ),
            {"k": kind, "s": scope, "t": tenant_id, "u": user_id, "slot": slot_key, "a": actor, "now": now},
        ).scalar()
    return int(run_id) if run_id is not None else None


def finish_run(
    engine: Engine,
    run_id: int,
    *,
    outcome: str,
    counts: dict[str, Any],
    now: datetime,
    mode: str | None = None,
    detail: str | None = None,
) -> None:
    with session_scope(engine, tenant=ALL_TENANTS) as db:
        db.execute(
            text(
                "UPDATE consolidation_runs SET finished_at = :now, outcome = :o, counts = CAST(:c AS jsonb), "
                "mode = :m, detail = :d WHERE id = :id"
            ),
            {
                "now": now,
                "o": outcome,
                "c": json.dumps(counts, default=str),
                "m": mode,
                "d": detail,
                "id": run_id,
            },
        )


def last_run_start(engine: Engine, *, kind: str, tenant_id: str, user_id: str) -> datetime | None:
    with session_scope(engine, tenant=ALL_TENANTS) as conn:
        value = conn.execute(
            text(
                "SELECT max(started_at) FROM consolidation_runs WHERE kind = :k AND tenant_id = :t "
                "AND user_id = :u AND outcome IN ('ok', 'partial')"
            ),
            {"k": kind, "t": tenant_id, "u": user_id},
        ).scalar()
    return value  # type: ignore[no-any-return]


def list_runs(
    db: Session, *, kind: str | None = None, limit: int = 50, tenant_id: str | None = None
) -> list[dict[str, Any]]:
    """Run records, newest first: with `tenant_id` that tenant's own runs (its distillations; the runs over
    every tenant are the operator's), else every run the session can see."""
    rows = db.execute(
        text(
            "SELECT id, kind, scope, tenant_id, user_id, mode, actor, started_at, finished_at, outcome, counts, "
            "detail FROM consolidation_runs WHERE (CAST(:k AS text) IS NULL OR kind = :k) "
            "AND (CAST(:t AS text) IS NULL OR tenant_id = :t) ORDER BY started_at DESC, id DESC LIMIT :n"
        ),
        {"k": kind, "t": tenant_id, "n": limit},
    )
    return [dict(r) for r in rows.mappings().all()]


def last_runs_by_kind(db: Session) -> list[dict[str, Any]]:
    """The latest run of each kind (for `memctl stats`)."""
    rows = db.execute(
        text(
            "SELECT DISTINCT ON (kind) kind, started_at, outcome, counts FROM consolidation_runs "
            "ORDER BY kind, started_at DESC"
        )
    )
    return [dict(r) for r in rows.mappings().all()]
