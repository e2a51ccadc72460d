"""GET /v1/sessions/{session_id}/window: the rolling summary plus the most recent turns (the response is the
store's `SessionWindow`, documented in the OpenAPI schema as it is)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query

from api.deps import PrincipalDep, SessionDep
from shared.contract import ID_PATTERN
from store.sessions import SessionWindow, find_session_owners
from store.sessions import session_window as store_window

router = APIRouter(prefix="/v1", tags=["sessions"])


@router.get(
    "/sessions/{session_id}/window",
    response_model=SessionWindow,
    responses={404: {"description": "no such session for this key's tenant"}},
)
def session_window(
    principal: PrincipalDep,
    db: SessionDep,
    session_id: Annotated[str, Path(max_length=128, pattern=ID_PATTERN)],
    user_id: Annotated[
        str | None,
        Query(
            max_length=128, pattern=ID_PATTERN, description="needed only when two users share a session id"
        ),
    ] = None,
    last: Annotated[int, Query(ge=1, le=200, description="how many recent turns")] = 20,
) -> Any:
    owners = find_session_owners(db, principal.tenant_id, session_id, user_id=user_id)
    if not owners:
        raise HTTPException(404, f"no session {session_id!r}")
    if len(owners) > 1:
        raise HTTPException(422, "several users have this session id: add ?user_id=")
    window = store_window(db, principal.tenant_id, owners[0], session_id, last=last)
    if window is None:  # the session went between the two reads (erased)
        raise HTTPException(404, f"no session {session_id!r}")
    return window
