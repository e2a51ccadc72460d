"""What readers see of memories (the API, memctl, the console): one memory with its history, a user's
memories page by page, and the half-life in force for each.

The select list is derived from `store.models.MemoryPublic`: the `memories` columns it names, the two
access figures from `memory_access`, and `half_life_days`, which is not stored but follows the tenant's
policy (`core.forgetting.tenant_half_lives`), as pruning and ranking do.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import text
from sqlmodel import Session

from core.forgetting import tenant_half_lives
from store.models import MEMORY_COLUMNS, MemoryHistory, MemoryPublic

_ACCESS = {
    "last_accessed_at": "acc.last_accessed_at",
    "access_count": "coalesce(acc.access_count, 0) AS access_count",
}
_DERIVED = {"half_life_days"}  # computed here from the tenant's policy, not read


def _select_list() -> str:
    out = []
    for name in MemoryPublic.model_fields:
        if name in _ACCESS:
            out.append(_ACCESS[name])
        elif name in MEMORY_COLUMNS:
            out.append(f"memories.{name}")
        elif name not in _DERIVED:
            raise AssertionError(f"MemoryPublic.{name} is neither a column nor derived")
    return ", ".join(out)


_COLS = _select_list()
# memories with how often and when searches returned them: one primary-key probe per row
_FROM = (
    "memories LEFT JOIN LATERAL (SELECT a.last_accessed_at, a.access_count FROM memory_access a "
    "WHERE a.memory_id = memories.id) acc ON true"
)
_ORDER = {
    "importance": "importance DESC, last_confirmed_at DESC, id",
    "timeline": "slot NULLS LAST, valid_from, recorded_at, id",
}
_HISTORY_COLS = ", ".join(
    c for c in MemoryHistory.model_fields if c not in ("id", "memory_id", "tenant_id", "user_id")
)


def half_lives(db: Session, tenant_id: str) -> dict[str, float | None]:
    """Each kind's half-life for this tenant (its overrides over the defaults)."""
    overrides = db.execute(
        text("SELECT settings->'half_life_days' FROM tenants WHERE id = :t"), {"t": tenant_id}
    ).scalar()
    return tenant_half_lives(overrides)


def _public(rows: Sequence[Any], halves: dict[str, float | None]) -> list[MemoryPublic]:
    return [MemoryPublic(**r, half_life_days=halves.get(r["kind"])) for r in rows]


def get_memory(db: Session, memory_id: Any) -> MemoryPublic | None:
    """One memory as readers see it, or None (another tenant's memory is invisible: row-level security)."""
    row = db.execute(
        text(f"SELECT {_COLS}, memories.tenant_id FROM {_FROM} WHERE id = :id"), {"id": memory_id}
    )
    found = row.mappings().first()
    if found is None:
        return None
    data = dict(found)
    return _public([data], half_lives(db, data.pop("tenant_id")))[0]


def memory_history(db: Session, memory_id: Any) -> list[dict[str, Any]]:
    """Every change to the memory, oldest first."""
    rows = db.execute(
        text(f"SELECT {_HISTORY_COLS} FROM memory_history WHERE memory_id = :id ORDER BY id"),
        {"id": memory_id},
    )
    return [dict(r) for r in rows.mappings().all()]


def list_memories(
    db: Session,
    tenant_id: str,
    user_id: str,
    *,
    statuses: Sequence[str] = ("active",),
    kinds: Sequence[str] = (),
    category: str | None = None,
    slot: str | None = None,
    limit: int = 50,
    offset: int = 0,
    order: Literal["importance", "timeline"] = "importance",
    contains: str | None = None,
) -> tuple[list[MemoryPublic], bool]:
    """A page of the user's memories and whether another page follows: most important first, or as a
    `timeline` (each slot's values in the order they held, then the unslotted memories). `contains`: only
    memories whose content holds that text (case-insensitive; the console's search box)."""
    rows = (
        db.execute(
            text(
                # the page is chosen first, then its access figures joined: one probe per row shown,
                # not per row of the user (10,000 probes before the sort took most of the time)
                f"SELECT {_COLS} FROM (SELECT * FROM memories WHERE tenant_id = :t AND user_id = :u "
                "AND status = ANY(:st) AND (CAST(:kinds AS text[]) IS NULL OR kind = ANY(:kinds)) "
                "AND (CAST(:cat AS text) IS NULL OR category = :cat) "
                "AND (CAST(:slot AS text) IS NULL OR slot = :slot) "
                "AND (CAST(:like AS text) IS NULL OR content ILIKE :like) "
                f"ORDER BY {_ORDER[order]} LIMIT :n OFFSET :o) {_FROM} ORDER BY {_ORDER[order]}"
            ),
            {
                "t": tenant_id,
                "u": user_id,
                "st": list(statuses),
                "kinds": list(kinds) if kinds else None,
                "cat": category,
                "slot": slot,
                "like": _like(contains),
                "n": limit + 1,
                "o": offset,
            },
        )
        .mappings()
        .all()
    )
    return _public(rows[:limit], half_lives(db, tenant_id)), len(rows) > limit


def _like(contains: str | None) -> str | None:
    if not contains:
        return None
    escaped = contains.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def memories_as_of(
    db: Session,
    tenant_id: str,
    user_id: str,
    at: datetime,
    *,
    contains: str | None = None,
    limit: int = 100,
) -> tuple[list[dict[str, Any]], bool]:
    """What was known about the user at `at`: the memories recorded by then and not yet closed (superseded,
    consolidated, archived or forgotten) by then, each with the content it had then (the `before` snapshot
    of its first later edit, if any), most important first; and whether more follow."""
    known = (
        "SELECT m.id, m.kind, m.scope, m.category, m.slot, m.importance, m.recorded_at, m.valid_from, m.content "
        "FROM memories m WHERE m.tenant_id = :t AND m.user_id = :u AND m.recorded_at <= :at "
        "AND (m.valid_to IS NULL OR m.valid_to > :at) AND (m.archived_at IS NULL OR m.archived_at > :at)"
    )
    then = (
        "coalesce((SELECT h.before->>'content' FROM memory_history h WHERE h.memory_id = k.id "
        "AND h.created_at > :at AND h.before ? 'content' ORDER BY h.id LIMIT 1), k.content) AS content"
    )
    order = "ORDER BY importance DESC, recorded_at DESC, id"
    cols = "k.id, k.kind, k.scope, k.category, k.slot, k.importance, k.recorded_at, k.valid_from"
    if contains:  # the text then is what is searched: each known memory's content then, then the page
        sql = (
            f"SELECT * FROM (SELECT {cols}, {then} FROM ({known}) k) known "
            f"WHERE content ILIKE :like {order} LIMIT :n"
        )
    else:  # the page first, then the content each of its memories had then
        sql = f"SELECT {cols}, {then} FROM ({known} {order} LIMIT :n) k {order}"
    rows = (
        db.execute(
            text(sql), {"t": tenant_id, "u": user_id, "at": at, "like": _like(contains), "n": limit + 1}
        )
        .mappings()
        .all()
    )
    return [dict(r) for r in rows[:limit]], len(rows) > limit
