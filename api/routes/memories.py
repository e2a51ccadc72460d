"""Memories and users: list, inspect with history, edit, forget, context block, and erasure.

Every route runs in a transaction scoped to the key's tenant by row-level security, so another tenant's
users, memories and sessions are simply not there: 404, never 403 (no existence leak).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import text
from sqlmodel import Session

from api.deps import BearerKey, PrincipalDep, SessionDep, StateDep, WriterDep, in_tenant
from api.keys import Principal
from core import keywords
from core.reconcile import content_key
from shared.contract import ID_PATTERN, CleanText, utcnow
from shared.db.vectors import vector_literal
from store.context import user_context as build_user_context
from store.memories import HALF_LIFE_DAYS, snapshot, write_history
from store.users import erase_user, user_exists

router = APIRouter(prefix="/v1", tags=["memories"])

UserId = Annotated[str, Path(min_length=1, max_length=128, pattern=ID_PATTERN)]
Kind = Literal["semantic", "episodic", "procedural"]
Category = Literal["profile", "preference", "constraint", "decision", "lesson", "feedback", "fact"]
Status = Literal["active", "superseded", "consolidated", "archived", "deleted"]
_COLS = (
    "id, user_id, agent_id, scope, kind, category, content, slot, value, importance, confidence, "
    "evidence_count, status, valid_from, valid_to, recorded_at, last_confirmed_at, superseded_by, "
    "half_life_days, expires_at, pinned, source_event_ids, source_turn_ids, consolidated_from, "
    "acc.last_accessed_at, coalesce(acc.access_count, 0) AS access_count"
)
# memories with how often and when searches returned them (memory_access, a narrow table of its own): one
# primary-key probe per row, and its two columns are names `memories` does not have
_FROM = (
    "memories LEFT JOIN LATERAL (SELECT a.last_accessed_at, a.access_count FROM memory_access a "
    "WHERE a.memory_id = memories.id) acc ON true"
)


class Memory(BaseModel):
    id: UUID
    user_id: str
    agent_id: str | None
    scope: str
    kind: str
    category: str
    content: str
    slot: str | None
    value: str | None
    importance: float
    confidence: float
    evidence_count: int
    status: str
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    last_confirmed_at: datetime
    superseded_by: UUID | None
    last_accessed_at: datetime | None
    access_count: int
    half_life_days: float | None
    expires_at: datetime | None
    pinned: bool
    source_event_ids: list[str]
    source_turn_ids: list[str]
    consolidated_from: list[UUID]


class HistoryEntry(BaseModel):
    op: str
    reason: str
    actor: str
    event_ids: list[str]
    created_at: datetime
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class MemoryWithHistory(Memory):
    history: list[HistoryEntry]


class MemoryPage(BaseModel):
    items: list[Memory]
    next_offset: int | None


class MemoryPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: Annotated[CleanText | None, Field(min_length=1, max_length=4000)] = None
    pinned: bool | None = None
    ttl_days: Annotated[float | None, Field(gt=0, le=36500, description="expire this many days from now")] = (
        None
    )
    clear_ttl: bool = False
    kind: Kind | None = None


class ContextResponse(BaseModel):
    user_id: str
    context: str
    tokens: int
    max_tokens: int
    included: list[str]


class Erased(BaseModel):
    user_id: str
    deleted: dict[str, int]


def _memory(db: Any, memory_id: UUID) -> Any:
    row = (
        db.execute(text(f"SELECT {_COLS} FROM {_FROM} WHERE id = :id"), {"id": memory_id}).mappings().first()
    )
    if row is None:
        raise HTTPException(404, f"no memory {memory_id}")
    return row


def _require_user(db: Any, tenant_id: str, user_id: str) -> None:
    if not user_exists(db, tenant_id, user_id):
        raise HTTPException(404, f"no user {user_id!r}")


@router.get("/users/{user_id}/memories", response_model=MemoryPage)
def list_memories(
    principal: PrincipalDep,
    db: SessionDep,
    user_id: UserId,
    status: Annotated[list[Status] | None, Query(max_length=5)] = None,
    kind: Annotated[list[Kind] | None, Query(max_length=3)] = None,
    category: Annotated[Category | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Any:
    _require_user(db, principal.tenant_id, user_id)
    rows = (
        db.execute(
            text(
                f"SELECT {_COLS} FROM {_FROM} WHERE tenant_id = :t AND user_id = :u AND status = ANY(:st) "
                "AND (CAST(:kinds AS text[]) IS NULL OR kind = ANY(:kinds)) "
                "AND (CAST(:cat AS text) IS NULL OR category = :cat) "
                "ORDER BY importance DESC, last_confirmed_at DESC, id LIMIT :n OFFSET :o"
            ),
            {
                "t": principal.tenant_id,
                "u": user_id,
                "st": list(status or ["active"]),
                "kinds": list(kind) if kind else None,
                "cat": category,
                "n": limit + 1,
                "o": offset,
            },
        )
        .mappings()
        .all()
    )
    return MemoryPage(
        items=[Memory(**r) for r in rows[:limit]], next_offset=offset + limit if len(rows) > limit else None
    )


@router.get("/memories/{memory_id}", response_model=MemoryWithHistory)
def get_memory(principal: PrincipalDep, db: SessionDep, memory_id: UUID) -> Any:
    row = _memory(db, memory_id)
    history = (
        db.execute(
            text(
                "SELECT op, reason, actor, event_ids, created_at, before, after FROM memory_history "
                "WHERE memory_id = :id ORDER BY id"
            ),
            {"id": memory_id},
        )
        .mappings()
        .all()
    )
    return MemoryWithHistory(**row, history=[HistoryEntry(**h) for h in history])


@router.patch("/memories/{memory_id}", response_model=Memory)
def patch_memory(
    principal: WriterDep, db: SessionDep, state: StateDep, memory_id: UUID, body: MemoryPatch
) -> Any:
    row = _memory(db, memory_id)
    if row["status"] == "deleted":
        raise HTTPException(409, "this memory was forgotten; it cannot be edited")
    now = utcnow()
    before = snapshot(db, str(memory_id))
    sets: dict[str, Any] = {}
    if body.content is not None:
        sets.update(
            content=body.content,
            content_key=content_key(body.content),
            embedding=vector_literal(state.embedder.embed([body.content])[0]),
        )
    if body.pinned is not None:
        sets["pinned"] = body.pinned
    if body.clear_ttl:
        sets["expires_at"] = None
    elif body.ttl_days is not None:
        sets["expires_at"] = now + timedelta(days=body.ttl_days)
    if body.kind is not None:
        sets.update(kind=body.kind, half_life_days=HALF_LIFE_DAYS.get(body.kind))
    if not sets:
        raise HTTPException(422, "nothing to change: give content, pinned, ttl_days, clear_ttl or kind")
    assignments = ", ".join(
        "embedding = CAST(:embedding AS vector)" if k == "embedding" else f"{k} = :{k}" for k in sets
    )
    extra = ", search_tokens = to_tsvector('simple', :doc)" if body.content is not None else ""
    db.execute(
        text(f"UPDATE memories SET {assignments}{extra}, updated_at = :now WHERE id = :id"),
        {**sets, "doc": keywords.document(body.content or ""), "now": now, "id": memory_id},
    )
    write_history(
        db,
        memory_id=str(memory_id),
        tenant_id=principal.tenant_id,
        user_id=row["user_id"],
        op="edit",
        before=before,
        after=snapshot(db, str(memory_id)),
        reason="edited via API: " + ", ".join(sorted(k for k in body.model_fields_set)),
        actor=f"api_key:{principal.key_id}",
        event_ids=(),
        now=now,
    )
    return Memory(**_memory(db, memory_id))


@router.delete("/memories/{memory_id}", response_model=Memory)
def forget_memory(principal: WriterDep, db: SessionDep, memory_id: UUID) -> Any:
    row = _memory(db, memory_id)
    now = utcnow()
    before = snapshot(db, str(memory_id))
    db.execute(
        text(
            "UPDATE memories SET status = 'deleted', valid_to = COALESCE(valid_to, :now), archived_at = :now, "
            "updated_at = :now WHERE id = :id"
        ),
        {"now": now, "id": memory_id},
    )
    write_history(
        db,
        memory_id=str(memory_id),
        tenant_id=principal.tenant_id,
        user_id=row["user_id"],
        op="forget",
        before=before,
        after=snapshot(db, str(memory_id)),
        reason="forgotten via API",
        actor=f"api_key:{principal.key_id}",
        event_ids=(),
        now=now,
    )
    return Memory(**_memory(db, memory_id))


@router.get("/users/{user_id}/context", response_model=ContextResponse)
async def user_context(
    state: StateDep,
    key: BearerKey,
    user_id: UserId,
    query: Annotated[CleanText, Query(max_length=4000)] = "",
    max_tokens: Annotated[int, Query(ge=16, le=32_000)] = 1000,
) -> Any:
    # called by agents on every turn: one thread hand-off for authentication, the block and the commit
    def build(db: Session, principal: Principal) -> ContextResponse:
        _require_user(db, principal.tenant_id, user_id)
        block = build_user_context(
            db,
            principal.tenant_id,
            user_id,
            query=query,
            max_tokens=max_tokens,
            embedder=state.embedder,
            now=utcnow(),
            ef_search=state.settings.hnsw_ef_search,
        )
        state.access.note(principal.tenant_id, (i for i in block.included if len(i) == 36))
        return ContextResponse(
            user_id=user_id,
            context=block.text,
            tokens=block.tokens,
            max_tokens=max_tokens,
            included=list(block.included),
        )

    return await in_tenant(state, key, build)


@router.delete("/users/{user_id}", response_model=Erased)
def erase(principal: WriterDep, db: SessionDep, user_id: UserId) -> Any:
    if (
        not user_exists(db, principal.tenant_id, user_id)
        and not db.execute(
            text("SELECT EXISTS (SELECT 1 FROM events WHERE tenant_id = :t AND user_id = :u)"),
            {"t": principal.tenant_id, "u": user_id},
        ).scalar()
    ):
        raise HTTPException(404, f"no user {user_id!r}")
    return Erased(user_id=user_id, deleted=erase_user(db, principal.tenant_id, user_id))
