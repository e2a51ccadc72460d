"""The memory store's shell: per-user serialization, reconciliation applied in one transaction with history.

`reconcile_user` takes a Postgres advisory transaction lock for (tenant, user), so concurrent workers on
the same user queue up while different users run in parallel; the partial unique index on active slots is
the last line of defence for invariant 3.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy import Connection, text
from sqlmodel import Session

from shared.db.engine import SESSION_DEFAULTS, has_session_defaults
from worker.embeddings import Embedder
from worker.memory import keywords
from worker.memory.reconcile import CandidateIn, Decision, Existing, Op, Policy, content_key, decide, judged

HALF_LIFE_DAYS = {"semantic": None, "episodic": 30.0, "procedural": 90.0}
NEIGHBOURS = 5
_SNAPSHOT = (
    "content",
    "kind",
    "category",
    "slot",
    "value",
    "status",
    "valid_from",
    "valid_to",
    "evidence_count",
    "importance",
    "confidence",
    "pinned",
    "expires_at",
    "superseded_by",
)


def user_lock_key(tenant_id: str, user_id: str) -> int:
    """A stable signed 64-bit key for pg_advisory_xact_lock."""
    digest = hashlib.blake2b(f"{tenant_id}\x00{user_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_user(db: Session, tenant_id: str, user_id: str) -> None:
    db.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": user_lock_key(tenant_id, user_id)})


def vector_literal(vec: Sequence[float]) -> str:
    """pgvector's text form, six decimals (one %-format over a template: 1.5x faster than a join)."""
    return _vector_template(len(vec)) % tuple(vec)


@functools.lru_cache(maxsize=8)
def _vector_template(dim: int) -> str:
    return "[" + ",".join(["%.6f"] * dim) + "]"


def importance_of(tier: str, kind: str, category: str) -> float:
    base = 0.9 if tier == "must" else 0.6
    if kind == "procedural" or category in ("constraint", "feedback"):
        base += 0.05
    return min(1.0, base)


@dataclass
class CandidateRowIn:
    id: int
    agent_id: str | None
    op: str
    content: str
    kind: str
    category: str
    tier: str
    slot: str | None
    value: str | None
    confidence: float
    lang: str
    source_event_ids: list[str]
    source_turn_ids: list[str]
    event_time: datetime


def load_new_candidates(
    db: Session, tenant_id: str, user_id: str, *, limit: int = 200
) -> list[CandidateRowIn]:
    rows = db.execute(
        text(
            "SELECT id, agent_id, op, content, kind, category, tier, slot, value, confidence, lang, "
            "source_event_ids, source_turn_ids, event_time FROM candidates "
            "WHERE tenant_id = :t AND user_id = :u AND status = 'new' ORDER BY event_time, id LIMIT :n"
        ),
        {"t": tenant_id, "u": user_id, "n": limit},
    ).all()
    return [CandidateRowIn(*r) for r in rows]


def _existing(row: Any, similarity: float = 0.0) -> Existing:
    return Existing(
        id=str(row.id),
        content=row.content,
        kind=row.kind,
        status=row.status,
        valid_from=row.valid_from,
        valid_to=row.valid_to,
        slot=row.slot,
        value=row.value,
        similarity=similarity,
        source_event_ids=tuple(row.source_event_ids or ()),
    )


def set_search_params(db: Session | Connection, *, ef_search: int) -> None:
    """This transaction's HNSW search breadth and iterative scans (SET LOCAL). A connection from
    `get_engine` starts with iterative scans and the default breadth (`SESSION_DEFAULTS`): no round trip
    when that breadth is asked for."""
    conn = db.connection() if isinstance(db, Session) else db
    if str(int(ef_search)) == SESSION_DEFAULTS["hnsw.ef_search"] and has_session_defaults(conn):
        return
    db.execute(
        text(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', :ef, true)"
        ),
        {"ef": str(int(ef_search))},
    )


