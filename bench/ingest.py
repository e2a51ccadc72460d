"""The foundation benchmarks: `emit()` latency, sustained ingest throughput, worker peak RSS.

Contract: `run(budget_s, quick) -> dict` measures, never asserts, and returns
`{"name", "quick", "figures", "targets", "skipped", "markdown"}`; `targets` lists each target with the
measured value and `met` true only when the measurement meets it. Phases that would not fit in the budget
are skipped and named in `skipped`. Everything runs against real services (see `bench.lib.services`).

- emit: 20,000 `MemoryClient.emit` calls after a warm-up, against the Redis at REDIS_URL (default the
  machine's 127.0.0.1:6379), interleaved in blocks with the two baselines (the bare `RedisPublisher.publish`
  and Celery's `app.send_task`) over the same payloads, so that machine noise hits all three alike.
- sustained (see `plan`): N single-event messages pre-loaded with `emit` (or `emit_many` batches of 10 and
  100), then a worker with `-c 1/2/4` on a fresh queue and tenant; events/s from the worker's ready line to
  the last row. N of the single-event runs is sized from the rate already measured to fit the budget. One
  run keeps the default extraction debounce (`-pipeline`); the others defer it, to measure ingest alone.
- rss: a `-c 1` worker draining 100,000 events (quick: 20,000) in batches of 100, RSS sampled with psutil
  plus VmHWM; every other run samples RSS too.
- probe (`python -m bench.ingest --probe OUT --tenant T`, a child process with the worker's environment):
  the pieces of one ingest task timed in-process, to say where the time goes.
The whole full run keeps within OWN_LIMIT_S (~11 minutes), whatever budget the runner offers.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import inspect
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.lib import report
from bench.lib.capture import top_own_time
from bench.lib.paths import REPO
from bench.lib.processes import BenchWorker, ProcStats, postgres_cpu_s, redis_cpu_s
from bench.lib.progress import progress
from bench.lib.report import Bullets, Column, Section, Table, Target, Text, fmt
from bench.lib.services import Services, drop_queue, redis_client, services, unique_name, worker_env
from bench.lib.stats import latency_summary_ms

EMIT_CALLS = 20_000
EMIT_WARMUP = 2_000
EMIT_BLOCK = 1_000  # calls per interleaved block
# Single-event runs drain at most SUSTAINED_EVENTS, at least MIN_EVENTS, and otherwise what SLICE_S seconds
# drain at the rate seen so far: at ~150 events/s, 50,000 events would take the whole budget several times.
SUSTAINED_EVENTS = {True: 20_000, False: 50_000}
MIN_EVENTS = {True: 2_000, False: 5_000}
SLICE_S = {True: 25.0, False: 70.0}
INITIAL_RATE = 80.0  # events/s guessed before any run was measured (low: an over-long run costs more)
RSS_EVENTS = {True: 20_000, False: 100_000}
BATCH_SIZE = 100
OWN_LIMIT_S = {True: 300.0, False: 660.0}
PROBE_CALLS = 400
CPU_ROLES = ("worker_main", "pool_children", "postgres", "redis_server")
STALL_S = 60.0  # a drain with no new row for this long is abandoned (and reported as such)
# Ingest alone: the debounce never fires during a run (one idle timer per session, due in a day), so the
# figures do not move with the extraction stage; the `-pipeline` run keeps the defaults to show its cost.
INGEST_ONLY_ENV = {
    "MEMORY_DEBOUNCE_TURNS": "1000000",
    "MEMORY_DEBOUNCE_TOKENS": "1000000000",
    "MEMORY_DEBOUNCE_IDLE_S": "86400",
}

TARGET_EMIT_P50_MS = 0.3
TARGET_EMIT_P99_MS = 2.0
TARGET_EVENTS_PER_S_C2 = 1_000.0
TARGET_PEAK_RSS_MB = 250.0  # MB = 10^6 bytes

# Turns of the kind agents send: short and long, English and Chinese, some with a secret to redact.
CONTENTS = (
    "ok, thanks!",
    "We deploy with docker compose on a single Hetzner box; staging mirrors prod.",
    "Please remember that I prefer pnpm over npm for every JavaScript project.",
    "I tried the migration again and it failed on the users table because of the NOT NULL constraint "
    "on email; I ended up backfilling from the auth provider first, which worked.",
    "记住：我们的接口文档都放在 Notion 里，不要再发 Confluence 的链接了。",
    "my password is hunter2-staging, can you log in and check the dashboard?",
    "Let's move on to the next ticket. " * 6,
)


def event_fields(n: int) -> dict[str, Any]:
    # 200 users x 500 sessions: several workers rarely upsert the same session row at the same moment
    return {
        "user_id": f"user-{n % 200}",
        "session_id": f"session-{n % 500}",
        "content": CONTENTS[n % len(CONTENTS)],
        "event_id": f"ev-{n}",
    }


# --- emit latency ---------------------------------------------------------------------------------------


def _decode_args(raw: bytes | str) -> list[Any]:
    envelope = json.loads(raw)
    return list(json.loads(base64.b64decode(envelope["body"]))[0])


def measure_emit(svc: Services, *, calls: int) -> dict[str, Any]:
    from celery import Celery

    from shared import tasknames
    from shared.client import MemoryClient
    from shared.embedded import kombu_url
    from shared.publisher import RedisPublisher

    queue, tenant = unique_name("bench-emit"), unique_name("t")
    client = MemoryClient(
        tenant,
        broker_url=svc.redis_url,
        queue=queue,
        flush_at_exit=False,
        spool_path=svc.tmp / "spool" / f"{queue}.jsonl",
    )
    publisher = RedisPublisher(svc.redis_url, queue=queue)
    celery_app = Celery("bench-baseline", broker=kombu_url(svc.redis_url), set_as_current=False)
    celery_app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        result_backend=None,
        broker_connection_retry_on_startup=True,
    )
    try:
        progress("emit: warm-up")
        for n in range(EMIT_WARMUP):
            client.emit(**event_fields(n))
        # the baselines send exactly what emit() sent: the warm-up's messages, read back from the queue
        r = redis_client(svc.redis_url)
        payloads = [_decode_args(m)[0] for m in r.lrange(queue, 0, -1)]
        for p in payloads[:200]:
            publisher.publish(tasknames.INGEST, [p])
            celery_app.send_task(tasknames.INGEST, args=[p], queue=queue)
        r.delete(queue)

        samples: dict[str, list[int]] = {"emit": [], "publish": [], "send_task": []}
        clock = time.perf_counter_ns
        done = 0
        while done < calls:
            block = min(EMIT_BLOCK, calls - done)
            for i in range(done, done + block):
                fields = event_fields(EMIT_WARMUP + i)
                t0 = clock()
                client.emit(**fields)
                samples["emit"].append(clock() - t0)
            for i in range(done, done + block):
                p = payloads[i % len(payloads)]
                t0 = clock()
                publisher.publish(tasknames.INGEST, [p])
                samples["publish"].append(clock() - t0)
            for i in range(done, done + block):
                p = payloads[i % len(payloads)]
                t0 = clock()
                celery_app.send_task(tasknames.INGEST, args=[p], queue=queue)
                samples["send_task"].append(clock() - t0)
            done += block
            progress(f"emit: {done:,}/{calls:,} calls of each kind", done, calls)
            r.delete(queue)  # keep the server's memory flat
        out: dict[str, Any] = {k: latency_summary_ms(v) for k, v in samples.items()}
        out["spooled"] = client.spooled  # > 0 means some calls hit the 50 ms timeout and were spooled
        out["send_task_over_emit_p50"] = round(out["send_task"]["p50_ms"] / out["emit"]["p50_ms"], 2)
        out["send_task_over_publish_p50"] = round(out["send_task"]["p50_ms"] / out["publish"]["p50_ms"], 2)
        return out
    finally:
        client.close()
        publisher.close()
        celery_app.close()
        drop_queue(svc.redis_url, queue)


# --- sustained ingest -----------------------------------------------------------------------------------


def preload(svc: Services, *, queue: str, tenant: str, events: int, batch: int) -> dict[str, Any]:
    from shared.client import MemoryClient

    # a generous timeout: a slow moment on a busy machine must not spool events away from the queue
    client = MemoryClient(
        tenant,
        broker_url=svc.redis_url,
        queue=queue,
        publish_timeout_s=5.0,
        flush_at_exit=False,
        spool_path=svc.tmp / "spool" / f"{queue}.jsonl",
    )
    t0 = time.monotonic()
    for start in range(0, events, batch):
        stop = min(start + batch, events)
        if batch == 1:
            client.emit(**event_fields(start))
        else:
            client.emit_many(event_fields(n) for n in range(start, stop))
        if start % 5_000 < batch:
            progress(f"pre-loading {queue}: {start:,}/{events:,} events", start, events)
    client.flush()
    client.close()
    elapsed = time.monotonic() - t0
    if client.spooled:
        raise RuntimeError(f"{client.spooled} calls were spooled instead of queued while pre-loading")
    return {"preload_s": round(elapsed, 2), "messages": -(-events // batch)}


def _rows(engine: Any, tenant: str) -> int:
    from sqlalchemy import text

    with engine.connect() as conn:
        count = conn.execute(text("SELECT count(*) FROM events WHERE tenant_id = :t"), {"t": tenant}).scalar()
    return int(count or 0)


def _received_span_s(engine: Any, tenant: str) -> float | None:
    from sqlalchemy import text

    with engine.connect() as conn:
        lo, hi = conn.execute(
            text("SELECT min(received_at), max(received_at) FROM events WHERE tenant_id = :t"), {"t": tenant}
        ).one()
    return (hi - lo).total_seconds() if lo and hi else None


def drain_run(
    svc: Services,
    *,
    events: int,
    concurrency: int,
    batch: int,
    deadline: float,
    label: str,
    env: dict[str, str],
    extra_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Pre-load `events`, start a worker with `-c concurrency`, wait for the last row; measure all along."""
    from bench.lib.project import get_engine

    queue, tenant = unique_name(f"bench-{label}"), unique_name("t")
    out: dict[str, Any] = {
        "label": label,
        "events": events,
        "concurrency": concurrency,
        "batch": batch,
        "extraction": env is not INGEST_ONLY_ENV,
    }
    engine = get_engine(svc.database_url, pool_size=1, application_name="bench")
    out["load_1m"] = round(os.getloadavg()[0], 2)  # a busy machine explains a slow run
    try:
        out.update(preload(svc, queue=queue, tenant=tenant, events=events, batch=batch))
        progress(f"{label}: starting a worker with -c {concurrency}")
        worker = BenchWorker(
            worker_env(svc, queue, **env),
            queue,
            svc.tmp / f"{queue}.log",
            concurrency,
            extra_args=list(extra_args),
        ).start()
        pg0, redis0 = postgres_cpu_s(svc.postmaster_pid), redis_cpu_s(svc.redis_url)
        stats: dict[int, ProcStats] = {}
        try:
            count, last_change, last_count = 0, time.monotonic(), 0
            while True:
                count = _rows(engine, tenant)
                now = time.monotonic()
                if count != last_count:
                    last_change, last_count = now, count
                progress(f"{label}: {count:,}/{events:,} rows", count, events)
                if count >= events:
                    break
                if now > deadline or now - last_change > STALL_S or not worker.alive():
                    why = "budget" if now > deadline else ("stalled" if worker.alive() else "worker died")
                    out["incomplete"] = why
                    out["worker_log_tail"] = worker.log_tail()
                    break
                time.sleep(0.25)
            wall = time.monotonic() - worker.ready_at
            pg1, redis1 = postgres_cpu_s(svc.postmaster_pid), redis_cpu_s(svc.redis_url)
        finally:
            stats = worker.stop()
        span = _received_span_s(engine, tenant)
        out.update(
            rows=count,
            wall_s=round(wall, 2),
            events_per_s=round(count / wall, 1),
            steady_events_per_s=round((count - 1) / span, 1) if span and count > 1 else None,
            cpu_ms_per_event=_cpu_per_event(stats, pg0, pg1, redis0, redis1, count),
            processes=[
                {"pid": s.pid, "role": s.role, "peak_rss_mb": _mb(s.peak_rss), "vm_hwm_mb": _mb(s.vm_hwm)}
                for s in stats.values()
            ],
        )
        return out
    finally:
        drop_queue(svc.redis_url, queue, tenant=tenant)


