"""An event's journey and a memory's lineage (issue 17): the reads behind `GET /v1/events/{id}/trace`,
`GET /v1/memories/{id}/why`, `memctl trace` / `memctl why` and the console, plus the one write they need
(`record_task_trace`, one bounded row per extraction or reconcile task run, migration 0017).

Both reads take a tenant-scoped session (row-level security) and filter on `tenant_id` too; they return None
when the id is unknown to that tenant, else a JSON-serialisable dict (times ISO 8601 strings, ids strings).
No secret value is ever returned: turns are stored redacted, and only the redaction counts by kind are shown.

`event_trace(session, tenant_id, event_id)`::

    {
      "event_id": str,
      "stored": None | {                       # None: the event was never stored (see dead_letters)
        "user_id", "agent_id", "session_id", "role", "type": str | None,
        "event_time", "received_at", "processed_at": str | None,
        "ingested_by": str | None,             # "consumer:<name>" | "api:<key id>" | None (before 0017)
        "status": str,                         # pending | extracted | skipped | llm_pending | failed
        "attempts": int, "llm_error": str | None, "llm_attempts": int,
        "redactions": {kind: count}, "redaction_count": int,
        "content": str | None,                 # None once retention purged the text
        "content_purged": bool, "content_purged_at": str | None, "content_sha256": str | None,
      },
      "windows": [{                            # extraction runs whose window held the event, oldest first
        "task_id": str | None, "task_name": str, "finished_at": str,
        "turn": {"gate": str, "coverage": float | None, "rule_candidates": int, "rules": [str],
                 "llm": "answered" | "failed:<reason>" | "deferred" | "not_needed" | "context",
                 "status": str} | None,
        "summary": {...},                      # the run's task.finished fields (tokens, gate counts, ...)
      }],
      "candidates": [{"id": int, "origin", "rule", "op", "kind", "slot", "value", "content": str | None,
                      "confidence": float, "status", "decision": str | None, "memory_id": str | None,
                      "created_at": str}],
      "decisions": [HISTORY],                  # memory history rows citing the event (add, reinforce,
                                               # supersede, history, forget; not a distillation's)
      "later": [HISTORY],                      # later history of the memories touched (superseded by another
                                               # event, consolidated, archived, purged, forgotten, edited)
      "memories": [{"id", "status", "kind", "content": str | None, "slot", "value", "superseded_by",
                    "consolidated_from": [str], "valid_from", "valid_to", "relation"}],
                                               # relation: "decided" (touched by the event) | "successor"
      "dead_letters": [{"id": int, "task_name", "reason", "count": int, "first_seen", "last_seen",
                        "replayed_at": str | None}],
      "tasks": [TASK],                         # the canonical line of each task named above
    }
    HISTORY = {"id": int, "memory_id": str, "op": str, "reason": str, "actor": str, "task_id": str | None,
               "at": str, "event_ids": [str], "content": str | None}   # content after (or before) the change
    TASK = {"actor": str, "task_id": str | None, "name": str, "stage": str, "finished_at": str | None,
            "outcome": str | None, "summary": {...}}

`memory_why(session, tenant_id, memory_id)`::

    {
      "memory_id": str,
      "memory": None | {"id", "status", "kind", "category", "content", "slot", "value", "scope", "user_id",
                        "superseded_by", "consolidated_from": [str], "source_event_ids": [str],
                        "valid_from", "valid_to", "recorded_at"},   # None once purged (history remains)
      "history": [HISTORY],                    # this memory's own history, oldest first
      "lineage": [{                            # the memory, then what it came from, breadth first
        "memory_id": str, "depth": int, "relation": "self" | "supersedes" | "consolidated_from",
        "via": str | None,                     # the memory one level up: `via` supersedes this node, or was
                                               # consolidated from it
        "exists": bool, "status": str | None, "content": str | None, "source_event_ids": [str],
      }],
      "turns": [{"event_id": str, "found": bool, "session_id", "role", "event_time", "status": str | None,
                 "content": str | None, "content_purged": bool, "content_purged_at": str | None,
                 "content_sha256": str | None, "memory_ids": [str]}],   # the lineage nodes citing it
      "truncated": bool,                       # the lineage or the turns hit their bound
    }
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import text
from sqlmodel import Session

SUMMARY_MAX_BYTES = 8192
TURNS_MAX_BYTES = 60_000
MAX_EVENT_IDS = 1000
MAX_ROWS = 200  # candidates, history rows, windows, memories in one trace
MAX_LINEAGE = 100
MAX_DEPTH = 20
MAX_TURNS = 500
# history ops that are never the event's own decision, even when their row cites it (a distillation cites
# every source event; pruning and purging cite none)
LATER_OPS = frozenset({"consolidate", "consolidated", "archive", "purge"})


# ---------------------------------------------------------------------------------------------- the write


def _fit(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def bounded_summary(summary: Mapping[str, Any], *, max_bytes: int = SUMMARY_MAX_BYTES) -> dict[str, Any]:
    """The task's log fields as JSON, within `max_bytes`: long strings cut, then the biggest fields dropped
    (named in `_dropped`)."""
    out: dict[str, Any] = {}
    for k, v in _fit(dict(summary)).items():
        out[str(k)[:64]] = v[:500] if isinstance(v, str) else v
    dropped: list[str] = []
    while out and _size(out) > max_bytes - 200:
        biggest = max(out, key=lambda k: _size(out[k]))
        dropped.append(biggest)
        del out[biggest]
    if dropped:
        out["_dropped"] = dropped[:10]
    return out


def bounded_turns(
    turns: Mapping[str, Mapping[str, Any]], *, max_bytes: int = TURNS_MAX_BYTES
) -> dict[str, Any]:
    """Per-turn detail within `max_bytes`: turns past the bound are left out (counted in `_left_out`)."""
    out: dict[str, Any] = {}
    used = 2
    left = 0
    for event_id, detail in turns.items():
        entry = _fit(dict(detail))
        cost = _size({event_id: entry})
        if used + cost > max_bytes - 100:
            left += 1
            continue
        out[event_id] = entry
        used += cost
    if left:
        out["_left_out"] = left
    return out


def record_task_trace(
    db: Session,
    *,
    tenant_id: str,
    user_id: str,
    stage: str,
    task_name: str,
    task_id: str | None,
    now: datetime,
    summary: Mapping[str, Any],
    session_id: str | None = None,
    event_ids: Sequence[str] = (),
    turns: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """One row of what a task run did (its `task.finished` fields, its window's event ids and per-turn
    detail), bounded in size; written in the caller's transaction."""
    db.execute(
        text(
            "INSERT INTO task_traces (tenant_id, user_id, session_id, task_id, task_name, stage, finished_at, "
            "event_ids, summary, turns) VALUES (:t, :u, :s, :tid, :name, :stage, :now, :e, "
            "CAST(:summary AS jsonb), CAST(:turns AS jsonb))"
        ),
        {
            "t": tenant_id,
            "u": user_id,
            "s": session_id,
            "tid": task_id[:64] if task_id else None,
            "name": task_name[:64],
            "stage": stage,
            "now": now,
            "e": list(event_ids)[:MAX_EVENT_IDS],
            "summary": json.dumps(bounded_summary(summary), ensure_ascii=False),
            "turns": json.dumps(bounded_turns(turns or {}), ensure_ascii=False),
        },
    )


