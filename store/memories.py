"""The memory repository: the per-user lock, reads for reconciliation, inserts, decisions applied with
their history rows.

`lock_user` takes a Postgres advisory transaction lock for (tenant, user), so concurrent workers on the
same user queue up while different users run in parallel; the partial unique index on active slots is the
last line of defence for invariant 3.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypedDict, cast

from sqlalchemy import text
from sqlmodel import Session

from core import keywords
from core.reconcile import Decision, Existing, Op, PendingCandidate, content_key
from core.temporal import infer_expiry
from store.models import MEMORY_COLUMNS
from store.scopes import Owner

NEIGHBOURS = 5
# the columns a history row's `before` / `after` snapshot holds (what a change can alter)
SNAPSHOT = (
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
SNAPSHOT_COLUMNS = ", ".join(SNAPSHOT)
assert set(SNAPSHOT) <= set(MEMORY_COLUMNS), "a snapshot column is not a column of memories"


def user_lock_key(tenant_id: str, user_id: str) -> int:
    """A stable signed 64-bit key for pg_advisory_xact_lock."""
    digest = hashlib.blake2b(f"{tenant_id}\x00{user_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_user(db: Session, tenant_id: str, user_id: str) -> None:
    db.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": user_lock_key(tenant_id, user_id)})


def importance_of(tier: str, kind: str, category: str) -> float:
    base = 0.9 if tier == "must" else 0.6
    if kind == "procedural" or category in ("constraint", "feedback"):
        base += 0.05
    return min(1.0, base)


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


# reconciliation compares a memory with its own owner's rows only: a user's chat never reinforces, supersedes
# or forgets an agent's or the app's memory, and an agent's explicit memory never touches the user's
_SAME_OWNER = "agent_id IS NOT DISTINCT FROM CAST(:a AS varchar)"


def nearest(
    db: Session, tenant_id: str, user_id: str, vec: str, *, k: int = NEIGHBOURS, agent_id: str | None = None
) -> list[Existing]:
    rows = db.execute(
        text(
            "SELECT id, content, kind, status, valid_from, valid_to, slot, value, source_event_ids, "
            "1 - (embedding <=> CAST(:v AS vector)) AS sim FROM memories "
            f"WHERE tenant_id = :t AND user_id = :u AND {_SAME_OWNER} AND status = 'active' "
            "ORDER BY embedding <=> CAST(:v AS vector) LIMIT :k"
        ),
        {"t": tenant_id, "u": user_id, "a": agent_id, "v": vec, "k": k},
    ).all()
    return [_existing(r, float(r.sim or 0.0)) for r in rows]


def naming(
    db: Session, tenant_id: str, user_id: str, value: str, *, agent_id: str | None = None, limit: int = 20
) -> list[Existing]:
    """The owner's current memories whose keywords hold every keyword of `value` (a name the user left):
    `core.reconcile` then keeps those that name it as written."""
    words = keywords.tokens(value)
    if not words:
        return []
    rows = db.execute(
        text(
            "SELECT id, content, kind, status, valid_from, valid_to, slot, value, source_event_ids FROM memories "
            f"WHERE tenant_id = :t AND user_id = :u AND {_SAME_OWNER} AND status = 'active' "
            "AND search_tokens @@ to_tsquery('simple', :q) ORDER BY valid_from DESC LIMIT :k"
        ),
        {"t": tenant_id, "u": user_id, "a": agent_id, "q": " & ".join(f"'{w}'" for w in words), "k": limit},
    ).all()
    return [_existing(r) for r in rows]


def ended_names(db: Session, tenant_id: str, user_id: str) -> list[tuple[str, datetime]]:
    """What the user has said they left (reconciled `end` candidates), with when they said it."""
    rows = db.execute(
        text(
            "SELECT value, event_time FROM candidates WHERE tenant_id = :t AND user_id = :u AND op = 'end' "
            "AND status = 'reconciled' AND value IS NOT NULL"
        ),
        {"t": tenant_id, "u": user_id},
    ).all()
    return [(r.value, r.event_time) for r in rows]


def slot_rows(
    db: Session, tenant_id: str, user_id: str, slot: str, *, agent_id: str | None = None
) -> list[Existing]:
    rows = db.execute(
        text(
            "SELECT id, content, kind, status, valid_from, valid_to, slot, value, source_event_ids FROM memories "
            f"WHERE tenant_id = :t AND user_id = :u AND {_SAME_OWNER} AND slot = :s AND status <> 'deleted' "
            "ORDER BY valid_from FOR UPDATE"
        ),
        {"t": tenant_id, "u": user_id, "a": agent_id, "s": slot},
    ).all()
    return [_existing(r) for r in rows]


def snapshot(db: Session, memory_id: str) -> dict[str, Any] | None:
    row = (
        db.execute(text(f"SELECT {SNAPSHOT_COLUMNS} FROM memories WHERE id = :id"), {"id": memory_id})
        .mappings()
        .first()
    )
    return snapshot_of(row) if row else None


def snapshot_of(row: Any) -> dict[str, Any]:
    """A row's (a mapping or a result row) SNAPSHOT columns as history stores them (JSON: times and ids as
    strings)."""
    columns = getattr(row, "_mapping", row)
    return cast(dict[str, Any], json.loads(json.dumps({k: columns[k] for k in SNAPSHOT}, default=str)))


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


# how a value reaches its column: the vector and the keyword document are converted by PostgreSQL
_INSERT_VALUE = {
    "embedding": "CAST(:embedding AS vector)",
    "search_tokens": "to_tsvector('simple', :search_tokens)",
}


def _check_columns(columns: Iterable[str]) -> None:
    unknown = set(columns) - set(MEMORY_COLUMNS)
    if unknown:
        raise ValueError(f"not columns of memories: {sorted(unknown)}")


def insert_sql(columns: Sequence[str], *, returning: str = "id") -> str:
    """An INSERT INTO memories of these columns (checked against the model), values as named parameters of
    the same names; `embedding` takes a vector literal and `search_tokens` the keyword document."""
    _check_columns(columns)
    values = ", ".join(_INSERT_VALUE.get(c, f":{c}") for c in columns)
    return f"INSERT INTO memories ({', '.join(columns)}) VALUES ({values}) RETURNING {returning}"


def keyword_document(content: str, slot: str | None) -> str:
    """A memory's keyword document: its words, and for a slotted one the attribute it fills ("project.linter"
    -> "linter", "project.test_framework" -> "test framework"), which its own words often leave out: "which
    linter does the repo use?" finds "The user's project uses Ruff."
    """
    if not slot:
        return keywords.document(content)
    return keywords.document(f"{content} {slot.rsplit('.', 1)[-1].replace('_', ' ')}")


def insert_memory(
    db: Session,
    tenant_id: str,
    user_id: str,
    c: PendingCandidate,
    vec: str,
    *,
    now: datetime,
    status: str = "active",
    valid_to: datetime | None = None,
    superseded_by: str | None = None,
    owner: Owner | None = None,
) -> str:
    """Insert one memory of `owner` (default: user scope of `user_id`; the candidate's own `agent_id`, the
    agent that heard it, never makes it agent scope)."""
    owner = owner or Owner("user", user_id)
    # a temporary state ("this week", "明天", "until Friday") expires relative to when it was said
    expiry = infer_expiry(c.content, c.event_time)
    row = {
        "tenant_id": tenant_id,
        "user_id": owner.user_id,
        "scope": owner.scope,
        "agent_id": owner.agent_id,
        "kind": c.kind,
        "category": c.category,
        "content": c.content,
        "content_key": content_key(c.content),
        "lang": c.lang,
        "slot": c.slot,
        "value": c.value,
        "importance": importance_of(c.tier, c.kind, c.category),
        "confidence": c.confidence,
        "status": status,
        "valid_from": c.event_time,
        "valid_to": valid_to,
        "recorded_at": now,
        "last_confirmed_at": now,
        "superseded_by": superseded_by,
        "expires_at": expiry.expires_at if expiry else None,
        "source_event_ids": list(c.source_event_ids),
        "source_turn_ids": list(c.source_turn_ids),
        "origin": c.origin,
        "embedding": vec,
        "search_tokens": keyword_document(c.content, c.slot),
    }
    return str(db.execute(text(_insert_sql_for(tuple(row))), row).scalar_one())


@functools.lru_cache(maxsize=8)
def _insert_sql_for(columns: tuple[str, ...]) -> str:
    return insert_sql(columns)


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
    c: PendingCandidate,
    d: Decision,
    vec: str,
    *,
    actor: str,
    now: datetime,
    owner: Owner | None = None,
) -> str | None:
    """Apply one decision with its history rows; return the memory the candidate ended up in. New rows
    belong to `owner` (default: user scope of `user_id`)."""
    owner = owner or Owner("user", user_id)
    hist: _HistoryCommon = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "actor": actor,
        "event_ids": c.source_event_ids,
        "now": now,
    }
    if d.op == Op.ADD:
        mid = insert_memory(db, tenant_id, user_id, c, vec, now=now, owner=owner)
        write_history(
            db, memory_id=mid, op="add", before=None, after=snapshot(db, mid), reason=d.reason, **hist
        )
        return mid
    if d.op == Op.REINFORCE:
        mid = d.target_ids[0]
        _update_with_history(
            db,
            mid,
            "evidence_count = evidence_count + 1, last_confirmed_at = :now, "
            "confidence = GREATEST(confidence, :conf), updated_at = :now, "
            "source_event_ids = ARRAY(SELECT DISTINCT unnest(source_event_ids || CAST(:se AS text[]))), "
            "source_turn_ids = ARRAY(SELECT DISTINCT unnest(source_turn_ids || CAST(:st AS text[])))",
            {"conf": c.confidence, "se": list(c.source_event_ids), "st": list(c.source_turn_ids)},
            op="reinforce",
            reason=d.reason,
            hist=hist,
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
        mid = insert_memory(db, tenant_id, user_id, c, vec, now=now, owner=owner)
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
            owner=owner,
        )
        # the row that was current just before this late value now ends where the late value begins
        db.execute(
            text(
                "UPDATE memories SET valid_to = :vf, superseded_by = :mid WHERE tenant_id = :t AND user_id = :u "
                f"AND {_SAME_OWNER} AND slot = :slot AND id <> :mid AND valid_from < :vf "
                "AND (valid_to IS NULL OR valid_to > :vf) AND status = 'superseded'"
            ),
            {
                "vf": c.event_time,
                "mid": mid,
                "t": tenant_id,
                "u": user_id,
                "a": owner.agent_id,
                "slot": c.slot,
            },
        )
        write_history(
            db, memory_id=mid, op="history", before=None, after=snapshot(db, mid), reason=d.reason, **hist
        )
        return mid
    if d.op == Op.FORGET:
        for mid in d.target_ids:
            forget(db, mid, reason=d.reason, **hist)
        return None
    if d.op == Op.END:  # what the user left stops being current where they said so; nothing new is stored
        for mid in d.target_ids:
            _update_with_history(
                db,
                mid,
                "status = 'superseded', valid_to = :vt, updated_at = :now",
                {"vt": c.event_time},
                op="end",
                reason=d.reason,
                hist=hist,
            )
        return None
    if d.op == Op.HOLD:  # kept as a candidate only: the slot's current value stays
        return None
    return d.target_ids[0] if d.target_ids else None


def forget(
    db: Session,
    memory_id: str,
    *,
    tenant_id: str,
    user_id: str,
    reason: str,
    actor: str,
    event_ids: Sequence[str],
    now: datetime,
) -> None:
    """Forget one memory: status `deleted`, its validity closed, kept (with its history) until the purge."""
    _update_with_history(
        db,
        memory_id,
        "status = 'deleted', valid_to = COALESCE(valid_to, :now), archived_at = :now, updated_at = :now",
        {},
        op="forget",
        reason=reason,
        hist={"tenant_id": tenant_id, "user_id": user_id, "actor": actor, "event_ids": event_ids, "now": now},
    )


def edit(
    db: Session,
    memory_id: str,
    *,
    tenant_id: str,
    user_id: str,
    changes: dict[str, Any],
    reason: str,
    actor: str,
    now: datetime,
) -> None:
    """Change a memory's own columns (content, pinned, expires_at, kind) with its history row. A new
    `content` must come with its `embedding` (a vector literal): its key and keyword document follow."""
    sets = dict(changes)
    _check_columns(sets)
    if "content" in sets:
        if "embedding" not in sets:
            raise ValueError("a new content needs its embedding")
        slot = db.execute(text("SELECT slot FROM memories WHERE id = :id"), {"id": memory_id}).scalar()
        sets.update(
            content_key=content_key(sets["content"]), search_tokens=keyword_document(sets["content"], slot)
        )
    assignments = ", ".join(f"{k} = {_INSERT_VALUE.get(k, f':{k}')}" for k in sets)
    _update_with_history(
        db,
        memory_id,
        f"{assignments}, updated_at = :now",
        sets,
        op="edit",
        reason=reason,
        hist={"tenant_id": tenant_id, "user_id": user_id, "actor": actor, "event_ids": (), "now": now},
    )


def _update_with_history(
    db: Session,
    memory_id: str,
    assignments: str,
    params: dict[str, Any],
    *,
    op: str,
    reason: str,
    hist: _HistoryCommon,
) -> None:
    """One UPDATE of one memory (`assignments` may use `:now`), with its history row from its snapshots."""
    before = snapshot(db, memory_id)
    db.execute(
        text(f"UPDATE memories SET {assignments} WHERE id = :id"),
        {**params, "now": hist["now"], "id": memory_id},
    )
    write_history(
        db, memory_id=memory_id, op=op, before=before, after=snapshot(db, memory_id), reason=reason, **hist
    )


def remember(
    db: Session,
    tenant_id: str,
    owner: Owner,
    c: PendingCandidate,
    vec: str,
    *,
    policy: Any,
    actor: str,
    now: datetime,
) -> tuple[Decision, str | None]:
    """An explicit memory (a user, a UI or a tool said "remember this"), reconciled like an extracted one,
    under the same per-user lock: the same decisions (`core.reconcile.decide`) applied the same way, with
    history rows naming `actor`. No LLM judges here: a similar-but-unclear pair is added, as the worker
    does without one. It is compared with `owner`'s memories only (an agent's or the app's slots are their
    own). Returns the decision and the memory the candidate ended up in. Caller commits."""
    from core.reconcile import decide

    user_id, agent_id = owner.user_id, owner.agent_id
    lock_user(db, tenant_id, user_id)  # app scope: one lock for the tenant's shared memories
    rows = slot_rows(db, tenant_id, user_id, c.slot, agent_id=agent_id) if c.slot else []
    neighbours = nearest(db, tenant_id, user_id, vec, agent_id=agent_id)
    decision = decide(c, neighbours=neighbours, slot_rows=rows, policy=policy)
    return decision, apply_decision(
        db, tenant_id, user_id, c, decision, vec, actor=actor, now=now, owner=owner
    )


def contents_of(db: Session, memory_ids: Sequence[str]) -> list[tuple[str, str | None]]:
    """The content and slot value of the given memories (for what a change ended: `refresh_if_mentioned`)."""
    if not memory_ids:
        return []
    rows = db.execute(
        text("SELECT content, value FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"),
        {"ids": [str(i) for i in memory_ids]},
    ).all()
    return [(r[0], r[1]) for r in rows]
