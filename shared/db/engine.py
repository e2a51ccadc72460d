"""Engines and sessions. One engine per (process, URL), created lazily after a fork."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine
from sqlmodel import Session

from shared.settings import Settings

_engines: dict[tuple[int, str], Engine] = {}


def sqlalchemy_url(url: str) -> str:
    """Normalise any PostgreSQL URL to the psycopg 3 driver."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def get_engine(url: str, *, pool_size: int = 5, application_name: str = "memory") -> Engine:
    """The engine of this process for `url` (engines are never shared across a fork)."""
    key = (os.getpid(), url)
    engine = _engines.get(key)
    if engine is None:
        engine = create_engine(
            sqlalchemy_url(url),
            pool_pre_ping=True,
            pool_size=pool_size,
            max_overflow=pool_size,
            pool_recycle=1800,
            connect_args={"connect_timeout": 5, "application_name": application_name},
        )
        _engines[key] = engine
    return engine


def dispose_inherited_engines() -> None:
    """Forget engines created before a fork without closing the parent's connections."""
    for (pid, url), engine in list(_engines.items()):
        if pid != os.getpid():
            engine.dispose(close=False)
            del _engines[(pid, url)]


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session whose transaction commits on success and rolls back on error. Only shells use this."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def resolve_database_url(settings: Settings) -> str:
    """`DATABASE_URL`, or the embedded PostgreSQL under the data folder (started when needed)."""
    if settings.database_url:
        return sqlalchemy_url(settings.database_url)
    from shared.embedded import start_postgres

    return start_postgres(settings.data_path).url


def resolve_redis_url(settings: Settings) -> str:
    """`REDIS_URL`, or the embedded redis-server under the data folder (started when needed)."""
    if settings.redis_url:
        return settings.redis_url
    from shared.embedded import start_redis

    return start_redis(settings.data_path).url