# ---------------------------------------------------------------------------------------------- helpers


def _j(value: Any) -> Any:
    """A value as JSON gives it back: times ISO strings, UUIDs strings, lists and dicts recursively."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple):
        return [_j(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _j(v) for k, v in value.items()}
    return value


def _rows(db: Session, sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(r) for r in db.execute(text(sql), dict(params)).mappings().all()]


def _task_id(actor: str | None) -> str | None:
    return actor[len("task:") :] if actor and actor.startswith("task:") else None


def _history(row: Mapping[str, Any]) -> dict[str, Any]:
    snap = row.get("after") or row.get("before") or {}
    return {
        "id": int(row["id"]),
        "memory_id": str(row["memory_id"]),
        "op": row["op"],
        "reason": row["reason"],
        "actor": row["actor"],
        "task_id": _task_id(row["actor"]),
        "at": _j(row["created_at"]),
        "event_ids": list(row["event_ids"] or []),
        "content": snap.get("content") if isinstance(snap, dict) else None,
    }


_HISTORY_COLUMNS = "id, memory_id, op, reason, actor, event_ids, created_at, before, after"


def _turn_text(row: Mapping[str, Any]) -> dict[str, Any]:
    purged = row.get("content_purged_at") is not None
    return {
        "content": None if purged else row.get("content"),
        "content_purged": purged,
        "content_purged_at": _j(row.get("content_purged_at")),
        "content_sha256": row.get("content_sha256"),
    }


def _memories(db: Session, tenant_id: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    wanted = sorted({i for i in ids if _is_uuid(i)})
    if not wanted:
        return {}
    rows = _rows(
        db,
        "SELECT id, status, kind, category, content, slot, value, scope, user_id, superseded_by, "
        "consolidated_from, source_event_ids, valid_from, valid_to, recorded_at FROM memories "
        "WHERE tenant_id = :t AND id = ANY(CAST(:ids AS uuid[]))",
        {"t": tenant_id, "ids": wanted},
    )
    return {str(r["id"]): _j(r) for r in rows}


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def _tasks(db: Session, tenant_id: str, actors: Iterable[str]) -> list[dict[str, Any]]:
    """The canonical line of each actor: a task's trace row, else the run record it wrote."""
    out: list[dict[str, Any]] = []
    for actor in dict.fromkeys(a for a in actors if a):
        task_id = _task_id(actor)
        found = False
        if task_id:
            for r in _rows(
                db,
                "SELECT task_id, task_name, stage, finished_at, summary FROM task_traces "
                "WHERE tenant_id = :t AND task_id = :id ORDER BY id LIMIT 5",
                {"t": tenant_id, "id": task_id},
            ):
                found = True
                summary = r["summary"] or {}
                out.append(
                    {
                        "actor": actor,
                        "task_id": task_id,
                        "name": r["task_name"],
                        "stage": r["stage"],
                        "finished_at": _j(r["finished_at"]),
                        "outcome": summary.get("outcome"),
                        "summary": summary,
                    }
                )
        if found:
            continue
        # a run record (distill, prune, purge): the tenant's own, or, for the operator, every tenant's
        for r in _rows(
            db,
            "SELECT kind, finished_at, outcome, counts FROM consolidation_runs WHERE actor = :a "
            "AND (tenant_id IS NULL OR tenant_id = :t) ORDER BY id LIMIT 5",
            {"a": actor, "t": tenant_id},
        ):
            found = True
            out.append(
                {
                    "actor": actor,
                    "task_id": task_id,
                    "name": r["kind"],
                    "stage": r["kind"],
                    "finished_at": _j(r["finished_at"]),
                    "outcome": r["outcome"],
                    "summary": _j(r["counts"] or {}),
                }
            )
        if not found:
            out.append(
                {
                    "actor": actor,
                    "task_id": task_id,
                    "name": None,
                    "stage": None,
                    "finished_at": None,
                    "outcome": None,
                    "summary": {},
                }
            )
    return out


