"""What distillation reads and writes: a user's fragments (active, unslotted, unpinned memories), the users
that have new ones, and the consolidated memories written over them with their history."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlmodel import Session

from core import keywords
from core.distill import Consolidated, Fragment
from core.reconcile import content_key
from store.memories import SNAPSHOT, SNAPSHOT_COLUMNS, snapshot_of
from store.models import MEMORY_COLUMNS


def count_fragments(db: Session, tenant_id: str, user_id: str) -> int:
    """The user's active user-scope memories without a slot (pinned ones included)."""
    value = db.execute(
        text(
            "SELECT count(*) FROM memories WHERE tenant_id = :t AND user_id = :u AND status = 'active' "
            "AND slot IS NULL AND scope = 'user'"
        ),
        {"t": tenant_id, "u": user_id},
    ).scalar()
    return int(value or 0)


def load_fragments(db: Session, tenant_id: str, user_id: str) -> list[Fragment]:
    """The user's fragments (active, unslotted, unpinned user-scope memories), oldest recorded first: an
    agent's or the app's memories are never folded into the user's own."""
    rows = db.execute(
        text(
            "SELECT id, kind, category, content, evidence_count, importance, last_confirmed_at, recorded_at, "
            "embedding::text AS emb, source_event_ids, source_turn_ids, slot, valid_from FROM memories "
            "WHERE tenant_id = :t AND user_id = :u AND status = 'active' AND NOT pinned AND slot IS NULL "
            "AND scope = 'user' ORDER BY recorded_at, id"
        ),
        {"t": tenant_id, "u": user_id},
    ).all()
    return [
        Fragment(
            id=str(r.id),
            kind=r.kind,
            category=r.category,
            content=r.content,
            evidence_count=r.evidence_count,
            importance=r.importance,
            last_confirmed_at=r.last_confirmed_at,
            recorded_at=r.recorded_at,
            embedding=tuple(json.loads(r.emb)) if r.emb else (),
            source_event_ids=tuple(r.source_event_ids),
            source_turn_ids=tuple(r.source_turn_ids),
            slot=r.slot,
            valid_from=r.valid_from,
        )
        for r in rows
    ]


def _text_array(key: str, cast_to: str = "text") -> str:
    """SQL for the JSON array at `e.j -> key` as a PostgreSQL array, in order."""
    return (
        f"ARRAY(SELECT CAST(x AS {cast_to}) FROM jsonb_array_elements_text(e.j -> '{key}') "
        "WITH ORDINALITY AS a(x, n) ORDER BY n)"
    )


# each column a consolidated memory is written with, and the SQL over its JSON row (`e.j`) that fills it
_CONSOLIDATED_COLUMNS = {
    "tenant_id": ":t",
    "user_id": ":u",
    "scope": "'user'",
    "kind": "e.j ->> 'kind'",
    "category": "e.j ->> 'category'",
    "content": "e.j ->> 'content'",
    "content_key": "e.j ->> 'key'",
    "importance": "CAST(CAST(e.j ->> 'importance' AS float8) AS real)",
    "confidence": "0.8",
    "evidence_count": "CAST(e.j ->> 'evidence' AS integer)",
    "status": "'active'",
    "valid_from": "CAST(e.j ->> 'valid_from' AS timestamptz)",
    "recorded_at": ":now",
    "last_confirmed_at": ":now",
    "source_event_ids": _text_array("events"),
    "source_turn_ids": _text_array("turns"),
    "consolidated_from": _text_array("from", "uuid"),
    "embedding": "CAST(e.j ->> 'vector' AS vector)",
    "search_tokens": "to_tsvector('simple', e.j ->> 'doc')",
}
assert set(_CONSOLIDATED_COLUMNS) <= set(MEMORY_COLUMNS), "a consolidated memory column is not in the model"

# One statement for every rewrite of a user: insert the new memories (RETURNING their snapshot), mark the
# fragments consolidated, superseded by the memory that covers them (RETURNING the row after), and the
# fragments' rows before (every CTE sees the table as it was before the statement). Rows arrive as one
# JSON array (one parameter: no per-element array quoting on the client).
_WRITE_CONSOLIDATED = text(
    "WITH e AS (SELECT j, n FROM jsonb_array_elements(CAST(:rows AS jsonb)) WITH ORDINALITY AS x(j, n)), "
    f"ins AS (INSERT INTO memories ({', '.join(_CONSOLIDATED_COLUMNS)}) "
    f"  SELECT {', '.join(_CONSOLIDATED_COLUMNS.values())} FROM e ORDER BY e.n "
    f"  RETURNING id, consolidated_from, {SNAPSHOT_COLUMNS}), "
    "src AS (SELECT f.fid, ins.id AS nid FROM ins, unnest(ins.consolidated_from) AS f(fid)), "
    f"was AS (SELECT id, {SNAPSHOT_COLUMNS} FROM memories WHERE id IN (SELECT fid FROM src)), "
    "upd AS (UPDATE memories m SET status = 'consolidated', superseded_by = src.nid, updated_at = :now "
    "  FROM src WHERE m.id = src.fid AND m.status = 'active' "
    f"  RETURNING m.id, {', '.join(f'm.{c}' for c in SNAPSHOT)}) "
    f"SELECT 'new' AS side, CAST(consolidated_from[1] AS text) AS first, id, {SNAPSHOT_COLUMNS} FROM ins "
    f"UNION ALL SELECT 'before', NULL, id, {SNAPSHOT_COLUMNS} FROM was "
    f"UNION ALL SELECT 'after', NULL, id, {SNAPSHOT_COLUMNS} FROM upd"
)
_WRITE_HISTORY = text(
    "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, before, after, reason, actor, event_ids, "
    "created_at) "
    "SELECT CAST(e.j ->> 'memory' AS uuid), :t, :u, e.j ->> 'op', e.j -> 'before', e.j -> 'after', "
    f"e.j ->> 'reason', :actor, {_text_array('events')}, :now "
    "FROM jsonb_array_elements(CAST(:rows AS jsonb)) WITH ORDINALITY AS e(j, n) ORDER BY e.n"
)