def _mb(n: int | None) -> float | None:
    return None if n is None else round(n / 1e6, 1)


def _cpu_per_event(
    stats: dict[int, ProcStats],
    pg0: float | None,
    pg1: float | None,
    redis0: float | None,
    redis1: float | None,
    count: int,
) -> dict[str, float | None]:
    if not count:
        return {}

    def per(v: float | None) -> float | None:
        return None if v is None else round(v * 1000 / count, 3)

    return {
        "worker_main": per(sum(s.cpu_s - s.cpu_s_start for s in stats.values() if s.role == "main")),
        "pool_children": per(sum(s.cpu_s - s.cpu_s_start for s in stats.values() if s.role == "child")),
        "postgres": per(pg1 - pg0) if pg0 is not None and pg1 is not None else None,
        "redis_server": per(redis1 - redis0) if redis0 is not None and redis1 is not None else None,
    }


# --- the pieces of one task (in a child process with the worker's environment) ----------------------------


def probe(out_path: Path, *, calls: int, tenant: str) -> None:
    from sqlalchemy import text

    import worker.app  # noqa: F401 - first, as `celery -A worker.app` does (the task modules import it)
    from shared.contract import utcnow
    from shared.db.engine import session_scope
    from shared.logging import configure_logging
    from store.ingest import split_envelope, store_events
    from worker import runtime
    from worker.tasks.ingest import ingest

    configure_logging(level="INFO", fmt="json")  # as in the worker: the canonical line is part of the cost
    engine = runtime.engine()
    base = 10_000_000  # event ids apart from anything else the tenant gets
    envelopes = (
        {"tenant_id": tenant, "events": [{**event_fields(base + i), "role": "user", "type": "turn"}]}
        for i in itertools.count()
    )

    def roundtrip() -> None:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def split() -> None:
        split_envelope(next(envelopes), now=utcnow())

    # row-level security scopes a transaction to a tenant where session_scope supports it
    scope_kwargs = {"tenant": tenant} if "tenant" in inspect.signature(session_scope).parameters else {}

    def store_txn() -> None:
        env = next(envelopes)
        now = utcnow()
        events = split_envelope(env, now=now).events
        with session_scope(engine, **scope_kwargs) as session:
            store_events(session, tenant, events, now=now)

    def task_body() -> None:
        ingest.run(next(envelopes))

    def task_apply() -> None:
        ingest.apply(args=[next(envelopes)])

    pieces: dict[str, Callable[[], None]] = {
        "db_roundtrip": roundtrip,
        "validate_split": split,
        "store_transaction": store_txn,
        "task_body": task_body,
        "task_apply_eager": task_apply,
    }
    result: dict[str, Any] = {}
    for name, fn in pieces.items():
        for _ in range(20):  # warm-up: pool connections, prepared caches
            fn()
        samples = []
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            fn()
            samples.append(time.perf_counter_ns() - t0)
        result[name] = latency_summary_ms(samples)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls // 2):
        task_body()
    profiler.disable()
    per_task = 1000 / (calls // 2)
    result["profile_top_tottime"] = [
        {"function": function, "tottime_ms_per_call": round(own_s * per_task, 4)}
        for function, own_s, _ in top_own_time(profiler)
    ]
    out_path.write_text(json.dumps(result, indent=2))


def run_probe(svc: Services, *, calls: int) -> dict[str, Any]:
    queue, tenant = unique_name("bench-probe"), unique_name("t")
    out = svc.tmp / f"{queue}.json"
    progress("probe: timing the pieces of one ingest task")
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.ingest",
                "--probe",
                str(out),
                "--calls",
                str(calls),
                "--tenant",
                tenant,
            ],
            env=worker_env(svc, queue, **INGEST_ONLY_ENV),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        drop_queue(svc.redis_url, queue, tenant=tenant)
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    return dict(json.loads(out.read_text()))