# ---------------------------------------------------------------------------------------------- trace


def event_trace(session: Session, tenant_id: str, event_id: str) -> dict[str, Any] | None:
    """The event's journey (see the module docstring), or None when the tenant has no trace of it."""
    db = session
    p = {"t": tenant_id, "e": event_id}
    event = next(
        iter(
            _rows(
                db,
                "SELECT user_id, agent_id, session_id, role, type, event_time, received_at, processed_at, "
                "ingested_by, status, attempts, llm_error, llm_attempts, redactions, content, "
                "content_purged_at, content_sha256 FROM events WHERE tenant_id = :t AND event_id = :e",
                p,
            )
        ),
        None,
    )
    dead = [
        _j(r)
        for r in _rows(
            db,
            "SELECT id, task_name, reason, count, first_seen, last_seen, replayed_at FROM dead_letters "
            "WHERE tenant_id = :t AND (event_id = :e OR payload->>'event_id' = :e) ORDER BY id LIMIT 20",
            p,
        )
    ]
    if event is None and not dead:
        return None
    trace: dict[str, Any] = {
        "event_id": event_id,
        "stored": None,
        "windows": [],
        "candidates": [],
        "decisions": [],
        "later": [],
        "memories": [],
        "dead_letters": dead,
        "tasks": [],
    }
    if event is None:
        return trace
    redactions = {str(k): int(v) for k, v in (event["redactions"] or {}).items() if isinstance(v, int)}
    trace["stored"] = {
        **{
            k: _j(event[k])
            for k in (
                "user_id",
                "agent_id",
                "session_id",
                "role",
                "type",
                "event_time",
                "received_at",
                "processed_at",
                "ingested_by",
                "status",
                "attempts",
                "llm_error",
                "llm_attempts",
            )
        },
        "redactions": redactions,
        "redaction_count": sum(redactions.values()),
        **_turn_text(event),
    }
    u = {**p, "u": event["user_id"]}
    windows = _rows(
        db,
        "SELECT task_id, task_name, finished_at, summary, turns->:e AS turn FROM task_traces "
        "WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND stage = 'extract' "
        "AND event_ids @> ARRAY[CAST(:e AS text)] ORDER BY finished_at, id LIMIT :n",
        {**u, "s": event["session_id"], "n": MAX_ROWS},
    )
    trace["windows"] = [
        {
            "task_id": w["task_id"],
            "task_name": w["task_name"],
            "finished_at": _j(w["finished_at"]),
            "turn": w["turn"],
            "summary": w["summary"] or {},
        }
        for w in windows
    ]
    candidates = _rows(
        db,
        "SELECT id, origin, rule, op, kind, slot, value, content, confidence, status, decision, memory_id, "
        "created_at FROM candidates WHERE tenant_id = :t AND user_id = :u AND :e = ANY(source_event_ids) "
        "ORDER BY id LIMIT :n",
        {**u, "n": MAX_ROWS},
    )
    trace["candidates"] = [_j(c) for c in candidates]
    decisions = _rows(
        db,
        f"SELECT {_HISTORY_COLUMNS} FROM memory_history WHERE tenant_id = :t AND user_id = :u "
        "AND :e = ANY(event_ids) ORDER BY id LIMIT :n",
        {**u, "n": MAX_ROWS},
    )
    # a distillation's history cites every source event: it is a later change, not the event's decision
    cited_later = [h for h in decisions if h["op"] in LATER_OPS]
    decisions = [h for h in decisions if h["op"] not in LATER_OPS]
    trace["decisions"] = [_history(h) for h in decisions]
    touched = dict.fromkeys(
        [str(h["memory_id"]) for h in decisions] + [str(c["memory_id"]) for c in candidates if c["memory_id"]]
    )
    # follow each touched memory forward (superseded by, consolidated into), bounded
    memories = _memories(db, tenant_id, touched)
    relation = {m: "decided" for m in touched}
    frontier = [m["superseded_by"] for m in memories.values() if m.get("superseded_by")]
    while frontier and len(relation) < MAX_ROWS:
        new = [m for m in dict.fromkeys(frontier) if m not in relation]
        if not new:
            break
        for m in new:
            relation[m] = "successor"
        found = _memories(db, tenant_id, new)
        memories.update(found)
        frontier = [m["superseded_by"] for m in found.values() if m.get("superseded_by")]
    trace["memories"] = [
        {
            **{
                k: memories[m].get(k)
                for k in (
                    "id",
                    "status",
                    "kind",
                    "content",
                    "slot",
                    "value",
                    "superseded_by",
                    "consolidated_from",
                    "valid_from",
                    "valid_to",
                )
            },
            "relation": relation[m],
        }
        if m in memories
        else {"id": m, "status": "purged", "content": None, "relation": relation[m]}
        for m in relation
    ]
    decided_ids = {int(h["id"]) for h in decisions}
    later = (
        _rows(
            db,
            f"SELECT {_HISTORY_COLUMNS} FROM memory_history WHERE tenant_id = :t "
            "AND memory_id = ANY(CAST(:ids AS uuid[])) ORDER BY id LIMIT :n",
            {"t": tenant_id, "ids": [m for m in relation if _is_uuid(m)], "n": MAX_ROWS * 2},
        )
        if relation
        else []
    )
    first = min(decided_ids, default=0)
    rows = {int(h["id"]): h for h in [*later, *cited_later]}
    trace["later"] = [_history(rows[i]) for i in sorted(rows) if i not in decided_ids and i > first][
        :MAX_ROWS
    ]
    actors = [f"task:{w['task_id']}" for w in windows if w["task_id"]]
    actors += [h["actor"] for h in trace["decisions"]] + [h["actor"] for h in trace["later"]]
    trace["tasks"] = _tasks(db, tenant_id, actors)
    return trace


