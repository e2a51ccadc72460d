"""Memories and users: list, inspect with history, edit, forget, context block, and erasure.

Every route runs in a transaction scoped to the key's tenant by row-level security, so another tenant's
users, memories and sessions are simply not there: 404, never 403 (no existence leak).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, HTTPException, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlmodel import Session

from api.deps import BearerKey, PrincipalDep, SessionDep, StateDep, WriterDep, in_tenant
from api.keys import Principal
from core.extraction.lang import detect_lang
from core.reconcile import Op, PendingCandidate, calibrated_policy
from core.relevance import floor_for
from shared.contract import ID_PATTERN, MAX_FUTURE, ApiTime, CleanText, SafeId, utcnow
from shared.db.vectors import vector_literal
from shared.redaction import redact
from store import memories as repo
from store.context import user_context as build_user_context
from store.memory_views import get_memory as read_memory
from store.memory_views import list_memories as read_memories
from store.memory_views import memory_history
from store.models import MemoryPublic
from store.scopes import Owner
from store.users import erase_user, user_exists, user_known
from store.working_memory import read_document, refresh_if_mentioned

router = APIRouter(prefix="/v1", tags=["memories"])

UserId = Annotated[str, Path(min_length=1, max_length=128, pattern=ID_PATTERN)]
Kind = Literal["semantic", "episodic", "procedural"]
Category = Literal["profile", "preference", "constraint", "decision", "lesson", "feedback", "fact"]
Status = Literal["active", "superseded", "consolidated", "archived", "deleted"]


class Memory(MemoryPublic):
    """A memory (`store.models.MemoryPublic`; named `Memory` in the API's schema)."""


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


class MemoryIn(BaseModel):
    """An explicit memory: what a user, a UI or a tool asked to remember, for the user (scope `user`), for
    one agent's own use with that user (`agent`, with `agent_id`), or for every user of the app (`app`)."""

    model_config = ConfigDict(extra="forbid")
    user_id: Annotated[
        SafeId | None,
        Field(description="the user it is about; required for user and agent scope, not used for app scope"),
    ] = None
    scope: Annotated[
        Literal["user", "agent", "app"],
        Field(
            description="user: the user's own memory, every agent reads it; agent: only `agent_id` reads it "
            "(with this user); app: shared by every user of the tenant"
        ),
    ] = "user"
    agent_id: Annotated[
        SafeId | None, Field(description="the agent an agent-scope memory belongs to (agent scope only)")
    ] = None
    content: Annotated[
        CleanText, Field(min_length=1, max_length=4000, description="the memory, one statement")
    ]
    kind: Kind = "semantic"
    category: Category = "fact"
    slot: Annotated[
        str | None,
        Field(
            max_length=128,
            pattern=ID_PATTERN,
            description="a subject-attribute slot (`home.city`): one current value per slot; a new value "
            "supersedes the old one, the same value reinforces it",
        ),
    ] = None
    value: Annotated[
        CleanText | None,
        Field(min_length=1, max_length=16_000, description="the slot's value (default: the content)"),
    ] = None
    pinned: bool = False
    ttl_days: Annotated[float | None, Field(gt=0, le=36500, description="expire this many days from now")] = (
        None
    )
    valid_from: ApiTime | None = Field(default=None, description="when it became true; default: now")
    idempotency_key: Annotated[
        SafeId | None,
        Field(description="the same key sent again (a retry) changes nothing the second time"),
    ] = None

    @model_validator(mode="after")
    def _owner_given(self) -> MemoryIn:
        if self.scope != "app" and self.user_id is None:
            raise ValueError(f"a {self.scope}-scope memory needs user_id")
        if self.scope == "agent" and self.agent_id is None:
            raise ValueError("an agent-scope memory needs agent_id")
        if self.scope != "agent" and self.agent_id is not None:
            raise ValueError("agent_id is only for scope 'agent'")
        return self

    def owner(self) -> Owner:
        return Owner.of(self.scope, user_id=self.user_id, agent_id=self.agent_id)


class Remembered(BaseModel):
    """What reconciliation did with an explicit memory, and the memory it ended up in."""

    op: Literal["add", "reinforce", "supersede", "history", "noop"]
    reason: str
    memory: Memory | None


class WorkingMemory(BaseModel):
    user_id: str
    agent_id: str
    content: str
    version: int
    updated_at: datetime


class LeftOut(BaseModel):
    """What the block left out, and why (counts), so an agent developer can tune the floor and the budget."""

    memories_below_floor: int = Field(
        description="memories found for the query but below the relevance floor (or the query had no topic)"
    )
    episodes_below_floor: int = Field(description="episodes left out for the same reason")
    over_budget: int = Field(description="items that did not fit max_tokens")


class ContextResponse(BaseModel):
    user_id: str
    context: str
    tokens: int
    max_tokens: int
    included: list[str]
    left_out: LeftOut


class Erased(BaseModel):
    user_id: str
    deleted: dict[str, int]


def _memory(db: Session, memory_id: UUID) -> MemoryPublic:
    found = read_memory(db, memory_id)
    if found is None:
        raise HTTPException(404, f"no memory {memory_id}")
    return found


def _require_user(db: Session, tenant_id: str, user_id: str) -> None:
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
    slot: Annotated[str | None, Query(max_length=128, pattern=ID_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Any:
    _require_user(db, principal.tenant_id, user_id)
    items, more = read_memories(
        db,
        principal.tenant_id,
        user_id,
        statuses=status or ["active"],
        kinds=kind or [],
        category=category,
        slot=slot,
        limit=limit,
        offset=offset,
    )
    return MemoryPage(
        items=[Memory(**m.model_dump()) for m in items], next_offset=offset + limit if more else None
    )


@router.post(
    "/memories",
    response_model=Remembered,
    status_code=201,
    responses={200: {"model": Remembered, "description": "an existing memory reinforced (or nothing to do)"}},
)
def remember(
    principal: WriterDep, db: SessionDep, state: StateDep, body: MemoryIn, response: Response
) -> Any:
    """Remember one statement now, reconciled like an extracted memory (same slot: supersede or reinforce; a
    near duplicate: reinforce) against the memories of the same owner (the user's, the agent's or the
    app's), with history naming the key. An app-scope memory is stored under the user id `*app`. 201 when a
    memory row was written, 200 when an existing one was reinforced or the same request was already
    applied."""
    now = utcnow()
    valid_from = body.valid_from or now
    if valid_from.tzinfo is None:
        valid_from = valid_from.replace(tzinfo=now.tzinfo)
    if valid_from > now + MAX_FUTURE:
        raise HTTPException(422, "valid_from is more than a day ahead of the server clock")
    content = redact(body.content)  # the client redacted already; the server never trusts that
    value = redact(body.value) if body.value is not None else (content if body.slot else None)
    candidate = PendingCandidate(
        content=content,
        kind=body.kind,
        op="remember",
        event_time=valid_from,
        source_event_ids=(f"remember:{body.idempotency_key}",) if body.idempotency_key else (),
        slot=body.slot,
        value=value,
        category=body.category,
        tier="must",
        confidence=1.0,
        lang=detect_lang(content),
    )
    vec = vector_literal(state.embedder.embed([content])[0])
    owner = body.owner()
    decision, memory_id = repo.remember(
        db,
        principal.tenant_id,
        owner,
        candidate,
        vec,
        policy=calibrated_policy(state.settings.embedder),
        actor=f"api_key:{principal.key_id}",
        now=now,
    )
    written = decision.op in (Op.ADD, Op.SUPERSEDE, Op.HISTORY)
    if memory_id is not None and written and (body.pinned or body.ttl_days is not None):
        changes: dict[str, Any] = {"pinned": body.pinned}
        if body.ttl_days is not None:
            changes["expires_at"] = now + timedelta(days=body.ttl_days)
        repo.edit(
            db,
            memory_id,
            tenant_id=principal.tenant_id,
            user_id=owner.user_id,
            changes=changes,
            reason="remembered via API: " + ", ".join(sorted(changes)),
            actor=f"api_key:{principal.key_id}",
            now=now,
        )
    response.status_code = 201 if written else 200
    if decision.op in (Op.SUPERSEDE, Op.FORGET) and owner.scope == "user" and decision.target_ids:
        # the working memory may name the value just replaced: rewritten before the caller's next read
        refresh_if_mentioned(
            db, principal.tenant_id, owner.user_id, repo.contents_of(db, decision.target_ids), now=now
        )
    found = read_memory(db, memory_id) if memory_id is not None else None
    db.commit()  # before the answer: the caller's next read sees the memory
    return Remembered(
        op=str(decision.op),  # type: ignore[arg-type]
        reason=decision.reason,
        memory=Memory(**found.model_dump()) if found is not None else None,
    )


@router.get(
    "/users/{user_id}/working-memory",
    response_model=WorkingMemory,
    responses={404: {"description": "no such user, or no working memory written for them yet"}},
)
def working_memory(principal: PrincipalDep, db: SessionDep, user_id: UserId) -> Any:
    """The user's working memory: one document (where things stand, what was decided, what is next),
    rewritten as a whole by the worker."""
    found = read_document(db, principal.tenant_id, user_id)
    if found is None:
        _require_user(db, principal.tenant_id, user_id)
        raise HTTPException(404, f"no working memory for user {user_id!r} yet")
    return WorkingMemory(**found.__dict__)


@router.get("/memories/{memory_id}", response_model=MemoryWithHistory)
def get_memory(principal: PrincipalDep, db: SessionDep, memory_id: UUID) -> Any:
    found = _memory(db, memory_id)
    history = [HistoryEntry(**h) for h in memory_history(db, memory_id)]
    return MemoryWithHistory(**found.model_dump(), history=history)


@router.patch("/memories/{memory_id}", response_model=Memory)
def patch_memory(
    principal: WriterDep, db: SessionDep, state: StateDep, memory_id: UUID, body: MemoryPatch
) -> Any:
    found = _memory(db, memory_id)
    if found.status == "deleted":
        raise HTTPException(409, "this memory was forgotten; it cannot be edited")
    now = utcnow()
    changes: dict[str, Any] = {}
    if body.content is not None:
        changes.update(
            content=body.content, embedding=vector_literal(state.embedder.embed([body.content])[0])
        )
    if body.pinned is not None:
        changes["pinned"] = body.pinned
    if body.clear_ttl:
        changes["expires_at"] = None
    elif body.ttl_days is not None:
        changes["expires_at"] = now + timedelta(days=body.ttl_days)
    if body.kind is not None:
        changes["kind"] = body.kind
    if not changes:
        raise HTTPException(422, "nothing to change: give content, pinned, ttl_days, clear_ttl or kind")
    repo.edit(
        db,
        str(memory_id),
        tenant_id=principal.tenant_id,
        user_id=found.user_id,
        changes=changes,
        reason="edited via API: " + ", ".join(sorted(k for k in body.model_fields_set)),
        actor=f"api_key:{principal.key_id}",
        now=now,
    )
    if "content" in changes and found.scope == "user":
        refresh_if_mentioned(db, principal.tenant_id, found.user_id, [(found.content, found.value)], now=now)
    edited = Memory(**_memory(db, memory_id).model_dump())
    db.commit()  # before the answer (the session dependency would commit after it): read-your-writes
    return edited


@router.delete("/memories/{memory_id}", response_model=Memory)
def forget_memory(principal: WriterDep, db: SessionDep, memory_id: UUID) -> Any:
    found = _memory(db, memory_id)
    now = utcnow()
    repo.forget(
        db,
        str(memory_id),
        tenant_id=principal.tenant_id,
        user_id=found.user_id,
        reason="forgotten via API",
        actor=f"api_key:{principal.key_id}",
        event_ids=(),
        now=now,
    )
    if found.scope == "user":
        refresh_if_mentioned(db, principal.tenant_id, found.user_id, [(found.content, found.value)], now=now)
    forgotten = Memory(**_memory(db, memory_id).model_dump())
    db.commit()  # before the answer: the caller's next read no longer sees it
    return forgotten


@router.get("/users/{user_id}/context", response_model=ContextResponse)
async def user_context(
    state: StateDep,
    key: BearerKey,
    user_id: UserId,
    query: Annotated[CleanText, Query(max_length=4000)] = "",
    max_tokens: Annotated[int, Query(ge=16, le=32_000)] = 1000,
    agent_id: Annotated[
        str | None,
        Query(
            max_length=128,
            pattern=ID_PATTERN,
            description="the agent asking: its own memories join the user's and the app's (labelled [agent])",
        ),
    ] = None,
    min_similarity: Annotated[
        float | None,
        Query(
            ge=0,
            le=1,
            description="relevance floor: a memory or episode is kept when its cosine similarity to the query "
            "reaches this, or its keyword coverage reaches min_keyword_coverage (default: the embedder's "
            "calibrated floor; 0 turns the floor off)",
        ),
    ] = None,
    min_keyword_coverage: Annotated[
        float | None,
        Query(ge=0, le=1, description="relevance floor: the share of the query's keyword weight a hit holds"),
    ] = None,
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
            agent_id=agent_id,
            floor=floor_for(
                state.settings.embedder,
                min_similarity=state.settings.context_min_similarity if min_similarity is None else min_similarity,
                min_keyword_coverage=(
                    state.settings.context_min_keyword_coverage
                    if min_keyword_coverage is None
                    else min_keyword_coverage
                ),
            ),
        )
        state.access.note(principal.tenant_id, (i for i in block.included if len(i) == 36))
        return ContextResponse(
            user_id=user_id,
            context=block.text,
            tokens=block.tokens,
            max_tokens=max_tokens,
            included=list(block.included),
            left_out=LeftOut(
                memories_below_floor=block.left_out.get("memories_below_floor", 0),
                episodes_below_floor=block.left_out.get("episodes_below_floor", 0),
                over_budget=block.left_out.get("over_budget", 0),
            ),
        )

    return await in_tenant(state, key, build)


@router.delete("/users/{user_id}", response_model=Erased)
def erase(principal: WriterDep, db: SessionDep, user_id: UserId) -> Any:
    if not user_known(db, principal.tenant_id, user_id):
        raise HTTPException(404, f"no user {user_id!r}")
    erased = Erased(user_id=user_id, deleted=erase_user(db, principal.tenant_id, user_id))
    db.commit()  # before the answer: the caller's next read finds nothing
    return erased
