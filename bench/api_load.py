"""The read API under load: `POST /v1/search` from 32 concurrent clients on loopback, 100,000 memories.

Contract: `run(budget_s, quick) -> dict` measures, never asserts, and returns
`{"name", "quick", "figures", "targets", "skipped", "markdown"}` like the other bench modules.

- store: 100,000 memories of 10,000 users of one tenant, loaded and indexed by `bench.lib.db.load_store` /
  `rebuild_indexes` (hashing-embedded template sentences, HNSW and every other index built); an API key of
  that tenant from `api.keys.create_key`.
- server: the real API, `uvicorn api.app:create_app --factory --workers N --loop uvloop --http httptools` as
  a subprocess on 127.0.0.1 (what uvicorn picks by itself with the project's dependencies; one what-if run
  with its pure-Python asyncio + h11 instead; the settings' defaults: JSON logs at INFO to a file, the
  API's database role, row-level security), for N in WORKER_COUNTS; the best N (highest closed-loop
  requests/s) is the headline for capacity, the lowest paced p95 for latency.
- load: a separate process (`python -m bench.api_load --client CONFIG`) runs 32 asyncio tasks, each with its
  own keep-alive HTTP/1.1 connection (a minimal client: httpx cost ~2 ms of CPU per request on the same
  2 cores); each sends `POST /v1/search` (k=10, one random user and synthetic query per request). Two
  shapes per server, in this order:
  - closed loop: each task sends its next request when the last is answered. Its requests/s is the server's
    capacity; its latency is mostly the queue of 32 (Little's law: mean latency = 32 / throughput).
  - paced (open loop) at TARGET_RPS: each task on its own fixed schedule of TARGET_RPS / 32 requests a
    second with a random phase (as wrk2 does), latency counted from when a request was due, so falling
    behind is charged (no coordinated omission). This is the latency at the target's rate: the target is
    300 req/s with p95 <= 50 ms.
  WARMUP_S of warm-up, then a measured window of at most WINDOW_S seconds or MAX_REQUESTS requests.
  Latency is the client's (due or sent, to body read); requests/s = measured requests / window.
- where the time goes: CPU seconds per request of uvicorn's processes, PostgreSQL's and the client's (psutil),
  the route's own `took_ms`, and one client alone (concurrency 1: the service time of one request).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.lib import report
from bench.lib.corpus import queries
from bench.lib.db import drop_secondary_indexes, load_store, raw_connection, rebuild_indexes
from bench.lib.paths import REPO
from bench.lib.processes import ProcessSampler
from bench.lib.progress import progress
from bench.lib.report import Column, Section, Table, Target, Text, fmt
from bench.lib.services import Services, drop_queue, services, unique_name, worker_env
from bench.lib.stats import summary_ms

MEMORIES = 100_000
USERS = 10_000
CONCURRENCY = 32
WORKER_COUNTS = {True: (2,), False: (1, 2, 3)}
WARMUP_S = 3.0
WINDOW_S = {True: 12.0, False: 20.0}
MAX_REQUESTS = 20_000
SINGLE_CLIENT_REQUESTS = 300
OWN_LIMIT_S = {True: 300.0, False: 600.0}
# paced windows per server: the p95 target is read from their median (one 20 s window is noisy here)
PACED_REPEATS = {True: 1, False: 3}

# what uvicorn's `auto` picks with the project's dependencies (uvloop, httptools), named explicitly
DEFAULT_HTTP_ARGS = ("--loop", "uvloop", "--http", "httptools")
# the what-if: uvicorn's pure-Python event loop and HTTP parser
PURE_HTTP_ARGS = ("--loop", "asyncio", "--http", "h11")
TARGET_RPS = 300.0
TARGET_P95_MS = 50.0


# --- the client (its own process) --------------------------------------------------------------------------


class _Conn:
    """One keep-alive HTTP/1.1 connection speaking just enough of the protocol for this load (a request with a
    Content-Length body; a response with a Content-Length body): httpx cost ~2 ms of CPU per request here,
    as much as the server's own handler, on the same 2 cores."""

    def __init__(self, host: str, port: int, path: bytes, headers: bytes):
        self.host, self.port, self.path, self.headers = host, port, path, headers
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(
            b"POST %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s" % (self.path, self.headers, len(body), body)
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        close = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        data = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def _drive(cfg: dict[str, Any]) -> dict[str, Any]:
    """`concurrency` connections, each sending its next request when the last is answered (closed loop), or,
    with `rate`, each on its own fixed schedule of rate / concurrency requests a second with a random phase
    (open loop, as wrk2 does): a request's latency then counts from the moment it was due, so a server that
    falls behind is charged for the wait instead of being sent fewer requests (no coordinated omission)."""
    from urllib.parse import urlsplit

    import psutil

    rng = random.Random(cfg["seed"])
    bodies = [
        json.dumps({"user_id": u, "query": q, "k": 10}).encode()
        for u, q in queries(cfg["seed"], 5_000, cfg["users"])
    ]
    url = urlsplit(cfg["url"])
    host, port = url.hostname or "127.0.0.1", url.port or 80
    headers = (
        f"Host: {host}:{port}\r\nAuthorization: Bearer {cfg['key']}\r\nContent-Type: application/json\r\n"
    ).encode()
    rate = cfg.get("rate")
    interval = cfg["concurrency"] / rate if rate else 0.0
    lat_ns: list[int] = []
    took: list[float] = []
    statuses: dict[str, int] = {}
    measuring = False
    stop = False
    count = 0

    async def worker() -> None:
        nonlocal count
        conn = _Conn(host, port, b"/v1/search", headers)
        due = time.perf_counter_ns() + int(rng.random() * interval * 1e9)
        try:
            while not stop:
                if rate:
                    wait = (due - time.perf_counter_ns()) / 1e9
                    if wait > 0:
                        await asyncio.sleep(wait)
                    t0 = due
                    due += int(interval * 1e9)
                else:
                    t0 = time.perf_counter_ns()
                body = bodies[rng.randrange(len(bodies))]
                try:
                    status, data = await conn.post(body)
                    code = str(status)
                except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
                    conn.close()
                    data, code = b"", type(exc).__name__
                t1 = time.perf_counter_ns()
                if measuring and not stop:
                    lat_ns.append(t1 - t0)
                    statuses[code] = statuses.get(code, 0) + 1
                    count += 1
                    if code == "200":
                        took.append(float(json.loads(data)["took_ms"]))
        finally:
            conn.close()

    tasks = [asyncio.create_task(worker()) for _ in range(cfg["concurrency"])]
    await asyncio.sleep(cfg["warmup_s"])
    me = psutil.Process()
    cpu0 = sum(me.cpu_times()[:2])
    measuring = True
    t_start = time.perf_counter()
    while time.perf_counter() - t_start < cfg["window_s"] and count < cfg["max_requests"]:
        await asyncio.sleep(0.05)
    stop = True
    window = time.perf_counter() - t_start
    cpu1 = sum(me.cpu_times()[:2])
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "requests": len(lat_ns),
        "window_s": round(window, 3),
        "statuses": statuses,
        "latency": summary_ms(lat_ns),
        "took_ms": summary_ms([t * 1e6 for t in took]),
        "client_cpu_s": round(cpu1 - cpu0, 3),
        "offered_rate": rate,
    }