# ---------------------------------------------------------------------------------------------- why


def memory_why(session: Session, tenant_id: str, memory_id: str) -> dict[str, Any] | None:
    """The memory's lineage back to the turns (see the module docstring), or None when the tenant has no
    such memory (neither a row nor history)."""
    db = session
    if not _is_uuid(memory_id):
        return None
    memory_id = str(uuid.UUID(memory_id))
    memory = _memories(db, tenant_id, [memory_id]).get(memory_id)
    history = _rows(
        db,
        f"SELECT {_HISTORY_COLUMNS} FROM memory_history WHERE tenant_id = :t AND memory_id = :m "
        "ORDER BY id LIMIT :n",
        {"t": tenant_id, "m": memory_id, "n": MAX_ROWS},
    )
    if memory is None and not history:
        return None
    nodes: dict[str, dict[str, Any]] = {}
    truncated = False

    def node(mid: str, depth: int, relation: str, via: str | None, row: dict[str, Any] | None) -> None:
        nodes[mid] = {
            "memory_id": mid,
            "depth": depth,
            "relation": relation,
            "via": via,
            "exists": row is not None,
            "status": row.get("status") if row else "purged",
            "content": row.get("content") if row else None,
            "source_event_ids": list(row.get("source_event_ids") or []) if row else [],
        }

    node(memory_id, 0, "self", None, memory)
    frontier = [memory_id]
    rows_by_id: dict[str, dict[str, Any]] = {memory_id: memory} if memory else {}
    depth = 0
    while frontier and depth < MAX_DEPTH:
        depth += 1
        parents: list[tuple[str, str, str]] = []  # (parent id, relation, via)
        for mid in frontier:
            row = rows_by_id.get(mid)
            for src in (row or {}).get("consolidated_from") or []:
                parents.append((str(src), "consolidated_from", mid))
        for r in _rows(
            db,
            "SELECT id, superseded_by, status FROM memories WHERE tenant_id = :t "
            "AND superseded_by = ANY(CAST(:ids AS uuid[])) ORDER BY valid_from, id LIMIT :n",
            {"t": tenant_id, "ids": frontier, "n": MAX_LINEAGE},
        ):
            rel = "consolidated_from" if r["status"] == "consolidated" else "supersedes"
            parents.append((str(r["id"]), rel, str(r["superseded_by"])))
        new = [(p, rel, via) for p, rel, via in dict.fromkeys(parents) if p not in nodes]
        if len(nodes) + len(new) > MAX_LINEAGE:
            new = new[: MAX_LINEAGE - len(nodes)]
            truncated = True
        found = _memories(db, tenant_id, [p for p, _r, _v in new])
        rows_by_id.update(found)
        for p, rel, via in new:
            if p not in nodes:
                node(p, depth, rel, via, found.get(p))
        frontier = [p for p, _r, _v in new if p in found]
    # a purged node keeps the event ids of its history
    gone = [m for m, n in nodes.items() if not n["exists"]]
    if gone:
        for r in _rows(
            db,
            "SELECT memory_id, array_agg(DISTINCT e) AS ids FROM memory_history, unnest(event_ids) AS e "
            "WHERE tenant_id = :t AND memory_id = ANY(CAST(:ids AS uuid[])) GROUP BY memory_id",
            {"t": tenant_id, "ids": gone},
        ):
            nodes[str(r["memory_id"])]["source_event_ids"] = sorted(r["ids"] or [])
    cited: dict[str, list[str]] = {}
    for mid, n in nodes.items():
        for e in n["source_event_ids"]:
            cited.setdefault(e, []).append(mid)
    if len(cited) > MAX_TURNS:
        truncated = True
    wanted = list(cited)[:MAX_TURNS]
    events = {
        r["event_id"]: r
        for r in _rows(
            db,
            "SELECT event_id, session_id, role, event_time, status, content, content_purged_at, content_sha256 "
            "FROM events WHERE tenant_id = :t AND event_id = ANY(:ids)",
            {"t": tenant_id, "ids": wanted},
        )
    }
    turns = []
    for e in wanted:
        ev = events.get(e)
        base: dict[str, Any] = {"event_id": e, "found": ev is not None, "memory_ids": cited[e]}
        if ev is None:
            base.update(session_id=None, role=None, event_time=None, status=None, content=None)
            base.update(content_purged=False, content_purged_at=None, content_sha256=None)
        else:
            base.update(
                session_id=ev["session_id"],
                role=ev["role"],
                event_time=_j(ev["event_time"]),
                status=ev["status"],
                **_turn_text(ev),
            )
        turns.append(base)
    turns.sort(key=lambda t: (t["event_time"] is None, t["event_time"] or "", t["event_id"]))
    return {
        "memory_id": memory_id,
        "memory": memory,
        "history": [_history(h) for h in history],
        "lineage": list(nodes.values()),
        "turns": turns,
        "truncated": truncated,
    }


