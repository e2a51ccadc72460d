"""FastAPI dependencies: the database session, the authenticated principal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, TypeVar

from fastapi import Depends, Header, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import Engine
from sqlmodel import Session

from api.access import AccessRecorder
from api.keys import Principal, authenticate
from api.limits import RateLimiter
from shared.publisher import TaskPublisher
from shared.settings import Settings
from store.embeddings import Embedder

T = TypeVar("T")


@dataclass
class AppState:
    settings: Settings
    engine: Engine
    publisher: TaskPublisher
    embedder: Embedder
    access: AccessRecorder
    limiter: RateLimiter


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


async def bearer_key(authorization: Annotated[str | None, Header(include_in_schema=False)] = None) -> str:
    """The API key of the Authorization header: 401 when it is missing or malformed, before the body is read
    or the database is asked (async: no thread hand-off for a check without I/O)."""
    if not authorization:
        raise HTTPException(401, "missing Authorization header: send 'Authorization: Bearer <api key>'")
    scheme, _, key = authorization.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise HTTPException(401, "malformed Authorization header: expected 'Bearer <api key>'")
    return key.strip()


BearerKey = Annotated[str, Depends(bearer_key)]


def principal_of(state: AppState, session: Session, key: str) -> Principal:
    """The key's principal; from then on every query of the session's transaction is confined to the key's
    tenant by the database. 401 for an unknown or revoked key; 429 when the key is over its rate limit."""
    principal = authenticate(session, key)
    if principal is None:
        raise HTTPException(401, "unknown or revoked API key")
    state.limiter.check(session, principal.key_id, principal.tenant_id)
    return principal


def get_principal(state: StateDep, session: SessionDep, key: BearerKey) -> Principal:
    return principal_of(state, session, key)


async def in_tenant(state: AppState, key: str, work: Callable[[Session, Principal], T]) -> T:
    """Authenticate `key`, run `work` in the key's tenant and commit, in one hand-off to the thread pool.

    For the routes agents call on every turn (search, context): as sync dependencies the session and the
    principal cost FastAPI four thread hand-offs per request (each dependency, its teardown, the route),
    each dearer in CPU than a statement of the search. Errors behave as with the dependencies: 401 for an
    unknown key, rollback on any exception."""

    def run() -> T:
        with transaction(state) as session:
            return work(session, principal_of(state, session, key))

    return await run_in_threadpool(run)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def writable(principal: PrincipalDep) -> Principal:
    if principal.read_only:
        raise HTTPException(403, "this API key is read-only")
    return principal


WriterDep = Annotated[Principal, Depends(writable)]
