"""The services a benchmark runs against, and the environment of the worker processes it starts.

Contract:
- `services()` yields a migrated PostgreSQL (`DATABASE_URL` when set, else a fresh embedded PostgreSQL in a
  temp folder, stopped and deleted on exit) and a reachable Redis (`REDIS_URL`, else 127.0.0.1:6379);
- every benchmark run uses its own queue and tenant (`unique_name`), so it never meets other users of the
  machine's Redis, and `drop_queue` removes what it left there;
- `worker_env` is the environment of a worker started for a measurement: the developer's MEMORY_* and
  OPENAI_* settings never leak into it;
- the embedder of a measurement is the hashing one unless the benchmark names another (`MEMORY_EMBEDDER`
  in this process, or `worker_env(..., MEMORY_EMBEDDER=...)`): the figures of the ingest, store, API and
  sleep sections are about those parts, and comparable across runs; the embedders and LoCoMo sections
  measure the embedders themselves.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from bench.lib.progress import progress

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
# before any settings are read in this process (the migration records the embedder: see the contract)
os.environ.setdefault("MEMORY_EMBEDDER", "hashing")


@dataclass
class Services:
    database_url: str
    redis_url: str
    tmp: Path
    postmaster_pid: int | None  # the embedded server's, to account its CPU; None for DATABASE_URL
    embedded: bool

    @property
    def description(self) -> str:
        """Where the database runs, as the reports say it."""
        return "embedded PostgreSQL in a temp dir" if self.embedded else "DATABASE_URL"


@contextmanager
def services() -> Iterator[Services]:
    from bench.lib.project import dispose_engines, migrate, sqlalchemy_url
    from shared.embedded import redis_py_url, start_postgres

    tmp = Path(tempfile.mkdtemp(prefix="membench-"))
    pg = None
    try:
        redis_url = os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL
        redis.Redis.from_url(redis_py_url(redis_url), socket_timeout=2).ping()  # fail before PG starts
        if os.environ.get("DATABASE_URL"):
            database_url = sqlalchemy_url(os.environ["DATABASE_URL"])
        else:
            progress("starting an embedded PostgreSQL")
            pg = start_postgres(tmp)
            database_url = pg.url
        migrate(database_url)
        pid = pg.server.get_pid() if pg is not None else None  # type: ignore[attr-defined]
        yield Services(database_url, redis_url, tmp, pid, embedded=pg is not None)
    finally:
        dispose_engines()
        if pg is not None:
            pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def redis_client(url: str) -> redis.Redis:
    from shared.embedded import redis_py_url

    return redis.Redis.from_url(redis_py_url(url), socket_timeout=10)


def drop_queue(redis_url: str, queue: str, *, tenant: str | None = None) -> None:
    """Delete a benchmark queue, its ingest stream, kombu's binding keys for it and the tenant's debounce
    timers (keys of other queues and tenants on the server are left alone)."""
    from shared.stream import stream_key

    r = redis_client(redis_url)
    r.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}", stream_key(queue))
    if tenant:
        keys = list(r.scan_iter(match=f"memory:debounce:{tenant}:*", count=1000))
        for start in range(0, len(keys), 500):
            r.delete(*keys[start : start + 500])


def worker_env(svc: Services, queue: str, **extra: str) -> dict[str, str]:
    # the developer's MEMORY_* / OPENAI_* settings must not leak into a measurement
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    env.update(
        DATABASE_URL=svc.database_url,
        REDIS_URL=svc.redis_url,
        MEMORY_QUEUE=queue,
        MEMORY_EMBEDDER=os.environ["MEMORY_EMBEDDER"],
        MEMORY_DATA_DIR=str(svc.tmp / "data"),
        MEMORY_LOG_FORMAT="json",
        # a benchmark's one key asks as fast as the stack answers: no per-key quota (api_load sets its own)
        MEMORY_RATE_LIMIT_PER_S="0",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env
