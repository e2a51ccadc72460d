"""An event's trace and a memory's lineage (issue 17): thin views over `store.trace`, tenant-bound by the key.

`GET /v1/events/{event_id}/trace` follows one event from storage (or its dead letter) through the extraction
windows, the candidates and decisions, to what later became of the memories it touched, with the canonical
log fields of every task involved. `GET /v1/memories/{memory_id}/why` goes the other way, from a memory back
through supersede chains and distillation sources to the turns (their text where retention still keeps it).
The nested shapes are documented in `store.trace`.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, HTTPException, Path
from pydantic import BaseModel, Field

from api.deps import PrincipalDep, SessionDep
from shared.contract import ID_PATTERN
from store import trace as repo

router = APIRouter(prefix="/v1", tags=["trace"])

EventId = Annotated[str, Path(min_length=1, max_length=128, pattern=ID_PATTERN)]


class EventTrace(BaseModel):
    event_id: str
    stored: dict[str, Any] | None = Field(
        description="the stored event (times, ingest path, status, redaction counts, text unless purged); "
        "null when it was never stored (see dead_letters)"
    )
    windows: list[dict[str, Any]] = Field(description="extraction runs whose window held it, per-turn detail")
    candidates: list[dict[str, Any]] = Field(description="candidates citing it, with their decision")
    decisions: list[dict[str, Any]] = Field(description="memory history rows citing it")
    later: list[dict[str, Any]] = Field(description="what later became of the memories it touched")
    memories: list[dict[str, Any]] = Field(description="those memories and their successors, as they are now")
    dead_letters: list[dict[str, Any]]
    tasks: list[dict[str, Any]] = Field(description="the canonical log fields of each task named above")


class MemoryWhy(BaseModel):
    memory_id: str
    memory: dict[str, Any] | None = Field(description="the memory as it is now; null once purged")
    history: list[dict[str, Any]]
    lineage: list[dict[str, Any]] = Field(
        description="the memory, then what it superseded or was consolidated from, breadth first"
    )
    turns: list[dict[str, Any]] = Field(description="the turns the lineage cites; text null once purged")
    truncated: bool


@router.get("/events/{event_id}/trace", response_model=EventTrace)
def event_trace(principal: PrincipalDep, db: SessionDep, event_id: EventId) -> Any:
    """The event's journey: stored, extracted, decided, consolidated, pruned."""
    found = repo.event_trace(db, principal.tenant_id, event_id)
    if found is None:
        raise HTTPException(404, f"no event {event_id!r}")
    return found


@router.get("/memories/{memory_id}/why", response_model=MemoryWhy)
def memory_why(principal: PrincipalDep, db: SessionDep, memory_id: UUID) -> Any:
    """Why the memory is believed: its lineage back to the turns."""
    found = repo.memory_why(db, principal.tenant_id, str(memory_id))
    if found is None:
        raise HTTPException(404, f"no memory {memory_id}")
    return found
