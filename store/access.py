"""Access counts: how often and when searches returned each memory, in the narrow `memory_access` table.

Reads never write memory rows: the API buffers the ids it served and applies them here in one statement
every few seconds (`api.access.AccessRecorder`); ranking (`store.search`), the memory views and decay
(`store.pruning`) read the counts back.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlmodel import Session


def record_access(db: Session, counts: dict[str, int], *, now: datetime) -> int:
    """Apply buffered access counts in one statement (reads never write one row at a time). The counts live
    in the narrow `memory_access` table, not in the wide memory rows (migration 0009 says why); a memory
    that no longer exists gets no count. Rows are written in id order, so two API processes flushing the
    same memories at once take their locks in the same order."""
    if not counts:
        return 0
    ids, hits = zip(*counts.items(), strict=True)
    result = db.execute(
        text(
            "INSERT INTO memory_access (memory_id, tenant_id, user_id, access_count, last_accessed_at) "
            "SELECT m.id, m.tenant_id, m.user_id, v.n, :now "
            "FROM unnest(CAST(:ids AS uuid[]), CAST(:ns AS int[])) AS v(id, n) JOIN memories m ON m.id = v.id "
            "ORDER BY m.id "
            "ON CONFLICT (memory_id) DO UPDATE SET access_count = memory_access.access_count + excluded.access_count, "
            "last_accessed_at = greatest(memory_access.last_accessed_at, excluded.last_accessed_at)"
        ),
        {"ids": list(ids), "ns": list(hits), "now": now},
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