def _history_row(
    memory_id: str, op: str, before: Any, after: Any, reason: str, events: Sequence[str]
) -> dict[str, Any]:
    row: dict[str, Any] = {"memory": memory_id, "op": op, "reason": reason, "events": list(events)}
    if before:  # as `write_history`: an empty snapshot is stored as NULL (a missing key reads as NULL)
        row["before"] = before
    if after:
        row["after"] = after
    return row


def write_consolidated(
    db: Session,
    tenant_id: str,
    user_id: str,
    rewrites: Sequence[Consolidated],
    *,
    vecs: Sequence[str],
    actor: str,
    now: datetime,
    mode: str,
) -> list[str]:
    """Write the rewrites of one user (disjoint sets of fragments) in two statements: the new memories and
    the fragments marked `consolidated`, then every history row. Rows and history are those of writing
    each rewrite in turn: per rewrite a `consolidate` row for the new memory, then a `consolidated` row per
    fragment in `consolidated_from` order. Returns the new memories' ids, in the order of `rewrites`."""
    if not rewrites:
        return []
    rows = [
        {
            "kind": c.kind,
            "category": c.category,
            "content": c.content,
            "key": content_key(c.content),
            "importance": c.importance,
            "evidence": c.evidence_count,
            "valid_from": c.valid_from.isoformat(),
            "events": list(c.source_event_ids),
            "turns": list(c.source_turn_ids),
            "from": list(c.consolidated_from),
            "vector": v,
            "doc": keywords.document(c.content),
        }
        for c, v in zip(rewrites, vecs, strict=True)
    ]
    out = db.execute(
        _WRITE_CONSOLIDATED, {"rows": json.dumps(rows), "t": tenant_id, "u": user_id, "now": now}
    )
    by_side: dict[str, dict[str, Any]] = {"new": {}, "before": {}, "after": {}}
    for r in out:
        by_side[r.side][r.first if r.side == "new" else str(r.id)] = r
    # the rewrites cover disjoint fragments: its first fragment names a rewrite's new memory
    new_rows = [by_side["new"][c.consolidated_from[0]] for c in rewrites]
    new_ids = [str(r.id) for r in new_rows]
    history = []
    for c, row, nid in zip(rewrites, new_rows, new_ids, strict=True):
        reason = f"{mode} distillation of {len(c.consolidated_from)} fragments"
        history.append(_history_row(nid, "consolidate", None, snapshot_of(row), reason, c.source_event_ids))
        for fid in c.consolidated_from:
            was = by_side["before"].get(fid)
            now_row = by_side["after"].get(fid, was)  # a fragment no longer active is left as it was
            history.append(
                _history_row(
                    fid,
                    "consolidated",
                    snapshot_of(was) if was is not None else None,
                    snapshot_of(now_row) if now_row is not None else None,
                    f"merged into {nid}",
                    (),
                )
            )
    db.execute(
        _WRITE_HISTORY,
        {"rows": json.dumps(history), "t": tenant_id, "u": user_id, "actor": actor, "now": now},
    )
    return new_ids


def users_to_distill(db: Session, *, min_fragments: int = 2) -> list[tuple[str, str]]:
    """Users with at least `min_fragments` unslotted active fragments recorded since their last distill run."""
    rows = db.execute(
        text(
            "SELECT m.tenant_id, m.user_id FROM memories m "
            "LEFT JOIN LATERAL (SELECT max(started_at) AS last FROM consolidation_runs r WHERE r.kind = 'distill' "
            "  AND r.tenant_id = m.tenant_id AND r.user_id = m.user_id AND r.outcome IN ('ok', 'partial')) lr ON true "
            "WHERE m.status = 'active' AND m.slot IS NULL AND NOT m.pinned AND m.scope = 'user' "
            "GROUP BY m.tenant_id, m.user_id "
            "HAVING count(*) >= :n AND max(m.recorded_at) > coalesce(max(lr.last), '-infinity'::timestamptz)"
        ),
        {"n": min_fragments},
    ).all()
    return [(r[0], r[1]) for r in rows]
