"""Distillation of one user's fragments, with the LLM when configured (one batched call per user per run)
and deterministically otherwise. Fragments become `consolidated`; the new memory carries the lineage.

`distill_users` is the whole run of the `memory.distill` task: per user a run record, then one transaction
under the per-user lock that distills the fragments and rewrites the working memory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import Engine, text
from sqlmodel import Session

from core import keywords
from core.distill import Consolidated, Fragment, cluster, consolidate
from core.reconcile import content_key
from shared.contract import utcnow
from shared.db.engine import ALL_TENANTS, session_scope
from shared.db.vectors import vector_literal
from shared.tokens import estimate_tokens
from store.embeddings import Embedder
from store.memories import _SNAPSHOT, HALF_LIFE_DAYS, lock_user
from store.runs import finish_run, last_run_start, start_run
from worker.llm.extractor import LLMExtractor
from worker.services.runs import slot_key
from worker.services.sleep import rewrite_working_memory

log = structlog.get_logger("worker.maintenance")  # the logger the task's lines always came from

DISTILL_PROMPT_VERSION = "distill-v1"
_SYSTEM = (
    "You consolidate an assistant's long-term memory about one user. You get clusters of related memory "
    "fragments, each with an id. For each cluster write one (or, if it mixes separate topics, a few) clear, "
    "standalone third-person memories in the language of the fragments, keeping every concrete fact "
    "(names, versions, dates, outcomes, lessons) and dropping repetition. Every output must list in "
    "`covers` the ids of the fragments it replaces; leave out fragments you cannot merge faithfully. "
    'Reply with JSON only: {"memories": [{"content": str, "kind": "semantic"|"episodic"|"procedural", '
    '"category": "profile"|"preference"|"constraint"|"decision"|"lesson"|"feedback"|"fact", "covers": [id]}]}'
)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=4000)
    kind: str = Field(pattern="^(semantic|episodic|procedural)$")
    category: str = Field(pattern="^(profile|preference|constraint|decision|lesson|feedback|fact)$")
    covers: list[str] = Field(min_length=1)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    memories: list[_Out]


@dataclass
class DistillResult:
    clusters: int
    consolidated: int  # fragments that became `consolidated`
    created: int  # new consolidated memories
    tokens: int
    mode: str  # deterministic | llm | mixed
    errors: list[str]


def load_fragments(db: Session, tenant_id: str, user_id: str) -> list[Fragment]:
    rows = db.execute(
        text(
            "SELECT id, kind, category, content, evidence_count, importance, last_confirmed_at, recorded_at, "
            "embedding::text AS emb, source_event_ids, source_turn_ids, slot, valid_from FROM memories "
            "WHERE tenant_id = :t AND user_id = :u AND status = 'active' AND NOT pinned AND slot IS NULL "
            "ORDER BY recorded_at, id"
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


def _llm_rewrite(
    llm: LLMExtractor, clusters: Sequence[Sequence[Fragment]], *, token_cap: int
) -> tuple[list[Consolidated], int, str | None]:
    """One call for all clusters; returns the validated rewrites (covering 2+ fragments each), tokens used."""
    lines = []
    for n, members in enumerate(clusters, 1):
        lines.append(f"## Cluster {n}")
        lines += [f"[{m.id}] ({m.kind}/{m.category}) {m.content}" for m in members]
    prompt = "\n".join(lines)
    if estimate_tokens(_SYSTEM + prompt) > token_cap:
        return [], 0, "token cap for this run reached"
    content, usage, error = llm.complete_json(
        [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}]
    )
    tokens = usage.prompt_tokens + usage.completion_tokens
    if error or not content:
        return [], tokens, error or "empty answer"
    try:
        answer = _Answer.model_validate_json(content)
    except ValidationError as exc:
        return [], tokens, f"invalid answer: {exc.error_count()} errors"
    by_id = {m.id: m for members in clusters for m in members}
    used: set[str] = set()
    out = []
    for item in answer.memories:
        covered = [by_id[i] for i in dict.fromkeys(item.covers) if i in by_id and i not in used]
        if len(covered) < 2:
            continue  # an output that merges nothing (or names unknown ids) changes nothing
        used.update(m.id for m in covered)
        base = consolidate(covered)
        out.append(
            Consolidated(
                content=item.content.strip(),
                kind=item.kind,
                category=item.category,
                importance=base.importance,
                evidence_count=base.evidence_count,
                consolidated_from=base.consolidated_from,
                source_event_ids=base.source_event_ids,
                source_turn_ids=base.source_turn_ids,
                valid_from=base.valid_from,
            )
        )
    return out, tokens, None


_SNAPSHOT_COLUMNS = ", ".join(_SNAPSHOT)


def _snapshot_of(row: Any) -> dict[str, Any]:
    """A row's `_SNAPSHOT` columns exactly as `memories.snapshot` puts them into history."""
    return cast(dict[str, Any], json.loads(json.dumps({k: row._mapping[k] for k in _SNAPSHOT}, default=str)))


