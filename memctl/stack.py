"""`memctl up`: start what is needed (embedded PostgreSQL / Redis), migrate, run worker + API (+ scheduler)
in the foreground as child processes; Ctrl-C or SIGTERM stops all of them cleanly."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from shared.db.migrate import migrate
from shared.embedded import EmbeddedPostgres, EmbeddedRedis, kombu_url, start_postgres, start_redis
from shared.settings import Settings

console = Console(stderr=True)


@dataclass
class Stack:
    settings: Settings
    database_url: str
    redis_url: str
    pg: EmbeddedPostgres | None = None
    redis: EmbeddedRedis | None = None
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["DATABASE_URL"] = self.database_url
        env["REDIS_URL"] = self.redis_url
        env.setdefault("MEMORY_DATA_DIR", str(self.settings.data_path))
        env.setdefault("PYTHONUNBUFFERED", "1")
        # worker pool processes and the API share one directory of metric files; /metrics aggregates it
        env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(self.settings.data_path / "metrics"))
        return env


def start_services(settings: Settings) -> Stack:
    pg = redis = None
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
    return Stack(settings=settings, database_url=db_url, redis_url=kombu_url(redis_url), pg=pg, redis=redis)


def _spawn(stack: Stack, name: str, args: list[str]) -> None:
    # own process group, so a terminal's Ctrl-C reaches us first and we stop children in order
    stack.children[name] = subprocess.Popen(args, env=stack.child_env(), start_new_session=True)


def run_foreground(settings: Settings, *, with_scheduler: bool = True) -> int:
    stack = start_services(settings)
    where_db = f"embedded PostgreSQL in {stack.pg.pgdata}" if stack.pg else "DATABASE_URL"
    where_redis = f"embedded Redis at {stack.redis.socket_path}" if stack.redis else "REDIS_URL"
    console.print(f"[bold]database[/]  {where_db}")
    console.print(f"[bold]broker[/]    {where_redis}")
    metrics_dir = Path(stack.child_env()["PROMETHEUS_MULTIPROC_DIR"])
    shutil.rmtree(metrics_dir, ignore_errors=True)  # samples of a previous run would be added to this one's
    metrics_dir.mkdir(parents=True, exist_ok=True)
    migrate(stack.database_url)
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
    try:
        while not stopping["flag"]:
            for name, proc in stack.children.items():
                if proc.poll() is not None:
                    console.print(f"[red]{name} exited with code {proc.returncode}; stopping the stack[/]")
                    stopping["flag"] = True
                    code = 1
                    break
            time.sleep(0.2)
    finally:
        stop_stack(stack)
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
    if stack.redis is not None and stack.redis.started_here:
        stack.redis.stop()
    if stack.pg is not None:
        stack.pg.stop()
    console.print("stopped.")


def _scheduler_available() -> bool:
    return (Path(__file__).resolve().parent.parent / "schedules" / "run.py").exists()