def nearest(db: Session, tenant_id: str, user_id: str, vec: str, *, k: int = NEIGHBOURS) -> list[Existing]:
    rows = db.execute(
        text(
            "SELECT id, content, kind, status, valid_from, valid_to, slot, value, source_event_ids, "
            "1 - (embedding <=> CAST(:v AS vector)) AS sim FROM memories "
            "WHERE tenant_id = :t AND user_id = :u AND status = 'active' "
            "ORDER BY embedding <=> CAST(:v AS vector) LIMIT :k"
        ),
        {"t": tenant_id, "u": user_id, "v": vec, "k": k},
    ).all()
    return [_existing(r, float(r.sim or 0.0)) for r in rows]


def slot_rows(db: Session, tenant_id: str, user_id: str, slot: str) -> list[Existing]:
    rows = db.execute(
        text(
            "SELECT id, content, kind, status, valid_from, valid_to, slot, value, source_event_ids FROM memories "
            "WHERE tenant_id = :t AND user_id = :u AND slot = :s AND status <> 'deleted' "
            "ORDER BY valid_from FOR UPDATE"
        ),
        {"t": tenant_id, "u": user_id, "s": slot},
    ).all()
    return [_existing(r) for r in rows]


def snapshot(db: Session, memory_id: str) -> dict[str, Any] | None:
    row = (
        db.execute(text(f"SELECT {', '.join(_SNAPSHOT)} FROM memories WHERE id = :id"), {"id": memory_id})
        .mappings()
        .first()
    )
    return json.loads(json.dumps(dict(row), default=str)) if row else None


def write_history(
    db: Session,
    *,
    memory_id: str,
    tenant_id: str,
    user_id: str,
    op: str,
    before: Any,
    after: Any,
    reason: str,
    actor: str,
    event_ids: Sequence[str],
    now: datetime,
) -> None:
    db.execute(
        text(
            "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, before, after, reason, actor, "
            "event_ids, created_at) VALUES (:m, :t, :u, :op, CAST(:b AS jsonb), CAST(:a AS jsonb), :r, :actor, "
            ":e, :now)"
        ),
        {
            "m": memory_id,
            "t": tenant_id,
            "u": user_id,
            "op": op,
            "b": json.dumps(before) if before else None,
            "a": json.dumps(after) if after else None,
            "r": reason,
            "actor": actor,
            "e": list(event_ids),
            "now": now,
        },
    )


def insert_memory(
    db: Session,
    tenant_id: str,
    user_id: str,
    c: CandidateRowIn,
    vec: str,
    *,
    now: datetime,
    status: str = "active",
    valid_to: datetime | None = None,
    superseded_by: str | None = None,
) -> str:
    row = db.execute(
        text(
            "INSERT INTO memories (tenant_id, user_id, scope, kind, category, content, content_key, lang, slot, "
            "value, importance, confidence, status, valid_from, valid_to, recorded_at, last_confirmed_at, "
            "superseded_by, half_life_days, source_event_ids, source_turn_ids, embedding, search_tokens) "
            "VALUES (:t, :u, 'user', :kind, :cat, :content, :key, :lang, :slot, :value, :imp, :conf, :status, "
            ":vf, :vt, :now, :now, :sb, :hl, :se, :st, CAST(:v AS vector), to_tsvector('simple', :doc)) "
            "RETURNING id"
        ),
        {
            "t": tenant_id,
            "u": user_id,
            "kind": c.kind,
            "cat": c.category,
            "content": c.content,
            "key": content_key(c.content),
            "lang": c.lang,
            "slot": c.slot,
            "value": c.value,
            "imp": importance_of(c.tier, c.kind, c.category),
            "conf": c.confidence,
            "status": status,
            "vf": c.event_time,
            "vt": valid_to,
            "now": now,
            "sb": superseded_by,
            "hl": HALF_LIFE_DAYS.get(c.kind),
            "se": c.source_event_ids,
            "st": c.source_turn_ids,
            "v": vec,
            "doc": keywords.document(c.content),
        },
    ).scalar_one()
    return str(row)


class _HistoryCommon(TypedDict):
    """The `write_history` arguments shared by every history row one decision writes."""

    tenant_id: str
    user_id: str
    actor: str
    event_ids: Sequence[str]
    now: datetime