# --- the benchmark --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Drain:
    """One planned drain run: fixed `events`, or as many as `slice_s` drains at the rate seen so far."""

    label: str
    concurrency: int
    batch: int = 1
    env: dict[str, str] = field(default_factory=lambda: INGEST_ONLY_ENV)
    slice_s: float | None = None
    events: int | None = None
    rate_from: str = "c1"  # the earlier run whose rate sizes this one
    rate_factor: float = 1.0
    extra_args: tuple[str, ...] = ()


def plan(quick: bool) -> list[Drain]:
    s = SLICE_S[quick]
    return [
        Drain("c1", 1, slice_s=s),
        Drain("c2", 2, slice_s=s),
        Drain("c4", 4, slice_s=s),
        Drain("c2-pipeline", 2, env={}, slice_s=s / 2, rate_from="c2", rate_factor=0.7),
        Drain("batch10-c2", 2, batch=10, slice_s=s / 2, rate_from="c2", rate_factor=5.0),
        Drain(f"batch{BATCH_SIZE}-c2", 2, batch=BATCH_SIZE, events=SUSTAINED_EVENTS[quick]),
        Drain(f"rss-batch{BATCH_SIZE}-c1", 1, batch=BATCH_SIZE, events=RSS_EVENTS[quick]),
    ]


