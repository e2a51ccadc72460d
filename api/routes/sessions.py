"""GET /v1/sessions/{session_id}/window: the rolling summary plus the most recent turns."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel
from sqlalchemy import text

from api.deps import PrincipalDep, SessionDep
from shared.contract import ID_PATTERN

router = APIRouter(prefix="/v1", tags=["sessions"])


class WindowTurn(BaseModel):
    event_id: str
    role: str
    content: str
    event_time: datetime
    source_turn_id: str | None


class SessionWindow(BaseModel):
    session_id: str
    user_id: str
    status: str
    turn_count: int
    summary: str
    summarized_through: datetime | None
    turns: list[WindowTurn]


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
    params: dict[str, Any] = {"t": principal.tenant_id, "s": session_id, "u": user_id}
    rows = db.execute(
        text(
            "SELECT user_id, status, turn_count, summary, summarized_through FROM sessions "
            "WHERE tenant_id = :t AND session_id = :s AND (CAST(:u AS text) IS NULL OR user_id = :u) LIMIT 2"
        ),
        params,
    ).all()
    if not rows:
        raise HTTPException(404, f"no session {session_id!r}")
    if len(rows) > 1:
        raise HTTPException(422, "several users have this session id: add ?user_id=")
    user, status, turn_count, summary, through = rows[0]
    turns = db.execute(
        text(
            "SELECT event_id, role, content, event_time, source_turn_id FROM events "
            "WHERE tenant_id = :t AND user_id = :u AND session_id = :s AND type = 'turn' "
            "ORDER BY event_time DESC, event_id DESC LIMIT :n"
        ),
        {"t": principal.tenant_id, "u": user, "s": session_id, "n": last},
    ).all()
    return SessionWindow(
        session_id=session_id,
        user_id=user,
        status=status,
        turn_count=turn_count,
        summary=summary,
        summarized_through=through,
        turns=[
            WindowTurn(event_id=r[0], role=r[1], content=r[2], event_time=r[3], source_turn_id=r[4])
            for r in reversed(turns)
        ],
    )
