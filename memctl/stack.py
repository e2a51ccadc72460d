"""`memctl up`: start what is needed (embedded PostgreSQL / Redis), migrate, run worker + API (+ scheduler)
in the foreground as child processes; Ctrl-C or SIGTERM stops all of them cleanly."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rich.console import Console

from shared.db.engine import get_engine
from shared.db.migrate import migrate
from shared.embedded import EmbeddedPostgres, EmbeddedRedis, kombu_url, start_postgres, start_redis
from shared.errors import EmbeddedStackError
from shared.settings import Settings
from store.retokenize import counts_text, ensure_current_tokens

console = Console(stderr=True)


@dataclass
class Stack:
    settings: Settings
    database_url: str
    redis_url: str
    pg: EmbeddedPostgres | None = None
    redis: EmbeddedRedis | None = None
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    claim: IO[str] | None = None  # the data folder's lock, held while this stack runs

    def child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["DATABASE_URL"] = self.database_url
        env["REDIS_URL"] = self.redis_url
        env.setdefault("MEMORY_DATA_DIR", str(self.settings.data_path))
        env.setdefault("PYTHONUNBUFFERED", "1")
        # worker pool processes and the API share one directory of metric files; /metrics aggregates it
        env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(self.settings.data_path / "metrics"))
        return env


CLAIM_FILE = "memctl-up.lock"


def claim_data_dir(data_dir: Path) -> IO[str]:
    """Hold the data folder for this process (an advisory lock the kernel drops when the process dies, so a
    killed run never leaves a stale claim). A second `memctl up` on the same folder is refused: it would
    share, then stop, the first one's servers."""
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = open(data_dir / CLAIM_FILE, "a+")  # noqa: SIM115 - held for the stack's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise EmbeddedStackError(
            f"another `memctl up` (pid {holder}) is running on {data_dir}; stop it first, or give this one "
            "its own MEMORY_DATA_DIR"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def start_services(settings: Settings) -> Stack:
    """Start what is not configured. The embedded servers under the data folder belong to this stack and
    are stopped with it; one already running (left by a run that was killed, or started by a CLI command
    or a test) is said out loud, used, and stopped at the end like the others."""
    claim = claim_data_dir(settings.data_path)
    pg = redis = None
    try:
        if settings.database_url:
            db_url = settings.database_url
        else:
            pg = start_postgres(settings.data_path)
            db_url = pg.url
        if settings.redis_url:
            redis_url = settings.redis_url
        else:
            redis = start_redis(settings.data_path)
            redis_url = redis.url
            if not redis.started_here:
                pid = f"pid {redis.pid}" if redis.pid else "pid unknown"
                console.print(
                    f"[yellow]an embedded redis-server was already running at {redis.socket_path} ({pid}), "
                    "not started by this command: using it, and stopping it with the stack[/]"
                )
    except BaseException:
        if pg is not None:
            pg.stop()
        claim.close()
        raise
    return Stack(
        settings=settings,
        database_url=db_url,
        redis_url=kombu_url(redis_url),
        pg=pg,
        redis=redis,
        claim=claim,
    )


def _spawn(stack: Stack, name: str, args: list[str]) -> None:
    # own process group, so a terminal's Ctrl-C reaches us first and we stop children in order
    stack.children[name] = subprocess.Popen(args, env=stack.child_env(), start_new_session=True)


def run_foreground(settings: Settings, *, with_scheduler: bool = True) -> int:
    stack = start_services(settings)
    try:  # a failure anywhere after the servers started (a migration, a spawn) stops them too
        return _serve(stack, settings, with_scheduler=with_scheduler)
    finally:
        stop_stack(stack)


def _serve(stack: Stack, settings: Settings, *, with_scheduler: bool) -> int:
    where_db = f"embedded PostgreSQL in {stack.pg.pgdata}" if stack.pg else "DATABASE_URL"
    where_redis = f"embedded Redis at {stack.redis.socket_path}" if stack.redis else "REDIS_URL"
    console.print(f"[bold]database[/]  {where_db}")
    console.print(f"[bold]broker[/]    {where_redis}")
    metrics_dir = Path(stack.child_env()["PROMETHEUS_MULTIPROC_DIR"])
    shutil.rmtree(metrics_dir, ignore_errors=True)  # samples of a previous run would be added to this one's
    metrics_dir.mkdir(parents=True, exist_ok=True)
    migrate(stack.database_url)
    counts = ensure_current_tokens(get_engine(stack.database_url, application_name="memctl"))
    if counts is not None:
        console.print(f"[bold]keywords[/]  stored tokens rewritten: {counts_text(counts)}")
    console.print("[bold]migrations[/] up to date")
    py = sys.executable
    _spawn(
        stack,
        "worker",
        [
            py,
            "-m",
            "celery",
            "-A",
            "worker.app",
            "worker",
            "-Q",
            settings.queue,
            "-c",
            str(settings.worker_concurrency),
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"memory-{os.getpid()}@%h",
            "--loglevel",
            settings.log_level,
        ],
    )
    for i in range(settings.ingest_consumers):
        _spawn(stack, f"ingest-{i}", [py, "-m", "worker.ingest_consumer"])
    _spawn(
        stack,
        "api",
        [
            py,
            "-m",
            "uvicorn",
            "api.app:create_app",
            "--factory",
            "--host",
            settings.api_host,
            "--port",
            str(settings.api_port),
            "--workers",
            str(settings.api_workers),
            "--log-level",
            settings.log_level.lower(),
            "--no-access-log",
        ],
    )
    if with_scheduler and _scheduler_available():
        _spawn(stack, "scheduler", [py, "-m", "schedules.run"])
    console.print(f"[bold]worker[/]    queue '{settings.queue}', {settings.worker_concurrency} processes")
    console.print(
        f"[bold]ingest[/]    {settings.ingest_consumers} consumer(s) of the ingest stream, "
        f"{settings.ingest_shards} shard(s)"
    )
    console.print(
        f"[bold]api[/]       http://{settings.api_host}:{settings.api_port}  (docs at /docs), "
        f"{settings.api_workers} processes"
    )
    if "scheduler" in stack.children:
        console.print("[bold]scheduler[/] running (leader election via Redis)")
    console.print("Ctrl-C stops everything.")

    stopping = {"flag": False}

    def _stop(signum: int, _frame: Any) -> None:
        stopping["flag"] = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    code = 0
    while not stopping["flag"]:
        for name, proc in stack.children.items():
            if proc.poll() is not None:
                console.print(f"[red]{name} exited with code {proc.returncode}; stopping the stack[/]")
                stopping["flag"] = True
                code = 1
                break
        time.sleep(0.2)
    return code


def stop_stack(stack: Stack, *, grace_s: float = 20.0) -> None:
    for proc in stack.children.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for proc in stack.children.values():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if stack.redis is not None:
        stack.redis.stop()
    if stack.pg is not None:
        stack.pg.stop()
    if stack.claim is not None:
        stack.claim.close()
        stack.claim = None
    console.print("stopped.")


def _scheduler_available() -> bool:
    return (Path(__file__).resolve().parent.parent / "schedules" / "run.py").exists()
