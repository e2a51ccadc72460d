"""The client package's `emit`: what the agent's call costs, and how much one client process moves.

    python -m bench.run --only client [--quick]

Against a real API (uvicorn, one process, in a process of its own) on a real PostgreSQL and Redis:
- HTTP `emit` caller-side latency: `Memory.emit` validates, redacts and queues; the background sender posts
  batches while the agent keeps calling, so the figures include the sender's share of the interpreter (the
  GIL). Measured while events are being sent, for a paced agent (one event every `PACE_S`, like a busy chat
  agent) and for an agent that emits as fast as it can;
- sustained events/s through the API from one client process: `emit` as fast as possible, the clock stopped
  when PostgreSQL holds every event (counted in the table), with the requests and the events per request the
  sender needed;
- the Redis path, for comparison: `MemoryClient.emit` (one XADD in the caller) on the same machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from bench.lib import report
from bench.lib.paths import REPO
from bench.lib.progress import progress
from bench.lib.report import Bullets, Column, Facts, Target, Text
from bench.lib.services import Services, drop_queue, services, unique_name, worker_env

NAME = "client"
PACE_S = 0.002  # the paced agent: 500 events/s offered
CONTENT = "We moved CI to Buildkite last week; deploys go through ArgoCD and nobody touches prod by hand."


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 4)  # ms

    return {
        "n": len(ordered),
        "p50_ms": at(0.50),
        "p99_ms": at(0.99),
        "p999_ms": at(0.999),
        "max_ms": at(1.0),
    }


def _api(svc: Services, queue: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = worker_env(svc, queue)
    out = open(log, "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "api.app:create_app",
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    out.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the API exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("the API did not answer /healthz within 60 s")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stored(svc: Services, tenant: str) -> int:
    from bench.lib.project import get_engine

    with get_engine(svc.database_url, pool_size=1, application_name="bench").connect() as conn:
        return int(
            conn.execute(text("SELECT count(*) FROM events WHERE tenant_id = :t"), {"t": tenant}).scalar()
            or 0
        )


def _http_emit(svc: Services, queue: str, quick: bool, budget_s: float) -> dict[str, Any]:
    from bench.lib.project import create_key, get_engine, session_scope
    from memory_client import Memory
    from memory_client.http_ingest import HttpPublisher

    port = _free_port()
    api = _api(svc, queue, port, svc.tmp / "api.log")
    figures: dict[str, Any] = {"api_processes": 1}
    try:
        tenant = unique_name("bench-client")
        with session_scope(get_engine(svc.database_url, pool_size=1, application_name="bench")) as session:
            key, _ = create_key(session, tenant, name="bench")
        memory = Memory(
            f"http://127.0.0.1:{port}", key, spool_path=svc.tmp / "spool.jsonl", flush_at_exit=False
        )
        try:
            memory.emit(
                user_id="warm", session_id="warm", content="warm-up"
            )  # the sender thread and connection
            memory.flush()
            # 1. a paced agent: one event every PACE_S while the sender posts in the background
            paced = 1_000 if quick else 5_000
            progress(f"paced emit: {paced:,} events")
            samples = []
            next_at = time.perf_counter()
            for n in range(paced):
                next_at += PACE_S
                started = time.perf_counter()
                memory.emit(user_id=f"u{n % 50}", session_id=f"s{n % 50}", content=CONTENT)
                samples.append(time.perf_counter() - started)
                wait = next_at - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
            memory.flush()
            figures["paced"] = {**_percentiles(samples), "offered_per_s": round(1 / PACE_S)}
            # 2. as fast as it can: caller-side latency and the sustained rate through the API
            burst = 5_000 if quick else min(50_000, max(5_000, int(budget_s * 400)))
            progress(f"burst emit: {burst:,} events")
            before = _stored(svc, tenant)
            requests_before = memory.emitter.sent
            publisher = memory.emitter._publisher
            posts_before = publisher.requests() if isinstance(publisher, HttpPublisher) else 0
            samples = []
            t0 = time.perf_counter()
            for n in range(burst):
                started = time.perf_counter()
                memory.emit(user_id=f"u{n % 50}", session_id=f"s{n % 50}", content=CONTENT)
                samples.append(time.perf_counter() - started)
            emitted_s = time.perf_counter() - t0
            memory.flush(timeout_s=600)
            while _stored(svc, tenant) < before + burst and time.perf_counter() - t0 < 600:
                time.sleep(0.05)
            total_s = time.perf_counter() - t0
            stored = _stored(svc, tenant) - before
            figures["burst"] = {
                **_percentiles(samples),
                "events": burst,
                "stored": stored,
                "emit_loop_s": round(emitted_s, 3),
                "total_s": round(total_s, 3),
                "events_per_s": round(stored / total_s, 1),
                "spooled_calls": memory.emitter.spooled,
                "overflowed": memory.emitter.overflowed,
                "sent_events": memory.emitter.sent - requests_before,
                "posts": (publisher.requests() if isinstance(publisher, HttpPublisher) else 0) - posts_before,
            }
        finally:
            memory.close()
    finally:
        api.terminate()
        try:
            api.wait(timeout=20)
        except subprocess.TimeoutExpired:
            api.kill()
    return figures


def _redis_emit(svc: Services, queue: str, quick: bool) -> dict[str, Any]:
    from shared.client import MemoryClient

    n = 2_000 if quick else 20_000
    progress(f"Redis emit: {n:,} events")
    client = MemoryClient(
        unique_name("bench-client"),
        broker_url=svc.redis_url,
        queue=queue,
        spool_path=svc.tmp / "r.jsonl",
        flush_at_exit=False,
    )
    try:
        client.emit(user_id="warm", session_id="warm", content="warm-up")
        samples = []
        for i in range(n):
            started = time.perf_counter()
            client.emit(user_id=f"u{i % 50}", session_id=f"s{i % 50}", content=CONTENT)
            samples.append(time.perf_counter() - started)
    finally:
        client.close()
    return _percentiles(samples)


def run(budget_s: float, quick: bool) -> dict[str, Any]:
    started = time.monotonic()
    figures: dict[str, Any] = {"pace_s": PACE_S, "cpu_count": os.cpu_count()}
    skipped: list[str] = []
    with services() as svc:
        queue = unique_name("bench-client")
        figures["services"] = svc.description
        try:
            figures["http"] = _http_emit(svc, queue, quick, budget_s)
            figures["redis"] = _redis_emit(svc, queue, quick)
        finally:
            drop_queue(svc.redis_url, queue)
    return report.result(NAME, quick, figures, skipped, started=started, targets=TARGETS, blocks=SECTION)


TARGETS = (
    Target(
        "HTTP emit caller-side p99, paced agent (the call returns before the network)",
        "http.paced.p99_ms",
        "<=",
        1.0,
        "ms",
    ),
    Target(
        "HTTP emit caller-side p99, agent emitting as fast as it can", "http.burst.p99_ms", "<=", 1.0, "ms"
    ),
    Target(
        "events/s through the API from one client process (emit to stored)",
        "http.burst.events_per_s",
        ">=",
        1000,
        "events/s",
    ),
    Target("Redis emit caller-side p99 (one XADD, for comparison)", "redis.p99_ms", "<=", 1.0, "ms"),
)


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return report.evaluate(TARGETS, figures)


def _setup(f: dict[str, Any]) -> str:
    b = f["http"]["burst"]
    return (
        f"Setup: one API process (uvicorn) on {f['services']} and Redis, the client in the benchmark's process "
        f"(`memory_client.Memory`, background sender, batches of up to 500 events). Burst: {b['events']:,} "
        f"events emitted in {b['emit_loop_s']} s, all {b['stored']:,} stored {b['total_s']} s after the first "
        f"call ({b['spooled_calls']} calls spooled, {b['overflowed']} events past the queue"
        + (f", {b['posts']:,} POSTs" if b.get("posts") else "")
        + "). Paced: one event "
        f"every {f['pace_s'] * 1000:g} ms."
    )


SECTION = (
    Text(_setup),
    Facts(
        rows=(
            Column(
                "HTTP emit, paced: p50 / p99 / p99.9 / max (ms)",
                lambda f: "{p50_ms} / {p99_ms} / {p999_ms} / {max_ms}".format(**f["http"]["paced"]),
            ),
            Column(
                "HTTP emit, burst: p50 / p99 / p99.9 / max (ms)",
                lambda f: "{p50_ms} / {p99_ms} / {p999_ms} / {max_ms}".format(**f["http"]["burst"]),
            ),
            Column("events/s through the API, one client process", "http.burst.events_per_s", ",.0f"),
            Column(
                "Redis emit: p50 / p99 / p99.9 / max (ms)",
                lambda f: "{p50_ms} / {p99_ms} / {p999_ms} / {max_ms}".format(**f["redis"]),
            ),
        ),
    ),
    Bullets(
        (
            "The HTTP figures include the background sender's share of the interpreter: it serializes and "
            "posts batches in the same process while the agent calls `emit`.",
            "An API outage changes none of this: the sender spools what it cannot send and `emit` still only "
            "queues (tests/integration/test_client_package.py holds the API down for 10 s).",
        )
    ),
)


def render_markdown(result: dict[str, Any]) -> str:
    return report.render(result, SECTION)