def size_run(d: Drain, rates: dict[str, float], quick: bool) -> int:
    """Events for a run: fixed, or what its time slice drains at the rate of an earlier run (rounded)."""
    if d.events is not None:
        return d.events
    assert d.slice_s is not None
    rate = rates.get(d.rate_from, rates.get("c1", INITIAL_RATE)) * d.rate_factor
    n = int(rate * d.slice_s / 1000) * 1000
    return max(MIN_EVENTS[quick], min(SUSTAINED_EVENTS[quick], n))


def run(budget_s: float, quick: bool) -> dict[str, Any]:
    # the ingest benchmark keeps to its own limit even when the runner offers more
    budget_s = min(budget_s, OWN_LIMIT_S[quick])
    started = time.monotonic()
    deadline = started + budget_s
    figures: dict[str, Any] = {"sustained": [], "budget_s": budget_s}
    skipped: list[str] = []
    with services() as svc:
        figures["services"] = {
            "database": "embedded PostgreSQL in a temp dir" if svc.embedded else "DATABASE_URL",
            "redis": _safe_url(svc.redis_url),
        }
        figures["emit"] = measure_emit(svc, calls=EMIT_CALLS)
        figures["probe"] = run_probe(svc, calls=PROBE_CALLS)
        rates: dict[str, float] = {}
        for d in plan(quick):
            left = deadline - time.monotonic()
            if left < 30:
                skipped.append(f"{d.label}: {left:.0f} s of budget left")
                continue
            events = size_run(d, rates, quick)
            run_deadline = min(deadline, time.monotonic() + 3 * (d.slice_s or 60) + 60)
            result = drain_run(
                svc,
                events=events,
                concurrency=d.concurrency,
                batch=d.batch,
                deadline=run_deadline,
                label=d.label,
                env=d.env,
                extra_args=d.extra_args,
            )
            figures["sustained"].append(result)
            if result["rows"]:
                rates[d.label] = result["events_per_s"]
    figures["rss"] = _rss_figure(figures["sustained"], RSS_EVENTS[quick])
    return report.result("ingest", quick, figures, skipped, started=started, targets=TARGETS, blocks=SECTION)


