"""User-level reads and erasure. Every function runs inside a tenant-scoped transaction (row-level security)."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import text
from sqlalchemy.engine import CursorResult, Result
from sqlmodel import Session

# Every table with a user's rows (its `tenant_id` and `user_id` columns), in an order that respects
# references; dead letters name the user inside their (redacted) payload and are matched there.
USER_TABLES = (
    "memory_history",
    "memory_access",
    "candidates",
    "episodes",
    "working_memory_history",
    "working_memory",
    "memories",
    "events",
    "sessions",
    "consolidation_runs",
    "task_traces",
)


def user_exists(db: Session, tenant_id: str, user_id: str) -> bool:
    row = db.execute(
        text(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE tenant_id = :t AND user_id = :u) "
            "OR EXISTS (SELECT 1 FROM memories WHERE tenant_id = :t AND user_id = :u)"
        ),
        {"t": tenant_id, "u": user_id},
    ).scalar()
    return bool(row)


def user_known(db: Session, tenant_id: str, user_id: str) -> bool:
    """Whether anything about the user is stored: a session, a memory, or an event not yet in a session."""
    if user_exists(db, tenant_id, user_id):
        return True
    found = db.execute(
        text("SELECT EXISTS (SELECT 1 FROM events WHERE tenant_id = :t AND user_id = :u)"),
        {"t": tenant_id, "u": user_id},
    ).scalar()
    return bool(found)


def _rowcount(result: Result[Any]) -> int:
    """Rows a DELETE/UPDATE touched (text() statements return a CursorResult; the stubs say Result)."""
    return int(cast(CursorResult[Any], result).rowcount or 0)


def erase_user(db: Session, tenant_id: str, user_id: str) -> dict[str, int]:
    """Delete everything about one user: events, memories, history (content included), candidates,
    episodes, sessions, working memory and its history, run records, task traces, dead letters naming the
    user."""
    p = {"t": tenant_id, "u": user_id}
    counts: dict[str, int] = {}
    for table in USER_TABLES:
        if table == "memories":
            # memories reference each other (superseded_by): clear the links first, then delete
            db.execute(
                text("UPDATE memories SET superseded_by = NULL WHERE tenant_id = :t AND user_id = :u"), p
            )
        counts[table] = _rowcount(
            db.execute(text(f"DELETE FROM {table} WHERE tenant_id = :t AND user_id = :u"), p)
        )
    # dead letters keep (redacted) payloads: drop every one whose payload names the user
    counts["dead_letters"] = _rowcount(
        db.execute(
            text(
                "DELETE FROM dead_letters WHERE tenant_id = :t AND (payload->>'user_id' = :u OR EXISTS ("
                "SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(payload->'events') = 'array' "
                "THEN payload->'events' ELSE '[]'::jsonb END) e WHERE e->>'user_id' = :u) "
                "OR position(('\"user_id\": \"' || :u || '\"') IN coalesce(payload->>'preview', '')) > 0)"
            ),
            p,
        )
    )
    return counts


def list_users(db: Session, tenant_id: str, *, limit: int = 200) -> list[str]:
    """The tenant's users (those with a session or a memory), by id (the console's index)."""
    rows = db.execute(
        text(
            "SELECT user_id FROM sessions WHERE tenant_id = :t UNION "
            "SELECT DISTINCT user_id FROM memories WHERE tenant_id = :t AND user_id <> '*app' "
            "ORDER BY 1 LIMIT :n"
        ),
        {"t": tenant_id, "n": limit},
    ).scalars()
    return list(rows)