def _text_array(key: str, cast_to: str = "text") -> str:
    """SQL for the JSON array at `e.j -> key` as a PostgreSQL array, in order."""
    return (
        f"ARRAY(SELECT CAST(x AS {cast_to}) FROM jsonb_array_elements_text(e.j -> '{key}') "
        "WITH ORDINALITY AS a(x, n) ORDER BY n)"
    )


# One statement for every rewrite of a user: insert the new memories (RETURNING their snapshot), mark the
# fragments consolidated, superseded by the memory that covers them (RETURNING the row after), and the
# fragments' rows before (every CTE sees the table as it was before the statement). Rows arrive as one
# JSON array (one parameter: no per-element array quoting on the client).
_WRITE_CONSOLIDATED = text(
    "WITH e AS (SELECT j, n FROM jsonb_array_elements(CAST(:rows AS jsonb)) WITH ORDINALITY AS x(j, n)), "
    "ins AS (INSERT INTO memories (tenant_id, user_id, scope, kind, category, content, content_key, "
    "  importance, confidence, evidence_count, status, valid_from, recorded_at, last_confirmed_at, "
    "  half_life_days, source_event_ids, source_turn_ids, consolidated_from, embedding, search_tokens) "
    "  SELECT :t, :u, 'user', e.j ->> 'kind', e.j ->> 'category', e.j ->> 'content', e.j ->> 'key', "
    "  CAST(CAST(e.j ->> 'importance' AS float8) AS real), 0.8, CAST(e.j ->> 'evidence' AS integer), "
    "  'active', CAST(e.j ->> 'valid_from' AS timestamptz), :now, :now, "
    "  CAST(CAST(e.j ->> 'half_life' AS float8) AS real), "
    f"  {_text_array('events')}, {_text_array('turns')}, {_text_array('from', 'uuid')}, "
    "  CAST(e.j ->> 'vector' AS vector), to_tsvector('simple', e.j ->> 'doc') FROM e ORDER BY e.n "
    f"  RETURNING id, consolidated_from, {_SNAPSHOT_COLUMNS}), "
    "src AS (SELECT f.fid, ins.id AS nid FROM ins, unnest(ins.consolidated_from) AS f(fid)), "
    f"was AS (SELECT id, {_SNAPSHOT_COLUMNS} FROM memories WHERE id IN (SELECT fid FROM src)), "
    "upd AS (UPDATE memories m SET status = 'consolidated', superseded_by = src.nid, updated_at = :now "
    "  FROM src WHERE m.id = src.fid AND m.status = 'active' "
    f"  RETURNING m.id, {', '.join(f'm.{c}' for c in _SNAPSHOT)}) "
    f"SELECT 'new' AS side, CAST(consolidated_from[1] AS text) AS first, id, {_SNAPSHOT_COLUMNS} FROM ins "
    f"UNION ALL SELECT 'before', NULL, id, {_SNAPSHOT_COLUMNS} FROM was "
    f"UNION ALL SELECT 'after', NULL, id, {_SNAPSHOT_COLUMNS} FROM upd"
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


def apply_consolidated(
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
            "half_life": HALF_LIFE_DAYS.get(c.kind),
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
        history.append(_history_row(nid, "consolidate", None, _snapshot_of(row), reason, c.source_event_ids))
        for fid in c.consolidated_from:
            was = by_side["before"].get(fid)
            now_row = by_side["after"].get(fid, was)  # a fragment no longer active is left as it was
            history.append(
                _history_row(
                    fid,
                    "consolidated",
                    _snapshot_of(was) if was is not None else None,
                    _snapshot_of(now_row) if now_row is not None else None,
                    f"merged into {nid}",
                    (),
                )
            )
    db.execute(
        _WRITE_HISTORY,
        {"rows": json.dumps(history), "t": tenant_id, "u": user_id, "actor": actor, "now": now},
    )
    return new_ids


def distill_user(
    db: Session,
    tenant_id: str,
    user_id: str,
    *,
    embedder: Embedder,
    llm: LLMExtractor | None,
    now: datetime,
    actor: str,
    new_since: datetime | None,
    token_cap: int,
) -> DistillResult:
    """Cluster and rewrite one user's fragments (caller holds the per-user lock and commits)."""
    fragments = load_fragments(db, tenant_id, user_id)
    clusters = cluster(fragments, new_since=new_since)
    if not clusters:
        return DistillResult(0, 0, 0, 0, "deterministic" if llm is None else "llm", [])
    errors: list[str] = []
    rewrites: list[Consolidated] = []
    tokens = 0
    mode = "deterministic"
    if llm is not None:
        rewrites, tokens, error = _llm_rewrite(llm, clusters, token_cap=token_cap)
        mode = "llm"
        if error:
            errors.append(f"llm: {error}; deterministic path used")
            mode = "deterministic"
    if not rewrites and mode == "deterministic":
        rewrites = [consolidate(members) for members in clusters]
    # with the LLM, fragments it left out stay active, as promised: no deterministic merge behind its back
    vectors = embedder.embed([r.content for r in rewrites])
    apply_consolidated(
        db,
        tenant_id,
        user_id,
        rewrites,
        vecs=[vector_literal(v) for v in vectors],
        actor=actor,
        now=now,
        mode=mode,
    )
    return DistillResult(
        clusters=len(clusters),
        consolidated=sum(len(r.consolidated_from) for r in rewrites),
        created=len(rewrites),
        tokens=tokens,
        mode=mode,
        errors=errors,
    )


def users_to_distill(db: Session, *, min_fragments: int = 2) -> list[tuple[str, str]]:
    """Users with at least `min_fragments` unslotted active fragments recorded since their last distill run."""
    rows = db.execute(
        text(
            "SELECT m.tenant_id, m.user_id FROM memories m "
            "LEFT JOIN LATERAL (SELECT max(started_at) AS last FROM consolidation_runs r WHERE r.kind = 'distill' "
            "  AND r.tenant_id = m.tenant_id AND r.user_id = m.user_id AND r.outcome IN ('ok', 'partial')) lr ON true "
            "WHERE m.status = 'active' AND m.slot IS NULL AND NOT m.pinned "
            "GROUP BY m.tenant_id, m.user_id "
            "HAVING count(*) >= :n AND max(m.recorded_at) > coalesce(max(lr.last), '-infinity'::timestamptz)"
        ),
        {"n": min_fragments},
    ).all()
    return [(r[0], r[1]) for r in rows]


_TOTALS = ("clusters", "consolidated", "created", "tokens", "errors", "working_memory")


def distill_users(
    engine: Engine,
    *,
    only: tuple[str, str] | None,
    actor: str,
    fire_time: str | None,
    token_cap: int,
    embedder: Embedder,
    llm: LLMExtractor | None,
) -> dict[str, int]:
    """Distill `only` this (tenant, user), or every user with new fragments, and rewrite their working
    memory. Each user gets a run record (its slot, for a scheduled run, runs once) and one transaction
    under the per-user lock; a user that fails is recorded and skipped. The LLM is used while the tenant's
    `token_cap` for this run lasts. Returns the totals over the users distilled."""
    if only is not None:
        users = [only]
    else:
        with session_scope(engine, tenant=ALL_TENANTS) as db:
            users = users_to_distill(db)
    totals = {"users": 0, **dict.fromkeys(_TOTALS, 0)}
    spent: dict[str, int] = {}
    for t, u in users:
        now = utcnow()
        run_id = start_run(
            engine,
            kind="distill",
            scope=f"{t}/{u}",
            actor=actor,
            now=now,
            tenant_id=t,
            user_id=u,
            slot_key=slot_key("distill", fire_time, f":{t}:{u}"),
        )
        if run_id is None:
            continue
        since = last_run_start(engine, kind="distill", tenant_id=t, user_id=u)
        try:
            with session_scope(engine, tenant=t) as db:
                lock_user(db, t, u)  # reconciliation of this user waits; others go on
                cap = max(0, token_cap - spent.get(t, 0))
                result = distill_user(
                    db,
                    t,
                    u,
                    embedder=embedder,
                    llm=llm if cap > 0 else None,
                    now=now,
                    actor=actor,
                    new_since=since,
                    token_cap=cap,
                )
                wm, wm_tokens = rewrite_working_memory(db, t, u, now=now, llm=llm if cap > 0 else None)
        except Exception as exc:
            finish_run(
                engine, run_id, outcome="error", counts={"errors": 1}, now=utcnow(), detail=repr(exc)[:500]
            )
            totals["errors"] += 1
            log.exception("distill.user_failed", tenant_id=t, user_id=u)
            continue
        spent[t] = spent.get(t, 0) + result.tokens + wm_tokens
        counts = {
            "clusters": result.clusters,
            "consolidated": result.consolidated,
            "created": result.created,
            "tokens": result.tokens + wm_tokens,
            "working_memory": int(wm),
            "errors": len(result.errors),
        }
        finish_run(
            engine,
            run_id,
            outcome="partial" if result.errors else "ok",
            counts=counts,
            now=utcnow(),
            mode=result.mode,
            detail="; ".join(result.errors) or None,
        )
        totals["users"] += 1
        for k in _TOTALS:
            totals[k] += counts[k]
    return totals