def apply_decision(
    db: Session,
    tenant_id: str,
    user_id: str,
    c: CandidateRowIn,
    d: Decision,
    vec: str,
    *,
    actor: str,
    now: datetime,
) -> str | None:
    """Apply one decision with its history rows; return the memory the candidate ended up in."""
    hist: _HistoryCommon = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "actor": actor,
        "event_ids": c.source_event_ids,
        "now": now,
    }
    if d.op == Op.ADD:
        mid = insert_memory(db, tenant_id, user_id, c, vec, now=now)
        write_history(
            db, memory_id=mid, op="add", before=None, after=snapshot(db, mid), reason=d.reason, **hist
        )
        return mid
    if d.op == Op.REINFORCE:
        mid = d.target_ids[0]
        before = snapshot(db, mid)
        db.execute(
            text(
                "UPDATE memories SET evidence_count = evidence_count + 1, last_confirmed_at = :now, "
                "confidence = GREATEST(confidence, :conf), updated_at = :now, "
                "source_event_ids = ARRAY(SELECT DISTINCT unnest(source_event_ids || CAST(:se AS text[]))), "
                "source_turn_ids = ARRAY(SELECT DISTINCT unnest(source_turn_ids || CAST(:st AS text[]))) "
                "WHERE id = :id"
            ),
            {"now": now, "conf": c.confidence, "se": c.source_event_ids, "st": c.source_turn_ids, "id": mid},
        )
        write_history(
            db, memory_id=mid, op="reinforce", before=before, after=snapshot(db, mid), reason=d.reason, **hist
        )
        return mid
    if d.op == Op.SUPERSEDE:
        old = d.target_ids[0]
        before = snapshot(db, old)
        # close the old row first: the partial unique index allows one active row per slot
        db.execute(
            text(
                "UPDATE memories SET status = 'superseded', valid_to = :vt, updated_at = :now WHERE id = :id"
            ),
            {"vt": c.event_time, "now": now, "id": old},
        )
        mid = insert_memory(db, tenant_id, user_id, c, vec, now=now)
        db.execute(text("UPDATE memories SET superseded_by = :new WHERE id = :id"), {"new": mid, "id": old})
        write_history(
            db, memory_id=old, op="supersede", before=before, after=snapshot(db, old), reason=d.reason, **hist
        )
        write_history(
            db,
            memory_id=mid,
            op="add",
            before=None,
            after=snapshot(db, mid),
            reason=f"supersedes {old}: {d.reason}",
            **hist,
        )
        return mid
    if d.op == Op.HISTORY:
        mid = insert_memory(
            db,
            tenant_id,
            user_id,
            c,
            vec,
            now=now,
            status="superseded",
            valid_to=d.valid_to,
            superseded_by=d.superseded_by,
        )
        # the row that was current just before this late value now ends where the late value begins
        db.execute(
            text(
                "UPDATE memories SET valid_to = :vf, superseded_by = :mid WHERE tenant_id = :t AND user_id = :u "
                "AND slot = :slot AND id <> :mid AND valid_from < :vf AND (valid_to IS NULL OR valid_to > :vf) "
                "AND status = 'superseded'"
            ),
            {"vf": c.event_time, "mid": mid, "t": tenant_id, "u": user_id, "slot": c.slot},
        )
        write_history(
            db, memory_id=mid, op="history", before=None, after=snapshot(db, mid), reason=d.reason, **hist
        )
        return mid
    if d.op == Op.FORGET:
        for mid in d.target_ids:
            before = snapshot(db, mid)
            db.execute(
                text(
                    "UPDATE memories SET status = 'deleted', valid_to = COALESCE(valid_to, :now), archived_at = :now, "
                    "updated_at = :now WHERE id = :id"
                ),
                {"now": now, "id": mid},
            )
            write_history(
                db,
                memory_id=mid,
                op="forget",
                before=before,
                after=snapshot(db, mid),
                reason=d.reason,
                **hist,
            )
        return None
    return d.target_ids[0] if d.target_ids else None


