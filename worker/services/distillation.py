"""Distillation of one user's fragments, with the LLM when configured (one batched call per user per run)
and deterministically otherwise. Fragments become `consolidated`; the new memory carries the lineage."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import text
from sqlmodel import Session

from shared.tokens import estimate_tokens
from worker.embeddings import Embedder
from worker.extraction.llm import LLMExtractor
from worker.memory import keywords
from worker.memory.distill import Consolidated, Fragment, cluster, consolidate
from worker.memory.reconcile import content_key
from worker.services.memories import HALF_LIFE_DAYS, snapshot, vector_literal, write_history

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


def apply_consolidated(
    db: Session,
    tenant_id: str,
    user_id: str,
    c: Consolidated,
    *,
    vec: str,
    actor: str,
    now: datetime,
    mode: str,
) -> str:
    new_id = str(
        db.execute(
            text(
                "INSERT INTO memories (tenant_id, user_id, scope, kind, category, content, content_key, importance, "
                "confidence, evidence_count, status, valid_from, recorded_at, last_confirmed_at, half_life_days, "
                "source_event_ids, source_turn_ids, consolidated_from, embedding, search_tokens) VALUES (:t, :u, "
                "'user', :kind, :cat, :content, :key, :imp, 0.8, :ev, 'active', :vf, :now, :now, :hl, :se, :st, "
                "CAST(:cf AS uuid[]), CAST(:v AS vector), to_tsvector('simple', :doc)) RETURNING id"
            ),
            {
                "t": tenant_id,
                "u": user_id,
                "kind": c.kind,
                "cat": c.category,
                "content": c.content,
                "key": content_key(c.content),
                "imp": c.importance,
                "ev": c.evidence_count,
                "vf": c.valid_from,
                "now": now,
                "hl": HALF_LIFE_DAYS.get(c.kind),
                "se": list(c.source_event_ids),
                "st": list(c.source_turn_ids),
                "cf": list(c.consolidated_from),
                "v": vec,
                "doc": keywords.document(c.content),
            },
        ).scalar_one()
    )
    write_history(
        db,
        memory_id=new_id,
        tenant_id=tenant_id,
        user_id=user_id,
        op="consolidate",
        before=None,
        after=snapshot(db, new_id),
        reason=f"{mode} distillation of {len(c.consolidated_from)} fragments",
        actor=actor,
        event_ids=c.source_event_ids,
        now=now,
    )
    for fid in c.consolidated_from:
        before = snapshot(db, fid)
        db.execute(
            text(
                "UPDATE memories SET status = 'consolidated', superseded_by = :n, updated_at = :now "
                "WHERE id = :id AND status = 'active'"
            ),
            {"n": new_id, "now": now, "id": fid},
        )
        write_history(
            db,
            memory_id=fid,
            tenant_id=tenant_id,
            user_id=user_id,
            op="consolidated",
            before=before,
            after=snapshot(db, fid),
            reason=f"merged into {new_id}",
            actor=actor,
            event_ids=(),
            now=now,
        )
    return new_id


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
    for r, v in zip(rewrites, vectors, strict=True):
        apply_consolidated(db, tenant_id, user_id, r, vec=vector_literal(v), actor=actor, now=now, mode=mode)
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
