"""Engines and sessions. One engine per (process, URL), created lazily after a fork."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlmodel import Session

from shared.settings import Settings

# (pid, url, role, application name, pool size, overflow, pre-ping) -> engine: a caller asking for another
# configuration gets its own engine, never one set up for someone else (its name shows in pg_stat_activity)
_engines: dict[tuple[int, str, str | None, str, int, int | None, bool], Engine] = {}


def sqlalchemy_url(url: str) -> str:
    """Normalise any PostgreSQL URL to the psycopg 3 driver."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


# Session defaults every pooled connection starts with (set once at connect, not per transaction): pgvector
# 0.8's iterative scans keep walking the HNSW graph until enough rows pass a per-user filter, and the
# search breadth a k = 10 search needs. A transaction that needs more sets its own (SET LOCAL).
SESSION_DEFAULTS = {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": "80"}
SESSION_DEFAULTS_KEY = "memory.session_defaults"

ALL_TENANTS = "*"  # the worker role's cross-tenant scope (maintenance); the API role cannot use it


def get_engine(
    url: str,
    *,
    pool_size: int = 5,
    max_overflow: int | None = None,
    application_name: str = "memory",
    role: str | None = None,
    pre_ping: bool = True,
) -> Engine:
    """The engine of this process for `url` (engines are never shared across a fork).

    With `role`, every connection runs `SET ROLE role`: the application then acts as a role that is not the
    tables' owner, so row-level security applies to it (the owner and superusers bypass it).
    """
    key = (os.getpid(), url, role, application_name, pool_size, max_overflow, pre_ping)
    engine = _engines.get(key)
    if engine is None:
        engine = create_engine(
            sqlalchemy_url(url),
            pool_pre_ping=pre_ping,
            pool_size=pool_size,
            max_overflow=pool_size if max_overflow is None else max_overflow,
            pool_recycle=1800,
            connect_args={"connect_timeout": 5, "application_name": application_name},
        )
        _on_connect(engine, role)
        _engines[key] = engine
    return engine


def _on_connect(engine: Engine, role: str | None) -> None:
    """Each new connection: `SET ROLE role` (when given) and the SESSION_DEFAULTS, in one round trip."""
    if role is not None and not role.replace("_", "").isalnum():
        raise ValueError(f"invalid database role name {role!r}")
    statements = [f"SET ROLE {role}"] if role else []
    statements += [f"SET {name} = '{value}'" for name, value in SESSION_DEFAULTS.items()]
    script = "; ".join(statements)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, record):  # type: ignore[no-untyped-def]
        with dbapi_conn.cursor() as cur:
            cur.execute(script)
        dbapi_conn.commit()
        record.info[SESSION_DEFAULTS_KEY] = True


def has_session_defaults(conn: Connection) -> bool:
    """Whether this pooled connection was opened with SESSION_DEFAULTS (engines from `get_engine`)."""
    return bool(conn.info.get(SESSION_DEFAULTS_KEY))


def dispose_inherited_engines() -> None:
    """Forget engines created before a fork without closing the parent's connections."""
    for key, engine in list(_engines.items()):
        if key[0] != os.getpid():
            engine.dispose(close=False)
            del _engines[key]


def set_tenant(session: Session, tenant: str) -> None:
    """Scope the current transaction to one tenant (or ALL_TENANTS for the worker's maintenance)."""
    session.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": tenant})


@contextmanager
def session_scope(engine: Engine, *, tenant: str | None = None) -> Iterator[Session]:
    """A session whose transaction commits on success and rolls back on error. Only shells use this.

    `tenant` scopes the transaction for row-level security; application roles see nothing without it."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            if tenant is not None:
                set_tenant(session, tenant)
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