JUDGE_PROMPT = (
    "You maintain an assistant's long-term memory about one user. For each numbered pair, compare the NEW "
    "statement with the EXISTING memory and answer one verdict: duplicate (same fact), update (the new one "
    "replaces the old, e.g. a changed value), contradiction (they cannot both be true; the new one wins), or "
    'complement (both stay true). Reply with JSON only: {"verdicts": [{"id": int, "verdict": str}]}'
)


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    verdict: Literal["duplicate", "update", "contradiction", "complement"]


class _Verdicts(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdicts: list[_Verdict]


def judge_pairs(llm: Any, pairs: Sequence[tuple[str, str]]) -> tuple[dict[int, str], Any]:
    """One LLM call for every similar-but-unclear pair of a batch; {} on any failure (callers then ADD)."""
    lines = [f"{n}. EXISTING: {old}\n   NEW: {new}" for n, (old, new) in enumerate(pairs)]
    content, usage, error = llm.complete_json(
        [{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": "\n".join(lines)}]
    )
    if error or not content:
        return {}, usage
    try:
        answer = _Verdicts.model_validate_json(content)
    except ValidationError:
        return {}, usage
    return {v.id: v.verdict for v in answer.verdicts if 0 <= v.id < len(pairs)}, usage


def reconcile_user(
    db: Session,
    tenant_id: str,
    user_id: str,
    *,
    embedder: Embedder,
    policy: Policy,
    actor: str,
    now: datetime,
    limit: int = 200,
    llm: Any = None,
) -> dict[str, int]:
    """Reconcile the user's new candidates, oldest event first, under the per-user lock. Caller commits.

    Clear cases are applied one by one; similar-but-unclear ones are judged together in one LLM call at the
    end of the batch (or added, without an LLM)."""
    lock_user(db, tenant_id, user_id)
    cands = load_new_candidates(db, tenant_id, user_id, limit=limit)
    counts: dict[str, int] = {}
    if not cands:
        return counts
    deferred: list[tuple[CandidateRowIn, str, Decision, str]] = []
    vectors = [vector_literal(v) for v in embedder.embed([c.content for c in cands])]
    set_search_params(db, ef_search=100)
    for c, vec in zip(cands, vectors, strict=True):
        cand = CandidateIn(
            content=c.content,
            kind=c.kind,
            op=c.op,
            event_time=c.event_time,
            source_event_ids=tuple(c.source_event_ids),
            slot=c.slot,
            value=c.value,
        )
        rows = slot_rows(db, tenant_id, user_id, c.slot) if c.slot else []
        neighbours = nearest(db, tenant_id, user_id, vec)
        decision = decide(
            cand, neighbours=neighbours, slot_rows=rows, policy=policy, llm_available=llm is not None
        )
        if decision.op == Op.JUDGE:
            target = next(n for n in neighbours if n.id == decision.target_ids[0])
            deferred.append((c, vec, decision, target.content))
            continue
        _apply_and_mark(db, tenant_id, user_id, c, decision, vec, actor=actor, now=now, counts=counts)
    if deferred:
        verdicts, usage = judge_pairs(llm, [(old, c.content) for c, _v, _d, old in deferred])
        counts["llm_calls"] = usage.calls
        counts["llm_tokens"] = usage.prompt_tokens + usage.completion_tokens
        for n, (c, vec, decision, _old) in enumerate(deferred):
            verdict = verdicts.get(n)
            final = (
                judged(decision, verdict)
                if verdict
                else Decision(Op.ADD, decision.reason + "; no LLM verdict")
            )
            _apply_and_mark(db, tenant_id, user_id, c, final, vec, actor=actor, now=now, counts=counts)
    return counts


def _apply_and_mark(
    db: Session,
    tenant_id: str,
    user_id: str,
    c: CandidateRowIn,
    decision: Decision,
    vec: str,
    *,
    actor: str,
    now: datetime,
    counts: dict[str, int],
) -> None:
    memory_id = apply_decision(db, tenant_id, user_id, c, decision, vec, actor=actor, now=now)
    db.execute(
        text("UPDATE candidates SET status = 'reconciled', decision = :d, memory_id = :m WHERE id = :id"),
        {"d": str(decision.op), "m": memory_id, "id": c.id},
    )
    counts[str(decision.op)] = counts.get(str(decision.op), 0) + 1