def client_main(config_path: Path) -> None:
    cfg = json.loads(config_path.read_text())
    result = asyncio.run(_drive(cfg))
    Path(cfg["out"]).write_text(json.dumps(result))


# --- the server -------------------------------------------------------------------------------------------


class ApiServer:
    """`uvicorn api.app:create_app --factory --workers N` on a free loopback port, own process group."""

    def __init__(
        self,
        env: dict[str, str],
        workers: int,
        log_path: Path,
        extra_args: tuple[str, ...] = DEFAULT_HTTP_ARGS,
    ) -> None:
        from tests.services import free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.env = env
        self.log_path = log_path
        self.extra_args = extra_args
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ApiServer:
        import httpx

        from tests.services import wait_for

        args = [
            sys.executable,
            "-m",
            "uvicorn",
            "api.app:create_app",
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
            "--no-access-log",
            "--log-level",
            "warning",
            *self.extra_args,
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                args,
                env=self.env,
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

        def up() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"uvicorn exited: {self.log_path.read_text()[-2000:]}")
            try:
                return httpx.get(self.url + "/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(up, timeout_s=90, interval_s=0.3, what="the API server")
        # with several workers, each one answers /healthz only once its lifespan ran: ask a few times
        for _ in range(4 * self.workers):
            up()
        return self

    def stop(self) -> None:
        import signal

        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def pg_cpu_s(postmaster_pid: int | None) -> float | None:
    """CPU seconds of the embedded server: the postmaster, its live backends, and the backends that already
    exited (reaped, so counted in the postmaster's children times): pool churn must not hide CPU."""
    import psutil

    if postmaster_pid is None:
        return None
    try:
        root = psutil.Process(postmaster_pid)
        t = root.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in root.children(recursive=True):
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.Error:
                continue
        return float(total)
    except psutil.Error:
        return None


def api_backends_cpu(url: str) -> dict[int, float]:
    """CPU seconds so far of each live backend serving the API (application_name 'memory-api')."""
    import psutil

    with raw_connection(url) as conn:
        pids = [
            int(r[0])
            for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'memory-api'"
            ).fetchall()
        ]
    out = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            out[pid] = float(t.user + t.system)
        except psutil.Error:
            continue
    return out