def _safe_url(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))  # never a password in a report


def _rss_figure(runs: list[dict[str, Any]], wanted_events: int) -> dict[str, Any] | None:
    """Peak RSS of the dedicated `-c 1` run (else the largest `-c 1` run), and the worst over every run."""
    candidates = [r for r in runs if r["concurrency"] == 1]
    if not candidates:
        return None
    largest = max(candidates, key=lambda r: r["rows"])
    best = next((r for r in candidates if r["label"].startswith("rss")), largest)

    def peak(rs: list[dict[str, Any]], role: str, key: str) -> float | None:
        values = [p[key] for r in rs for p in r["processes"] if p["role"] == role and p[key] is not None]
        return max(values) if values else None

    return {
        "run": best["label"],
        "events_drained": best["rows"],
        "messages": best["messages"],
        "wanted_events": wanted_events,
        "main_peak_rss_mb": peak([best], "main", "peak_rss_mb"),
        "main_vm_hwm_mb": peak([best], "main", "vm_hwm_mb"),
        "child_peak_rss_mb": peak([best], "child", "peak_rss_mb"),
        "child_vm_hwm_mb": peak([best], "child", "vm_hwm_mb"),
        "pool_children_seen": sum(1 for p in best["processes"] if p["role"] == "child"),
        "worst_any_run_mb": max(
            (
                v
                for role in ("main", "child")
                for key in ("peak_rss_mb", "vm_hwm_mb")
                if (v := peak(runs, role, key)) is not None
            ),
            default=None,
        ),
    }


# --- targets and the report -------------------------------------------------------------------------------


