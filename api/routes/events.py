"""POST /v1/events: one event or a batch, stored (redacted) before the 202; the tenant comes from the key."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel

from api.deps import SessionDep, StateDep, WriterDep
from api.problems import problem
from shared.contract import MAX_BATCH, EventIn, parse_batch, utcnow
from store.ingest import store_events
from store.triggers import after_store

router = APIRouter(prefix="/v1", tags=["events"])

# the path whose body limit is MEMORY_MAX_EVENTS_BODY_BYTES (api.limits.BodyLimitMiddleware, set in api.app)
EVENTS_PATH = "/v1/events"


class Accepted(BaseModel):
    accepted: list[str]
    inserted: int
    duplicates: int


_event_schema = EventIn.model_json_schema(ref_template="#/components/schemas/{model}")
_request_body = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "anyOf": [
                    {"$ref": "#/components/schemas/EventIn"},
                    {
                        "type": "array",
                        "items": {"$ref": "#/components/schemas/EventIn"},
                        "maxItems": MAX_BATCH,
                    },
                    {
                        "type": "object",
                        "properties": {
                            "events": {"type": "array", "items": {"$ref": "#/components/schemas/EventIn"}}
                        },
                        "required": ["events"],
                    },
                ]
            }
        }
    },
}


@router.post(
    EVENTS_PATH.removeprefix("/v1"),
    status_code=202,
    response_model=Accepted,
    openapi_extra={"requestBody": _request_body},
    responses={401: {"description": "missing or unknown key"}, 422: {"description": "invalid event(s)"}},
)
async def post_events(request: Request, principal: WriterDep, session: SessionDep, state: StateDep) -> Any:
    """Accept one event, a list, or `{"events": [...]}` (at most 500). Stored durably before answering."""
    # a body over MEMORY_MAX_EVENTS_BODY_BYTES fails this read with a 413 (api.limits), before anything is stored
    raw = await request.body()
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return problem(
            422, f"body: not valid JSON ({exc})", errors=[{"field": "body", "message": "not valid JSON"}]
        )
    now = utcnow()
    events = parse_batch(data, now=now)  # ContractError -> 422 with field errors
    # The tenant is the key's, whatever the body says.
    result = store_events(
        session, principal.tenant_id, events, now=now, ingested_by=f"api:{principal.key_id}"
    )
    session.commit()
    after_store(state.publisher, state.settings, principal.tenant_id, result.sessions)
    return Accepted(
        accepted=[e.event_id for e in events], inserted=len(result.inserted), duplicates=result.duplicates
    )


def register_schemas(openapi: dict[str, Any]) -> dict[str, Any]:
    schemas = openapi.setdefault("components", {}).setdefault("schemas", {})
    defs = _event_schema.pop("$defs", {})
    schemas.update(defs)
    schemas["EventIn"] = _event_schema
    return openapi