def pg_sessions(url: str) -> int:
    """Sessions the database has seen so far (pg_stat_database; backends report within about a second)."""
    with raw_connection(url) as conn:
        return int(
            conn.execute(
                "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()[0]
        )


def load_run(
    svc: Services,
    server: ApiServer,
    *,
    key: str,
    concurrency: int,
    window_s: float,
    max_requests: int,
    seed: int,
    label: str,
    rate: float | None = None,
) -> dict[str, Any]:
    """One client process against a running server; CPU of server, postgres and client per request."""
    cfg_path = svc.tmp / f"client-{label}.json"
    out_path = svc.tmp / f"client-{label}.out.json"
    cfg_path.write_text(
        json.dumps(
            {
                "url": server.url,
                "key": key,
                "users": USERS,
                "concurrency": concurrency,
                "warmup_s": WARMUP_S,
                "window_s": window_s,
                "max_requests": max_requests,
                "rate": rate,
                "seed": seed,
                "out": str(out_path),
            }
        )
    )
    assert server.proc is not None
    sampler = ProcessSampler(server.proc.pid, main_role="uvicorn", child_role="uvicorn worker").start()
    progress(f"{label}: {concurrency} clients for up to {window_s:.0f} s")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.api_load", "--client", str(cfg_path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    # the server's and postgres' CPU over the measured window only (the client warms up first)
    time.sleep(WARMUP_S)
    sampler.sample()
    server0 = sampler.cpu_total()
    pg0 = pg_cpu_s(svc.postmaster_pid)
    api0 = api_backends_cpu(svc.database_url)
    sessions0 = pg_sessions(svc.database_url)
    load0 = os.getloadavg()[0]
    rc = proc.wait(timeout=window_s + WARMUP_S + 120)
    sampler.sample()
    server1 = sampler.cpu_total()
    pg1 = pg_cpu_s(svc.postmaster_pid)
    api1 = api_backends_cpu(svc.database_url)
    sampler.stop()
    time.sleep(1.2)  # backends report their statistics at most once a second
    sessions1 = pg_sessions(svc.database_url) - 1  # less this reading's own session
    if rc != 0 or not out_path.exists():
        raise RuntimeError(f"the load client failed with exit status {rc}")
    r = json.loads(out_path.read_text())
    n = r["requests"] or 1
    r.update(
        label=label,
        concurrency=concurrency,
        workers=server.workers,
        requests_per_s=round(r["requests"] / r["window_s"], 1),
        errors=sum(v for k, v in r["statuses"].items() if k != "200"),
        load_1m=round(load0, 2),
        new_db_sessions=sessions1 - sessions0 - 1,  # less the first reading's own session
        cpu_ms_per_request={
            "uvicorn": round((server1 - server0) * 1000 / n, 3),
            # the API's backends alive at the end (those that exited during the window are left out)
            "postgres": round(sum(v - api0.get(pid, 0.0) for pid, v in api1.items()) * 1000 / n, 3),
            "postgres_all": round((pg1 - pg0) * 1000 / n, 3) if pg0 is not None and pg1 is not None else None,
            "client": round(r["client_cpu_s"] * 1000 / n, 3),
        },
    )
    return r


# --- where the server's CPU goes (py-spy, when installed) ------------------------------------------------

PROFILE_MARKERS: dict[str, tuple[str | None, str]] = {  # layer -> (function name or None, path fragment)
    "in_tenant: auth + search + commit, in a pool thread": ("in_tenant.<locals>.run", "api/deps.py"),
    "search() (SQL + ranking)": ("search", "store/search.py"),
    "user_exists": ("user_exists", "store/users.py"),
    "authenticate (key hash + SQL)": ("authenticate", "api/keys.py"),
    "transaction (begin, commit, close)": ("transaction", "api/deps.py"),
    "TimingMiddleware (ASGI)": ("TimingMiddleware.__call__", "api/metrics.py"),
    "psycopg (all calls)": (None, "psycopg/"),
    "SQLAlchemy (all calls)": (None, "sqlalchemy/"),
    "pydantic (validation, serialization)": (None, "pydantic"),
    "FastAPI routing / dependencies": (None, "fastapi/"),
    "Starlette (middleware, responses)": (None, "starlette/"),
    "anyio thread hand-off": (None, "anyio/"),
    "uvicorn (HTTP protocol)": (None, "uvicorn/"),
    "structlog / logging": (None, "structlog/"),
    "asyncio event loop": (None, "asyncio/"),
}


# leaf frames of a thread that waits (for a socket, the database, a lock, the thread pool's queue)
WAIT_LEAVES = (
    "Selector.select (",
    "Connection.wait (psycopg",
    "Condition.wait (",
    "Event.wait (",
    "Lock.acquire",
    "_wait_for_tstate_lock",
    "Queue.get (",
    "SimpleQueue.get",
    "poll (",
)


def _has(frames: list[str], func: str | None, path: str) -> bool:
    return any(path in f and (func is None or f.startswith(func + " (")) for f in frames)


def py_spy() -> str | None:
    """The py-spy executable: `PY_SPY` in the environment, else on PATH; None when absent."""
    import shutil

    path = os.environ.get("PY_SPY") or shutil.which("py-spy")
    return path if path and Path(path).exists() else None


def profile_server(svc: Services, server: ApiServer, *, key: str, seed: int) -> dict[str, Any]:
    """py-spy (100 Hz, non-blocking, active threads only) on a one-process server under the same load:
    inclusive share of samples per layer and the functions with the most own samples."""
    exe = py_spy()
    if exe is None or server.proc is None:
        return {"skipped": "py-spy is not installed (set PY_SPY or put py-spy on PATH)"}
    raw = svc.tmp / "py-spy.txt"
    duration = int(WARMUP_S + 10)
    spy = subprocess.Popen(
        [
            exe,
            "record",
            "--pid",
            str(server.proc.pid),
            "--duration",
            str(duration),
            "--rate",
            "100",
            "--gil",  # only the thread holding the GIL: Python's own CPU, not threads waiting for it
            "--nonblocking",
            "--format",
            "raw",
            "--output",
            str(raw),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run = load_run(
        svc,
        server,
        key=key,
        concurrency=CONCURRENCY,
        window_s=10.0,
        max_requests=MAX_REQUESTS,
        seed=seed,
        label="w1-c32-py-spy",
    )
    spy.wait(timeout=duration + 60)
    if not raw.exists():
        return {"skipped": f"py-spy wrote nothing (exit status {spy.returncode})"}
    total = waiting = 0
    inclusive: dict[str, int] = dict.fromkeys(PROFILE_MARKERS, 0)
    own: dict[str, int] = {}
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        if any(w in frames[-1] for w in WAIT_LEAVES):  # blocked, not computing: left out of the shares
            waiting += n
            continue
        total += n
        for name, (func, path) in PROFILE_MARKERS.items():
            if _has(frames, func, path):
                inclusive[name] += n
        leaf = frames[-1]
        own[leaf] = own.get(leaf, 0) + n
    top = sorted(own.items(), key=lambda kv: -kv[1])[:10]
    return {
        "samples": total,
        "waiting_samples": waiting,
        "requests_per_s": run["requests_per_s"],
        "inclusive_share": {
            k: round(v / total, 3) for k, v in sorted(inclusive.items(), key=lambda kv: -kv[1])
        }
        if total
        else {},
        "own_share_top": [{"function": k, "share": round(v / total, 3)} for k, v in top] if total else [],
    }


# --- the benchmark ----------------------------------------------------------------------------------------


def run(budget_s: float, quick: bool) -> dict[str, Any]:
    from bench.lib.project import create_key, get_engine, session_scope

    budget_s = min(budget_s, OWN_LIMIT_S[quick])
    started = time.monotonic()
    deadline = started + budget_s
    seed = 20261103
    figures: dict[str, Any] = {
        "runs": [],
        "paced": [],
        "budget_s": budget_s,
        "memories": MEMORIES,
        "users": USERS,
        "pool_size": _default_pool_size(),
        "window_s": WINDOW_S[quick],
    }
    skipped: list[str] = []
    with services() as svc:
        figures["services"] = svc.description
        tenant = unique_name("t-api")
        defs = drop_secondary_indexes(svc.database_url)
        figures["load"] = load_store(
            svc.database_url, tenant=tenant, users=USERS, start=0, stop=MEMORIES, seed=seed, label="API store"
        )
        figures["indexes"] = rebuild_indexes(svc.database_url, defs, label="API store indexes")
        with raw_connection(svc.database_url) as conn:  # no autovacuum or checkpoint of the load
            conn.execute("VACUUM (ANALYZE) memories")  # mid-window
            conn.execute("CHECKPOINT")
        with session_scope(get_engine(svc.database_url)) as session:
            key, _ = create_key(session, tenant, name="bench-api-load")
        queue = unique_name("bench-api")
        # the limiter runs (its Redis round trip is part of every request's cost) but never refuses
        env = worker_env(svc, queue, MEMORY_RATE_LIMIT_PER_S="1000000", MEMORY_RATE_LIMIT_BURST="1000000")
        window = WINDOW_S[quick]

        def measure(
            server: ApiServer,
            label: str,
            *,
            concurrency: int = CONCURRENCY,
            window_s: float = window,
            max_requests: int = MAX_REQUESTS,
            run_seed: int | None = None,
            rate: float | None = None,
        ) -> dict[str, Any]:
            return load_run(
                svc,
                server,
                key=key,
                concurrency=concurrency,
                window_s=window_s,
                max_requests=max_requests,
                seed=seed + server.workers if run_seed is None else run_seed,
                label=label,
                rate=rate,
            )

        try:
            for workers in WORKER_COUNTS[quick]:
                if deadline - time.monotonic() < (1 + PACED_REPEATS[quick]) * (window + WARMUP_S) + 60:
                    skipped.append(f"--workers {workers}: budget")
                    continue
                progress(f"starting uvicorn --workers {workers}")
                server = ApiServer(env, workers, svc.tmp / f"uvicorn-{workers}.log").start()
                try:
                    # closed loop first: it also fills each process's connection pool, so the paced run
                    # measures a server in its steady state, not one opening connections
                    figures["runs"].append(measure(server, f"w{workers}-c{CONCURRENCY}"))
                    for repeat in range(1, PACED_REPEATS[quick] + 1):
                        paced = measure(
                            server,
                            f"w{workers}-c{CONCURRENCY}-{TARGET_RPS:g}rps-{repeat}",
                            rate=TARGET_RPS,
                            run_seed=seed + 10 * workers + repeat,
                        )
                        figures["paced"].append({**paced, "repeat": repeat})
                    if workers == 1:
                        figures["single"] = measure(
                            server,
                            "w1-c1",
                            concurrency=1,
                            window_s=8.0,
                            max_requests=SINGLE_CLIENT_REQUESTS,
                            run_seed=seed,
                        )
                finally:
                    server.stop()
            if deadline - time.monotonic() > window + 60:
                # what-if: uvicorn's pure-Python event loop and HTTP parser, as before uvloop / httptools
                server = ApiServer(env, 1, svc.tmp / "uvicorn-pure.log", PURE_HTTP_ARGS).start()
                try:
                    figures["pure_http"] = measure(server, "w1-c32-asyncio-h11", run_seed=seed + 1)
                finally:
                    server.stop()
            else:
                figures["pure_http"] = None
            if deadline - time.monotonic() > 60:
                server = ApiServer(env, 1, svc.tmp / "uvicorn-profile.log").start()
                try:
                    figures["profile"] = profile_server(svc, server, key=key, seed=seed + 99)
                finally:
                    server.stop()
            if quick and "single" not in figures and deadline - time.monotonic() > 60:
                server = ApiServer(env, 1, svc.tmp / "uvicorn-single.log").start()
                try:
                    figures["single"] = measure(
                        server,
                        "w1-c1",
                        concurrency=1,
                        window_s=6.0,
                        max_requests=SINGLE_CLIENT_REQUESTS,
                        run_seed=seed,
                    )
                finally:
                    server.stop()
        finally:
            drop_queue(svc.redis_url, queue, tenant=tenant)
    return report.result(
        "api_load", quick, figures, skipped, started=started, targets=TARGETS, blocks=SECTION
    )


def _default_pool_size() -> int:
    from shared.settings import Settings

    return int(Settings.model_fields["api_db_pool_size"].default)


# --- targets and the report -------------------------------------------------------------------------------


def best_run(f: dict[str, Any]) -> dict[str, Any] | None:
    runs = [r for r in f["runs"] if r["requests"]]
    return max(runs, key=lambda r: r["requests_per_s"]) if runs else None


def paced_by_workers(f: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Per worker count: the median p95 / p99 of its paced windows, and whether every window kept up with
    the offered rate (>= 98 % of it)."""
    import statistics

    out: dict[int, dict[str, Any]] = {}
    for workers in sorted({r["workers"] for r in f.get("paced", [])}):
        runs = [r for r in f["paced"] if r["workers"] == workers and r["requests"]]
        if not runs:
            continue
        out[workers] = {
            "windows": len(runs),
            "p95_ms": statistics.median(r["latency"]["p95_ms"] for r in runs),
            "p99_ms": statistics.median(r["latency"]["p99_ms"] for r in runs),
            "kept_up": all(r["requests_per_s"] >= 0.98 * TARGET_RPS for r in runs),
        }
    return out


def best_paced(f: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The worker count with the lowest median paced p95 among those that kept up with the rate."""
    groups = [(w, g) for w, g in paced_by_workers(f).items() if g["kept_up"]]
    return min(groups, key=lambda wg: wg[1]["p95_ms"]) if groups else None


def _capacity_note(f: dict[str, Any]) -> str:
    b = best_run(f)
    if not b:
        return "not measured"
    return f"best of --workers {', '.join(str(r['workers']) for r in f['runs'])}: {b['workers']}"


def _latency_note(f: dict[str, Any]) -> str:
    p = best_paced(f)
    if not p:
        return "no paced run kept up with the rate"
    return f"best of --workers {', '.join(str(w) for w in paced_by_workers(f))}: {p[0]}, {p[1]['windows']} windows"


TARGETS = (
    Target(
        f"requests/s, {CONCURRENCY} clients in a closed loop",
        lambda f: b["requests_per_s"] if (b := best_run(f)) else None,
        ">=",
        TARGET_RPS,
        "req/s",
        _capacity_note,
    ),
    Target(
        f"p95 latency at {TARGET_RPS:g} req/s from {CONCURRENCY} clients (paced; median of windows)",
        lambda f: p[1]["p95_ms"] if (p := best_paced(f)) else None,
        "<=",
        TARGET_P95_MS,
        "ms",
        _latency_note,
    ),
)


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return report.evaluate(TARGETS, figures)


def _setup(f: dict[str, Any]) -> str:
    load = f["load"]["generate_copy_s"] + f["load"]["insert_select_s"]
    return f"""Store: {f["memories"]:,} memories of {f["users"]:,} users (hashing-embedded template sentences,
        every index built; load {load:.0f} s, indexes {f["indexes"]["total_s"]} s), {f["services"]}. Server:
        `uvicorn api.app:create_app --factory --workers N --loop uvloop --http httptools` (what uvicorn picks
        by itself with the project's dependencies) on 127.0.0.1 with the default settings (API database role,
        row-level security, JSON logs at INFO to a file, no access log); the store VACUUM ANALYZEd first, so
        no autovacuum runs during a window. Load: one separate client process, {CONCURRENCY} asyncio tasks
        with a keep-alive connection each (a minimal HTTP/1.1 client; httpx, used before, cost about 2 ms of
        CPU per request on the same cores), `POST /v1/search` with k=10 for a random user and synthetic
        query; {WARMUP_S:g} s warm-up, then a window of up to {f["window_s"]:g} s. Client, server and
        PostgreSQL share the machine's 2 cores."""


def _shapes(f: dict[str, Any]) -> str:
    return f"""Two load shapes on each server, in this order. **Closed loop** (`-c{CONCURRENCY}`): each client
        sends its next request as soon as the last is answered; its requests/s is the server's capacity, and
        its latency is mostly the queue of {CONCURRENCY}: by Little's law the mean latency is {CONCURRENCY} /
        throughput, so no server below {1000 * CONCURRENCY / TARGET_P95_MS:,.0f} req/s can show a p95 of
        {TARGET_P95_MS:g} ms in it. **Paced** (`-{TARGET_RPS:g}rps`, open loop, as wrk2 does): the same
        {CONCURRENCY} clients each on a fixed schedule of {TARGET_RPS / CONCURRENCY:.2f} requests a second with
        a random phase, {TARGET_RPS:g} req/s in all; a request's latency counts from when it was due, so a
        server that falls behind is charged for the wait. That is the latency at the target's rate, and the
        p95 target is read from it. The closed loop runs first, so each process's connection pool
        (`MEMORY_API_DB_POOL_SIZE` = {f.get("pool_size", "?")}) is already open for the paced run."""


def _all_runs(f: dict[str, Any]) -> list[dict[str, Any]]:
    extra = [r for r in (f.get("pure_http"), f.get("single")) if r]
    return [*f["runs"], *f.get("paced", []), *extra]


def _cpu_cell(r: dict[str, Any]) -> str:
    cpu = r["cpu_ms_per_request"]
    return f"{cpu['uvicorn']} / {fmt(cpu['postgres'])} / {cpu['client']}"


RUNS_TABLE = Table(
    (
        Column("run", "label"),
        Column("--workers", "workers"),
        Column("clients", "concurrency"),
        Column(
            "offered", lambda r: f"{r['offered_rate']:g} req/s" if r.get("offered_rate") else "closed loop"
        ),
        Column("requests", "requests", ","),
        Column("req/s", "requests_per_s", ","),
        Column("p50 ms", "latency.p50_ms", ".1f"),
        Column("p95 ms", "latency.p95_ms", ".1f"),
        Column("p99 ms", "latency.p99_ms", ".1f"),
        Column("max ms", "latency.max_ms", ".1f"),
        Column("errors", "errors"),
        Column("handler took_ms p50", lambda r: r["took_ms"].get("p50_ms", 0), ".2f"),
        Column("CPU ms/request: uvicorn / API backends / client", _cpu_cell),
        Column("all postgres", "cpu_ms_per_request.postgres_all"),
        Column("new DB sessions", lambda r: r.get("new_db_sessions", "n/a")),
        Column("load 1 min", "load_1m"),
    ),
    _all_runs,
)


def _paced_medians(f: dict[str, Any]) -> str | None:
    groups = paced_by_workers(f)
    if not groups:
        return None
    medians = "; ".join(
        f"--workers {w}: p95 {g['p95_ms']:.1f} ms, p99 {g['p99_ms']:.1f} ms"
        + ("" if g["kept_up"] else " (fell behind the rate)")
        for w, g in groups.items()
    )
    return f"Paced at {TARGET_RPS:g} req/s, median of each server's windows: {medians}."


CPU_NOTE = """CPU per request: psutil, over the measured window; API backends = the PostgreSQL backends with
    application_name `memory-api` alive at the end of the window (a backend that exited during it is missed);
    all postgres = every server process, exited backends included (background writer, WAL writer, the
    benchmark's own readings: an upper bound)."""


def _sessions_note(f: dict[str, Any]) -> str:
    return f"""New DB sessions: connections the database saw opened during the window (pg_stat_database).
        Each API process keeps up to `MEMORY_API_DB_POOL_SIZE` ({f.get("pool_size", "?")}) connections, opened
        on demand and kept, so a new backend (fork, authentication, `SET ROLE`) appears only while a process's
        pool is still filling."""


def _what_if(f: dict[str, Any]) -> str | None:
    pure = f.get("pure_http")
    shipped = next((r for r in f["runs"] if r["workers"] == 1), None)
    if not pure or not shipped:
        return None
    return f"""What-if `{pure["label"]}`: the same one-worker server started with `{" ".join(PURE_HTTP_ARGS)}`
        (uvicorn's pure-Python event loop and HTTP parser, what ran before uvloop / httptools became
        dependencies; not counted for the target): {pure["requests_per_s"]:,} req/s against
        {shipped["requests_per_s"]:,}, p95 {pure["latency"]["p95_ms"]:.1f} ms, uvicorn CPU
        {pure["cpu_ms_per_request"]["uvicorn"]} ms per request against {shipped["cpu_ms_per_request"]["uvicorn"]}."""


def _best_run_text(f: dict[str, Any]) -> str:
    b = best_run(f)
    assert b is not None  # the section is shown only with a best run
    cpu = b["cpu_ms_per_request"]
    total = cpu["uvicorn"] + (cpu["postgres"] or 0) + cpu["client"]
    server_side = cpu["uvicorn"] + (cpu["postgres"] or 0)
    cores = os.cpu_count() or 2
    return f"""Best run: --workers {b["workers"]}, {b["requests_per_s"]:,} req/s. Each request costs
        {total:.2f} ms of CPU in all: uvicorn/FastAPI {cpu["uvicorn"]} ms, PostgreSQL {fmt(cpu["postgres"])} ms,
        the load client {cpu["client"]} ms. {cores} cores at that cost cap the machine near
        {cores * 1000 / total:,.0f} req/s whatever the worker count; without the client (another machine) the
        server side alone ({server_side:.2f} ms) would cap near {cores * 1000 / server_side:,.0f} req/s. The
        route's own time (`took_ms`: the wait for a pool thread, authentication, search, response objects;
        wall time, so waits for the GIL and for a core count) is {b["took_ms"].get("p50_ms", 0):.2f} ms at p50
        of the {b["latency"]["p50_ms"]:.1f} ms the client waits: the rest is the queue of {CONCURRENCY}
        requests for the event loop, the HTTP stack and FastAPI/Starlette."""


def _little(f: dict[str, Any]) -> str:
    b = best_run(f)
    assert b is not None
    cpu = b["cpu_ms_per_request"]
    total = cpu["uvicorn"] + (cpu["postgres"] or 0) + cpu["client"]
    cores = os.cpu_count() or 2
    return f"""Closed-loop latency is the queue, not the service: by Little's law the mean latency of
        {CONCURRENCY} clients is {CONCURRENCY} / throughput ({CONCURRENCY} / {b["requests_per_s"]:,} =
        {1000 * CONCURRENCY / b["requests_per_s"]:.0f} ms here). A closed-loop p95 of {TARGET_P95_MS:g} ms
        would need at least {1000 * CONCURRENCY / TARGET_P95_MS:,.0f} req/s, that is
        {cores * 1000 / (1000 * CONCURRENCY / TARGET_P95_MS):.1f} ms of CPU per request for client, server and
        database together on {cores} cores, against {total:.2f} ms measured. The paced runs measure the
        latency at {TARGET_RPS:g} req/s instead."""


def _profile(f: dict[str, Any]) -> str | None:
    p = f.get("profile")
    if not p:
        return None
    if not p.get("samples"):
        return f"Server profile: {p.get('skipped')}."
    layers = ", ".join(f"{k} {100 * v:.0f} %" for k, v in p["inclusive_share"].items())
    tops = ", ".join(f"`{x['function']}` {100 * x['share']:.1f} %" for x in p["own_share_top"][:8])
    return f"""py-spy on a one-process server under the same load (100 Hz, `--gil`: only the thread holding
        the GIL; {p["requests_per_s"]:,} req/s while sampled; {p["samples"]:,} samples,
        {p.get("waiting_samples", 0):,} more in a waiting frame left out). Share of samples whose stack
        includes each layer (layers nest, so shares overlap): {layers}. Most own samples: {tops}."""


def _single(f: dict[str, Any]) -> str | None:
    s = f.get("single")
    if not s:
        return None
    cpu = s["cpu_ms_per_request"]
    return f"""One client alone (--workers {s["workers"]}): p50 {s["latency"]["p50_ms"]:.2f} ms, p95
        {s["latency"]["p95_ms"]:.2f} ms, {s["requests_per_s"]:,} req/s; CPU per request uvicorn
        {cpu["uvicorn"]} ms, PostgreSQL {fmt(cpu["postgres"])} ms."""


SECTION = (
    Text(_setup),
    Text(_shapes),
    RUNS_TABLE,
    Text(_paced_medians),
    Text(CPU_NOTE),
    Text(_sessions_note),
    Text(_what_if),
    Section(
        "Where the time goes",
        (Text(_best_run_text), Text(_little), Text(_profile), Text(_single)),
        data=lambda f: f if best_run(f) else None,
    ),
)


def render_markdown(result: dict[str, Any]) -> str:
    return report.render(result, SECTION)


def main() -> None:
    ap = argparse.ArgumentParser(description="internal: the load client of `bench.api_load`")
    ap.add_argument("--client", type=Path, required=True, help="a JSON config written by the benchmark")
    client_main(ap.parse_args().client)


if __name__ == "__main__":
    main()