def _worst_rss(f: dict[str, Any]) -> float | None:
    rss = f["rss"]
    if not rss:
        return None
    keys = ("main_peak_rss_mb", "main_vm_hwm_mb", "child_peak_rss_mb", "child_vm_hwm_mb")
    values = [rss[k] for k in keys if rss[k] is not None]
    return max(values) if values else None


def _rss_note(f: dict[str, Any]) -> str:
    rss = f["rss"]
    if not rss:
        return "not measured"
    note = f"worst of main and pool child, `-c 1`, {rss['events_drained']:,} events in {rss['messages']:,} messages"
    if rss["events_drained"] < rss["wanted_events"]:
        note += f"; wanted {rss['wanted_events']:,}: not reached"
    return note


def _c2(f: dict[str, Any]) -> dict[str, Any] | None:
    return next((r for r in f["sustained"] if r["label"] == "c2"), None)


def _c2_note(f: dict[str, Any]) -> str:
    c2 = _c2(f)
    if c2 is None:
        return "not measured"
    return f"{c2['rows']:,} single-event messages" + (
        f" ({c2['incomplete']})" if c2.get("incomplete") else ""
    )


TARGETS = (
    Target("emit() p50", "emit.emit.p50_ms", "<=", TARGET_EMIT_P50_MS, "ms"),
    Target("emit() p99", "emit.emit.p99_ms", "<=", TARGET_EMIT_P99_MS, "ms"),
    Target(
        "sustained ingest, -c 2",
        lambda f: c2["events_per_s"] if (c2 := _c2(f)) else None,
        ">=",
        TARGET_EVENTS_PER_S_C2,
        "events/s",
        _c2_note,
    ),
    Target("worker peak RSS", _worst_rss, "<=", TARGET_PEAK_RSS_MB, "MB", _rss_note),
)


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return report.evaluate(TARGETS, figures)


def _emit_rows(e: dict[str, Any]) -> list[dict[str, Any]]:
    names = {
        "emit": "`MemoryClient.emit` (validate + redact + publish)",
        "publish": "`RedisPublisher.publish` alone (same payloads)",
        "send_task": "Celery `app.send_task` (same payloads, baseline)",
    }
    return [{**e[key], "call": name} for key, name in names.items()]


EMIT_SECTION = Section(
    "`emit()` latency",
    (
        Text(
            lambda e: (
                f"""{e["emit"]["n"]:,} calls of each kind after {EMIT_WARMUP:,} warm-up calls,
            interleaved in blocks of {EMIT_BLOCK:,} so that machine noise hits all three alike; one process,
            one thread."""
            )
        ),
        Table(
            (
                Column("call", "call"),
                Column("p50 ms", "p50_ms", ".3f"),
                Column("p90 ms", "p90_ms", ".3f"),
                Column("p99 ms", "p99_ms", ".3f"),
                Column("max ms", "max_ms", ".2f"),
            ),
            _emit_rows,
        ),
        Text(
            lambda e: (
                f"""`send_task` / `emit` at p50: {e["send_task_over_emit_p50"]}x; `send_task` / bare publish:
            {e["send_task_over_publish_p50"]}x. Calls spooled (broker slower than the 50 ms timeout):
            {e["spooled"]}."""
            )
        ),
    ),
    data="emit",
)

SUSTAINED_INTRO = f"""Each run: events pre-loaded into a fresh queue for a fresh tenant (`emit`, one event per
    message, or `emit_many` batches), then one worker started (`celery -A worker.app worker -c N`, prefetch 4,
    log level INFO, JSON logs to a file). events/s = rows / (last row seen - worker ready); steady = rows /
    span of `received_at` (first to last task). CPU per event: user+system time of each process during the
    drain. Runs other than `-pipeline` defer the debounced extraction (no extraction task fires during the
    run), so they measure ingest alone; `-pipeline` keeps the default debounce (rules-only extraction tasks on
    the same queue). Single-event runs drain what about {SLICE_S[False]:.0f} s ({SLICE_S[True]:.0f} s in quick
    mode) take at the rate measured so far, between {MIN_EVENTS[False]:,} and {SUSTAINED_EVENTS[False]:,}
    events ({MIN_EVENTS[True]:,} and {SUSTAINED_EVENTS[True]:,} in quick mode), to fit the time budget."""


