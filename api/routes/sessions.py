"""GET /v1/sessions/{session_id}/window: the rolling summary plus the most recent turns (the response is the
store's `SessionWindow`, documented in the OpenAPI schema as it is)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel

from api.deps import PrincipalDep, SessionDep, WriterDep
from api.keys import Principal
from shared.contract import ID_PATTERN
from store.sessions import SessionWindow, WindowTurn, clear_session, find_session_owners, pop_last_turn
from store.sessions import session_window as store_window

router = APIRouter(prefix="/v1", tags=["sessions"])


SessionId = Annotated[str, Path(max_length=128, pattern=ID_PATTERN)]
OwnerId = Annotated[
    str | None,
    Query(max_length=128, pattern=ID_PATTERN, description="needed only when two users share a session id"),
]


def _owner(db: SessionDep, principal: Principal, session_id: str, user_id: str | None) -> str:
    owners = find_session_owners(db, principal.tenant_id, session_id, user_id=user_id)
    if not owners:
        raise HTTPException(404, f"no session {session_id!r}")
    if len(owners) > 1:
        raise HTTPException(422, "several users have this session id: add ?user_id=")
    return owners[0]


class Popped(BaseModel):
    turn: WindowTurn | None


class Cleared(BaseModel):
    session_id: str
    user_id: str
    deleted_events: int


@router.delete(
    "/sessions/{session_id}/turns/last",
    response_model=Popped,
    responses={404: {"description": "no such session for this key's tenant"}},
)
def pop_turn(principal: WriterDep, db: SessionDep, session_id: SessionId, user_id: OwnerId = None) -> Any:
    """Delete the session's most recent turn and return it (`turn` null when the session has none): an
    agent's undo. Memories already extracted from it stay."""
    owner = _owner(db, principal, session_id, user_id)
    popped = Popped(turn=pop_last_turn(db, principal.tenant_id, owner, session_id))
    db.commit()  # before the answer: the caller's next read must not see the turn
    return popped


@router.delete(
    "/sessions/{session_id}",
    response_model=Cleared,
    responses={404: {"description": "no such session for this key's tenant"}},
)
def delete_session(
    principal: WriterDep, db: SessionDep, session_id: SessionId, user_id: OwnerId = None
) -> Any:
    """Delete the session's turns and its window (summary, counters): the conversation starts again.
    Memories and episodes already made from it stay; `DELETE /v1/users/{user_id}` erases everything."""
    owner = _owner(db, principal, session_id, user_id)
    deleted = clear_session(db, principal.tenant_id, owner, session_id)
    db.commit()  # before the answer: the caller's next read must not see the turns
    return Cleared(session_id=session_id, user_id=owner, deleted_events=deleted)


@router.get(
    "/sessions/{session_id}/window",
    response_model=SessionWindow,
    responses={404: {"description": "no such session for this key's tenant"}},
)
def session_window(
    principal: PrincipalDep,
    db: SessionDep,
    session_id: SessionId,
    user_id: OwnerId = None,
    last: Annotated[int, Query(ge=1, le=200, description="how many recent turns")] = 20,
) -> Any:
    window = store_window(
        db, principal.tenant_id, _owner(db, principal, session_id, user_id), session_id, last=last
    )
    if window is None:  # the session went between the two reads (erased)
        raise HTTPException(404, f"no session {session_id!r}")
    return window