# ---------------------------------------------------------------------------------------------- lookup


def locate_event(session: Session, event_id: str, *, limit: int = 10) -> list[str]:
    """The tenants (that the session can see) holding an event or a dead letter with this id: `memctl trace`
    without `--tenant`."""
    rows = session.execute(
        text(
            "SELECT tenant_id FROM events WHERE event_id = :e UNION "
            "SELECT tenant_id FROM dead_letters WHERE tenant_id IS NOT NULL AND event_id = :e "
            "ORDER BY 1 LIMIT :n"
        ),
        {"e": event_id, "n": limit},
    )
    return [str(r) for r in rows.scalars().all()]


def locate_memory(
    session: Session, id_or_prefix: str, *, tenant_id: str | None = None, limit: int = 10
) -> list[tuple[str, str]]:
    """(tenant, memory id) of the memories whose id is, or starts with, `id_or_prefix` (at least 4 hex
    characters: the short ids memctl's tables show), a purged one found by its history."""
    prefix = id_or_prefix.strip().lower()
    if len(prefix) < 4 or any(ch not in "0123456789abcdef-" for ch in prefix):
        return []
    rows = session.execute(
        text(
            "SELECT DISTINCT tenant_id, id FROM ("
            "  SELECT tenant_id, id::text AS id FROM memories WHERE id::text LIKE :p "
            "  UNION SELECT tenant_id, memory_id::text FROM memory_history WHERE memory_id::text LIKE :p) x "
            "WHERE CAST(:t AS text) IS NULL OR tenant_id = :t ORDER BY 1, 2 LIMIT :n"
        ),
        {"p": prefix + "%", "t": tenant_id, "n": limit},
    )
    return [(str(t), str(i)) for t, i in rows.all()]