def _peak_rss(r: dict[str, Any]) -> str:
    def peak(role: str) -> float | None:
        return max((p["peak_rss_mb"] for p in r["processes"] if p["role"] == role), default=None)

    return f"{fmt(peak('main'))} / {fmt(peak('child'))}"


SUSTAINED_SECTION = Section(
    "Sustained ingest (accepted -> row in Postgres)",
    (
        Text(SUSTAINED_INTRO),
        Table(
            (
                Column(
                    "run", lambda r: r["label"] + (f" ({r['incomplete']})" if r.get("incomplete") else "")
                ),
                Column("events", "rows", ","),
                Column("messages", "messages", ","),
                Column("-c", "concurrency"),
                Column("events/s", "events_per_s", ",.0f"),
                Column("steady events/s", "steady_events_per_s", ",.0f"),
                Column("wall s", "wall_s"),
                Column(
                    "CPU ms/event: worker main / pool / postgres / redis",
                    lambda r: " / ".join(fmt(r["cpu_ms_per_event"].get(k)) for k in CPU_ROLES),
                ),
                Column("peak RSS MB main / pool", _peak_rss),
                Column("load 1 min", "load_1m"),
            )
        ),
    ),
    data="sustained",
)

RSS_SECTION = Section(
    "Worker peak RSS",
    (
        Text(
            lambda rss: (
                f"""Run `{rss["run"]}`: a worker with `-c 1` (one main process + one prefork pool
            child) draining {rss["events_drained"]:,} events in {rss["messages"]:,} messages (batches keep
            100,000 events within the time budget; the single-event runs above sample RSS too). psutil RSS
            sampled every 0.25 s, and the kernel's VmHWM read just before the worker was stopped."""
            )
        ),
        Table(
            (Column("process", "process"), Column("peak RSS (sampled) MB", "rss"), Column("VmHWM MB", "hwm")),
            lambda rss: [
                {"process": "main (consumer)", "rss": rss["main_peak_rss_mb"], "hwm": rss["main_vm_hwm_mb"]},
                {"process": "pool child", "rss": rss["child_peak_rss_mb"], "hwm": rss["child_vm_hwm_mb"]},
            ],
        ),
        Text(
            lambda rss: (
                f"""Worst single process over every run of this benchmark:
            {fmt(rss["worst_any_run_mb"])} MB. Pool children seen in `{rss["run"]}`: {rss["pool_children_seen"]}
            (more than 1 means a child was recycled by `worker_max_memory_per_child`)."""
            )
        ),
    ),
    data="rss",
)


def _cpu_total(run: dict[str, Any] | None) -> float | None:
    if not run:
        return None
    parts = [run["cpu_ms_per_event"].get(k) for k in CPU_ROLES]
    return None if any(p is None for p in parts[:3]) else sum(p for p in parts if p is not None)


def _runs(f: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["label"]: r for r in f["sustained"]}


def _one_process(f: dict[str, Any]) -> str | None:
    c1 = _runs(f).get("c1")
    if not (c1 and c1["rows"] and c1["cpu_ms_per_event"].get("pool_children") is not None):
        return None
    probe, cpu = f["probe"], c1["cpu_ms_per_event"]
    task, store = probe["task_apply_eager"]["p50_ms"], probe["store_transaction"]["p50_ms"]
    return f"""With `-c 1` an event takes {1000 / c1["events_per_s"]:.2f} ms of wall time. The pool child
        spends {cpu["pool_children"]} ms of CPU per event; in-process the task through Celery's tracer takes
        {task:.2f} ms of wall time (the probe's p50), {store:.2f} ms of it the database transaction. The main
        process, Celery's consumer (fetch from Redis, decode, dispatch to the child, late ack, task events),
        spends another {cpu["worker_main"]} ms of CPU per event, Postgres {fmt(cpu.get("postgres"))} ms. Even
        with Celery's cost at zero, one transaction per event at {store:.2f} ms caps one process at
        ~{1000 / store:,.0f} events/s."""


