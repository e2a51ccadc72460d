"""POST /v1/search: hybrid (vector + keyword) search over a user's memories and, optionally, indexed turns."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Response
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from sqlmodel import Session

from api.deps import AppState, BearerKey, StateDep, in_tenant
from api.keys import Principal
from shared.contract import ID_PATTERN, ApiTime, CleanText, utcnow
from store.search import SearchFilters, SearchHit, search
from store.users import user_exists

router = APIRouter(prefix="/v1", tags=["search"])

Kind = Literal["semantic", "episodic", "procedural"]
Category = Literal["profile", "preference", "constraint", "decision", "lesson", "feedback", "fact"]


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: Annotated[str, Field(min_length=1, max_length=128, pattern=ID_PATTERN)]
    query: Annotated[CleanText, Field(min_length=1, max_length=4000)]
    k: Annotated[int, Field(ge=1, le=100)] = 10
    kinds: list[Kind] = Field(default_factory=list, max_length=3)
    categories: list[Category] = Field(default_factory=list, max_length=7)
    include_turns: bool = False
    passages: bool = Field(
        default=True,
        description="with include_turns: adjacent matching turns of one session come back as one result "
        "(up to 5 consecutive turns, citing each)",
    )
    include_memories: bool = True
    agent_id: Annotated[
        str | None,
        Field(
            max_length=128,
            pattern=ID_PATTERN,
            description="the agent asking: its own (agent-scope) memories are ranked with the user's and the "
            "app's; without it, agents' own memories are left out",
        ),
    ] = None
    as_of: ApiTime | None = Field(default=None, description="answer with what was current at this time")
    time_frame: bool = Field(
        default=True,
        description="when the query names a time ('last month', 'in July 2023', '去年', 'before the move'), "
        "rank what was said or current then higher (a signal, not a filter)",
    )
    expand: bool = Field(
        default=False,
        description="with include_turns: a second keyword retrieval seeded by the names in the first results "
        "(measured in BENCHMARKS.md, locomo; off by default: it did not pay on the development data)",
    )


class SearchResult(BaseModel):
    id: str
    type: Literal["memory", "turn"]
    content: str
    score: float
    kind: str | None = None
    category: str | None = None
    status: str | None = None
    slot: str | None = None
    value: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None  # a temporary memory's end (set by PATCH or inferred from the text)
    scope: Literal["user", "agent", "app"] | None = None  # a memory's scope (whose it is)
    agent_id: str | None = None  # an agent-scope memory's agent
    session_id: str | None = None
    source_event_ids: list[str]
    source_turn_ids: list[str]
    similarity: float | None = Field(
        default=None, description="cosine similarity to the query (when the result was a vector candidate)"
    )
    keyword_coverage: float | None = Field(
        default=None,
        description="share of the query's keyword weight (idf) the result holds (when it was a keyword "
        "candidate); with similarity, what the context block's relevance floor reads",
    )


class SearchResponse(BaseModel):
    results: list[SearchResult]
    took_ms: float


@router.post("/search", response_model=SearchResponse)
async def post_search(body: SearchRequest, state: StateDep, key: BearerKey) -> Any:
    started = time.perf_counter()
    hits = await in_tenant(state, key, lambda db, principal: _search(db, principal, body, state))
    took_ms = (time.perf_counter() - started) * 1000
    return Response(response_json(hits, took_ms), media_type="application/json")


_HITS = TypeAdapter(list[SearchHit])


def response_json(hits: list[SearchHit], took_ms: float) -> bytes:
    """The SearchResponse document, serialized once straight from the service's dataclasses (SearchResult
    has the same fields; a unit test holds the two to one shape), not validated again by FastAPI."""
    return b'{"results":' + _HITS.dump_json(hits) + b',"took_ms":' + repr(round(took_ms, 2)).encode() + b"}"


def _search(db: Session, principal: Principal, body: SearchRequest, state: AppState) -> list[SearchHit]:
    hits = search(
        db,
        tenant_id=principal.tenant_id,
        user_id=body.user_id,
        query=body.query,
        k=body.k,
        embedder=state.embedder,
        now=utcnow(),
        include_turns=body.include_turns,
        passages=body.passages,
        include_memories=body.include_memories,
        ef_search=state.settings.hnsw_ef_search,
        time_frame=body.time_frame,
        expand=body.expand,
        filters=SearchFilters(
            kinds=body.kinds, categories=body.categories, agent_id=body.agent_id, as_of=body.as_of
        ),
    )
    # a user with results exists: only an empty answer needs the check (404 for a user never seen)
    if not hits and not user_exists(db, principal.tenant_id, body.user_id):
        raise HTTPException(404, f"no user {body.user_id!r}")
    state.access.note(principal.tenant_id, (h.id for h in hits if h.type == "memory"))
    return hits
