"""Episodes, one per closed session: listed, shown, edited and deleted one by one by their user.

A deleted episode never comes back: not in the context block, not in working memory (rewritten without it),
not when its session is closed again (`store.episodes` keeps a tombstone).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from api.deps import PrincipalDep, SessionDep, StateDep, WriterDep
from shared.contract import ID_PATTERN, CleanText, utcnow
from shared.redaction import redact
from store import episodes as repo
from store.users import user_exists
from store.working_memory import rebuild_document

router = APIRouter(prefix="/v1", tags=["episodes"])

UserId = Annotated[str, Path(min_length=1, max_length=128, pattern=ID_PATTERN)]


class Episode(BaseModel):
    id: UUID
    user_id: str
    agent_id: str | None
    session_id: str
    started_at: datetime | None
    ended_at: datetime | None
    what_happened: str
    outcome: str
    lesson: str
    mode: str = Field(description="who wrote it: llm or deterministic")
    source_event_ids: list[str]
    created_at: datetime
    edited_at: datetime | None = Field(
        description="when its user last edited it (a later close keeps the edit)"
    )
    archived_at: datetime | None = Field(
        default=None,
        description="when it decayed (not served in a context block for several episodic half-lives): "
        "out of the context block, purged after the retention period",
    )


class EpisodePage(BaseModel):
    items: list[Episode]
    next_offset: int | None


class EpisodePatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    what_happened: Annotated[CleanText | None, Field(min_length=1, max_length=4000)] = None
    outcome: Annotated[CleanText | None, Field(max_length=4000)] = None
    lesson: Annotated[CleanText | None, Field(max_length=4000, description="an empty lesson removes it")] = (
        None
    )


class EpisodeDeleted(BaseModel):
    id: UUID
    working_memory_rewritten: bool


def _episode(db: SessionDep, tenant_id: str, episode_id: UUID) -> repo.EpisodeView:
    found = repo.get_episode(db, tenant_id, episode_id)
    if found is None:
        raise HTTPException(404, f"no episode {episode_id}")
    return found


@router.get("/users/{user_id}/episodes", response_model=EpisodePage)
def list_episodes(
    principal: PrincipalDep,
    db: SessionDep,
    user_id: UserId,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Any:
    """The user's episodes, latest first."""
    if not user_exists(db, principal.tenant_id, user_id):
        raise HTTPException(404, f"no user {user_id!r}")
    items, more = repo.list_episodes(db, principal.tenant_id, user_id, limit=limit, offset=offset)
    return EpisodePage(
        items=[Episode(**e.__dict__) for e in items], next_offset=offset + limit if more else None
    )


@router.get("/episodes/{episode_id}", response_model=Episode)
def get_episode(principal: PrincipalDep, db: SessionDep, episode_id: UUID) -> Any:
    return Episode(**_episode(db, principal.tenant_id, episode_id).__dict__)


@router.patch("/episodes/{episode_id}", response_model=Episode)
def patch_episode(
    principal: WriterDep, db: SessionDep, state: StateDep, episode_id: UUID, body: EpisodePatch
) -> Any:
    """Correct an episode (a wrong outcome, a wrong lesson); the working memory built from it follows."""
    found = _episode(db, principal.tenant_id, episode_id)
    changes = {k: redact(v) for k, v in body.model_dump(exclude_none=True).items()}
    if not changes:
        raise HTTPException(422, "nothing to change: give what_happened, outcome or lesson")
    now = utcnow()
    repo.edit_episode(db, principal.tenant_id, found, changes=changes, embedder=state.embedder, now=now)
    rebuild_document(db, principal.tenant_id, found.user_id, now=now)
    edited = Episode(**_episode(db, principal.tenant_id, episode_id).__dict__)
    db.commit()  # before the answer: the caller's next read sees the edit
    return edited


@router.delete("/episodes/{episode_id}", response_model=EpisodeDeleted)
def delete_episode(principal: WriterDep, db: SessionDep, episode_id: UUID) -> Any:
    """Delete an episode for good: it never comes back into the context block or the working memory."""
    found = _episode(db, principal.tenant_id, episode_id)
    now = utcnow()
    repo.delete_episode(db, principal.tenant_id, episode_id, now=now)
    rewritten = rebuild_document(db, principal.tenant_id, found.user_id, now=now)
    db.commit()  # before the answer: the caller's next read no longer sees it
    return EpisodeDeleted(id=episode_id, working_memory_rewritten=rewritten)
