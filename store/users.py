"""User-level reads and erasure. Every function runs inside a tenant-scoped transaction (row-level security)."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import text
from sqlalchemy.engine import CursorResult, Result
from sqlmodel import Session

# Every table that can mention a user, in an order that respects references.
ERASE_TABLES = (
    "memory_history",
    "candidates",
    "episodes",
    "working_memory_history",
    "working_memory",
    "memories",
    "events",
    "sessions",
    "consolidation_runs",
    "dead_letters",
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


def _rowcount(result: Result[Any]) -> int:
    """Rows a DELETE/UPDATE touched (text() statements return a CursorResult; the stubs say Result)."""
    return int(cast(CursorResult[Any], result).rowcount or 0)


def erase_user(db: Session, tenant_id: str, user_id: str) -> dict[str, int]:
    """Delete everything about one user: events, memories, history (content included), candidates,
    episodes, sessions, working memory and its history, run records, dead letters naming the user."""
    p = {"t": tenant_id, "u": user_id}
    counts: dict[str, int] = {}
    for table in (
        "memory_history",
        "memory_access",
        "candidates",
        "episodes",
        "working_memory_history",
        "working_memory",
    ):
        counts[table] = _rowcount(
            db.execute(text(f"DELETE FROM {table} WHERE tenant_id = :t AND user_id = :u"), p)
        )
    # memories reference each other (superseded_by): clear the links first, then delete
    db.execute(text("UPDATE memories SET superseded_by = NULL WHERE tenant_id = :t AND user_id = :u"), p)
    counts["memories"] = _rowcount(
        db.execute(text("DELETE FROM memories WHERE tenant_id = :t AND user_id = :u"), p)
    )
    counts["events"] = _rowcount(
        db.execute(text("DELETE FROM events WHERE tenant_id = :t AND user_id = :u"), p)
    )
    counts["sessions"] = _rowcount(
        db.execute(text("DELETE FROM sessions WHERE tenant_id = :t AND user_id = :u"), p)
    )
    counts["consolidation_runs"] = _rowcount(
        db.execute(text("DELETE FROM consolidation_runs WHERE tenant_id = :t AND user_id = :u"), p)
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