def _two_processes(f: dict[str, Any]) -> str | None:
    c2 = _runs(f).get("c2")
    total = _cpu_total(c2)
    if not c2 or not total:
        return None
    cpu, cores = c2["cpu_ms_per_event"], os.cpu_count() or 1
    return f"""At `-c 2` each event costs {total:.2f} ms of CPU in all (worker main {cpu["worker_main"]}, pool
        {cpu["pool_children"]}, postgres {cpu["postgres"]}, redis {fmt(cpu["redis_server"])}); {cores} cores can
        do at most ~{cores * 1000 / total:,.0f} events/s at that cost, whatever `-c` is: past {cores} processes,
        more only contend."""


def _batching(f: dict[str, Any]) -> str | None:
    runs = _runs(f)
    total, total10 = _cpu_total(runs.get("c2")), _cpu_total(runs.get("batch10-c2"))
    if not (total and total10 and total > total10):
        return None
    # cpu/event = per_message / batch + per_event; two batch sizes give both terms
    per_message = (total - total10) * 10 / 9
    per_event = max(total - per_message, 0.0)
    batched = ", ".join(
        f"`{r['label']}` {r['events_per_s']:,.0f} events/s"
        for r in f["sustained"]
        if r["batch"] > 1 and r["concurrency"] == 2
    )
    return f"""Comparing 1 and 10 events per message at `-c 2`: about {per_message:.2f} ms of CPU is paid per
        message (Celery's consumer and tracer, one transaction and commit, the log lines) and about
        {per_event:.2f} ms per event. The per-message cost dominates single-event ingest; batching
        (`emit_many`, or a consumer that stores several messages in one transaction) is what moves the
        figure: {batched}."""


def _target_missed(f: dict[str, Any]) -> str | None:
    c2 = _runs(f).get("c2")
    if not c2 or c2["events_per_s"] >= TARGET_EVENTS_PER_S_C2:
        return None
    return (
        f"The {TARGET_EVENTS_PER_S_C2:,.0f} events/s target at `-c 2` is not met with one event per message "
        "on this machine."
    )


PROBE_PIECES = {
    "db_roundtrip": "`SELECT 1` round trip (pool checkout included)",
    "validate_split": "validate the envelope (`split_envelope`)",
    "store_transaction": "validate + the DB transaction (`store_events`, commit)",
    "task_body": "the task function (`ingest.run`: the above + the debounce trigger)",
    "task_apply_eager": "the task through Celery's tracer (`ingest.apply`: signals, log line)",
}

WHERE_SECTION = Section(
    "Where the time goes",
    (
        Text(
            f"""One ingest task's pieces, timed in one process with the worker's settings ({PROBE_CALLS} calls
            each, single-event envelopes):"""
        ),
        Table(
            (Column("piece", "piece"), Column("p50 ms", "p50_ms", ".3f"), Column("p90 ms", "p90_ms", ".3f")),
            lambda f: [{**f["probe"][key], "piece": label} for key, label in PROBE_PIECES.items()],
        ),
        Bullets((_one_process, _two_processes, _batching, _target_missed)),
        Text("Top functions by own time in the task function (cProfile, ms per task):"),
        Bullets(
            lambda f: [
                f"`{p['function']}`: {p['tottime_ms_per_call']}" for p in f["probe"]["profile_top_tottime"]
            ]
        ),
    ),
    data=lambda f: None if "error" in f["probe"] else f,
)

SECTION = (
    Text(
        lambda f: (
            f"""Services: {f["services"]["database"]}; Redis at `{f["services"]["redis"]}` (shared with
        whatever else runs on the machine)."""
        )
    ),
    EMIT_SECTION,
    SUSTAINED_SECTION,
    RSS_SECTION,
    Section("Worker peak RSS", (Text("Not measured."),), data=lambda f: None if f["rss"] else f),
    WHERE_SECTION,
    Section(
        "Where the time goes",
        (Text(lambda f: f"The probe failed: `{f['probe']['error'][-300:]}`"),),
        data=lambda f: f if "error" in f["probe"] else None,
    ),
)


def render_markdown(result: dict[str, Any]) -> str:
    return report.render(result, SECTION)


def main() -> None:
    ap = argparse.ArgumentParser(description="internal: the in-process probe of `bench.ingest`")
    ap.add_argument("--probe", type=Path, required=True, help="write the probe's JSON here")
    ap.add_argument("--calls", type=int, default=PROBE_CALLS)
    ap.add_argument("--tenant", required=True)
    args = ap.parse_args()
    probe(args.probe, calls=args.calls, tenant=args.tenant)


if __name__ == "__main__":
    main()
