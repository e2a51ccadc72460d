"""FastAPI dependencies: the database session, the authenticated principal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Request
from sqlalchemy import Engine
from sqlmodel import Session

from api.access import AccessRecorder
from api.keys import Principal, authenticate
from shared.publisher import RedisPublisher
from shared.settings import Settings
from worker.embeddings import Embedder


@dataclass
class AppState:
    settings: Settings
    engine: Engine
    publisher: RedisPublisher
    embedder: Embedder
    access: AccessRecorder


async def get_state(request: Request) -> AppState:
    return request.app.state.memory  # type: ignore[no-any-return]


StateDep = Annotated[AppState, Depends(get_state)]


@contextmanager
def transaction(state: AppState) -> Iterator[Session]:
    """The request's transaction: committed when the route returns, rolled back when it raises."""
    with Session(state.engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def get_session(state: StateDep) -> Iterator[Session]:
    with transaction(state) as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]
AuthorizationHeader = Annotated[str | None, Header(include_in_schema=False)]


def principal_of(session: Session, authorization: str | None) -> Principal:
    """The key's principal; from then on every query of the session's transaction is confined to the key's
    tenant by the database. 401 for a missing, malformed, unknown or revoked key."""
    if not authorization:
        raise HTTPException(401, "missing Authorization header: send 'Authorization: Bearer <api key>'")
    scheme, _, key = authorization.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise HTTPException(401, "malformed Authorization header: expected 'Bearer <api key>'")
    principal = authenticate(session, key.strip())
    if principal is None:
        raise HTTPException(401, "unknown or revoked API key")
    return principal


def get_principal(session: SessionDep, authorization: AuthorizationHeader = None) -> Principal:
    return principal_of(session, authorization)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def writable(principal: PrincipalDep) -> Principal:
    if principal.read_only:
        raise HTTPException(403, "this API key is read-only")
    return principal


WriterDep = Annotated[Principal, Depends(writable)]
