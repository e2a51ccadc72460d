"""The foundation benchmarks: `emit()` latency, sustained ingest throughput through the ingest stream,
accepted-to-stored lag, consumer peak RSS.

Contract: `run(budget_s, quick) -> dict` measures, never asserts, and returns
`{"name", "quick", "figures", "targets", "skipped", "markdown"}`; `targets` lists each target with the
measured value and `met` true only when the measurement meets it. Phases that would not fit in the budget
are skipped and named in `skipped`. Everything runs against real services (see `bench.lib.services`).

- emit: 20,000 `MemoryClient.emit` calls after a warm-up, against the Redis at REDIS_URL (default the
  machine's 127.0.0.1:6379), interleaved in blocks with the two baselines (the bare `StreamProducer.append`,
  one XADD, and Celery's `app.send_task`) over the same payloads, so that machine noise hits all three alike.
- sustained (see `plan`): N single-event entries pre-loaded with `emit` (or `emit_many` batches of 10 and
  100), then 1 or 2 ingest consumer processes (`python -m worker.ingest_consumer`) on a fresh stream and
  tenant; events/s from the consumers' start line to the last row. N of the single-event runs is sized from
  the rate already measured to fit the budget. One run keeps the default extraction debounce and a Celery
  worker (`-pipeline`); the others defer it, to measure ingest alone.
- lag: 2 consumers running, events offered at LAG_RATE/s by one paced emitter; accepted-to-stored lag of
  each event (`received_at` - the client's `event_time`, one clock) as p50 / p99.
- probe (`python -m bench.ingest --probe OUT --tenant T`, a child process with the consumer's environment):
  one batch's pieces timed in-process, per batch size, to say where the time goes.
The whole full run keeps within OWN_LIMIT_S (~11 minutes), whatever budget the runner offers.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.lib import report
from bench.lib.capture import top_own_time
from bench.lib.paths import REPO
from bench.lib.processes import BenchConsumers, BenchWorker, ProcStats, postgres_cpu_s, redis_cpu_s
from bench.lib.progress import progress
from bench.lib.report import Bullets, Column, Section, Table, Target, Text, fmt
from bench.lib.services import Services, drop_queue, redis_client, services, unique_name, worker_env
from bench.lib.stats import latency_summary_ms

EMIT_CALLS = 20_000
EMIT_WARMUP = 2_000
EMIT_BLOCK = 1_000  # calls per interleaved block
# Single-event runs drain at most SUSTAINED_EVENTS, at least MIN_EVENTS, and otherwise what SLICE_S seconds
# drain at the rate seen so far.
SUSTAINED_EVENTS = {True: 20_000, False: 100_000}
MIN_EVENTS = {True: 5_000, False: 20_000}
SLICE_S = {True: 10.0, False: 30.0}
INITIAL_RATE = 1_000.0  # events/s guessed before any run was measured
RSS_EVENTS = {True: 20_000, False: 100_000}
BATCH_SIZE = 100
LAG_RATE = 500  # events/s offered in the lag run
LAG_S = {True: 10.0, False: 30.0}
OWN_LIMIT_S = {True: 300.0, False: 660.0}
PROBE_CALLS = 200
PROBE_BATCHES = (1, 100, 500)
CPU_ROLES = ("consumer", "worker", "postgres", "redis_server")
STALL_S = 60.0  # a drain with no new row for this long is abandoned (and reported as such)
# Ingest alone: the debounce never fires during a run (one idle timer per session, due in a day), so the
# figures do not move with the extraction stage; the `-pipeline` run keeps the defaults to show its cost.
INGEST_ONLY_ENV = {
    "MEMORY_DEBOUNCE_TURNS": "1000000",
    "MEMORY_DEBOUNCE_TOKENS": "1000000000",
    "MEMORY_DEBOUNCE_IDLE_S": "86400",
}

TARGET_EMIT_P50_MS = 0.3
TARGET_EMIT_P99_MS = 1.0
TARGET_EVENTS_PER_S_C2 = 2_000.0
TARGET_PEAK_RSS_MB = 250.0  # MB = 10^6 bytes

# Before the stream (Celery messages, one transaction per message): BENCHMARKS.md of 2026-11-29, commit
# 0db4235, this machine, the same method. Kept for comparison.
BEFORE: dict[str, Any] = {
    "commit": "0db4235",
    "date": "2026-11-29",
    "emit_p50_ms": 0.174,
    "emit_p99_ms": 0.4755,
    "rows": [  # run, events/s, CPU ms per event
        ("c1 (worker -c 1)", 200, "1.47 / 2.784 / 0.496 / 0.209 (main / pool / postgres / redis)"),
        ("c2 (worker -c 2)", 268, "1.568 / 3.361 / 0.536 / 0.279"),
        ("c4 (worker -c 4)", 296, "1.336 / 3.901 / 0.6 / 0.258"),
        ("batch10-c2", 1690, "0.157 / 0.691 / 0.099 / 0.041"),
        ("batch100-c2", 2780, "0.03 / 0.553 / 0.051 / 0.019"),
    ],
    "worker_peak_rss_mb": 144.8,
}

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
    # 200 users x 500 sessions: several consumers rarely upsert the same session row at the same moment
    return {
        "user_id": f"user-{n % 200}",
        "session_id": f"session-{n % 500}",
        "content": CONTENTS[n % len(CONTENTS)],
        "event_id": f"ev-{n}",
    }


# --- emit latency ---------------------------------------------------------------------------------------


def measure_emit(svc: Services, *, calls: int) -> dict[str, Any]:
    from celery import Celery

    from shared import tasknames
    from shared.client import MemoryClient
    from shared.embedded import kombu_url
    from shared.stream import FIELD, StreamProducer, stream_key

    queue, tenant = unique_name("bench-emit"), unique_name("t")
    key = stream_key(queue)
    client = MemoryClient(
        tenant,
        broker_url=svc.redis_url,
        queue=queue,
        flush_at_exit=False,
        spool_path=svc.tmp / "spool" / f"{queue}.jsonl",
    )
    producer = StreamProducer(svc.redis_url, queue=queue)
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
        # the baselines send exactly what emit() sent: the warm-up's envelopes, read back from the stream
        r = redis_client(svc.redis_url)
        entries: Any = r.xrange(key)
        payloads = [json.loads(fields[FIELD]) for _, fields in entries]
        for p in payloads[:200]:
            producer.append(p)
            celery_app.send_task(tasknames.INGEST, args=[p], queue=queue)
        r.delete(queue, key)

        samples: dict[str, list[int]] = {"emit": [], "append": [], "send_task": []}
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
                producer.append(p)
                samples["append"].append(clock() - t0)
            for i in range(done, done + block):
                p = payloads[i % len(payloads)]
                t0 = clock()
                celery_app.send_task(tasknames.INGEST, args=[p], queue=queue)
                samples["send_task"].append(clock() - t0)
            done += block
            progress(f"emit: {done:,}/{calls:,} calls of each kind", done, calls)
            r.delete(queue, key)  # keep the server's memory flat
        out: dict[str, Any] = {k: latency_summary_ms(v) for k, v in samples.items()}
        out["spooled"] = client.spooled  # > 0 means some calls hit the 50 ms timeout and were spooled
        out["send_task_over_emit_p50"] = round(out["send_task"]["p50_ms"] / out["emit"]["p50_ms"], 2)
        out["send_task_over_append_p50"] = round(out["send_task"]["p50_ms"] / out["append"]["p50_ms"], 2)
        return out
    finally:
        client.close()
        producer.close()
        celery_app.close()
        drop_queue(svc.redis_url, queue)


# --- sustained ingest -----------------------------------------------------------------------------------


def _client(svc: Services, queue: str, tenant: str) -> Any:
    from shared.client import MemoryClient

    # a generous timeout: a slow moment on a busy machine must not spool events away from the stream
    return MemoryClient(
        tenant,
        broker_url=svc.redis_url,
        queue=queue,
        publish_timeout_s=5.0,
        flush_at_exit=False,
        spool_path=svc.tmp / "spool" / f"{queue}.jsonl",
    )


def preload(svc: Services, *, queue: str, tenant: str, events: int, batch: int) -> dict[str, Any]:
    client = _client(svc, queue, tenant)
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
        raise RuntimeError(f"{client.spooled} calls were spooled instead of appended while pre-loading")
    return {"preload_s": round(elapsed, 2), "entries": -(-events // batch)}


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
    consumers: int,
    batch: int,
    deadline: float,
    label: str,
    env: dict[str, str],
    with_worker: bool = False,
) -> dict[str, Any]:
    """Pre-load `events`, start `consumers` consumer processes (and a Celery worker for the extraction tasks
    when `with_worker`), wait for the last row; measure all along."""
    from bench.lib.project import get_engine

    queue, tenant = unique_name(f"bench-{label}"), unique_name("t")
    out: dict[str, Any] = {
        "label": label,
        "events": events,
        "consumers": consumers,
        "batch": batch,
        "extraction": env is not INGEST_ONLY_ENV,
    }
    engine = get_engine(svc.database_url, pool_size=1, application_name="bench")
    out["load_1m"] = round(os.getloadavg()[0], 2)  # a busy machine explains a slow run
    worker: BenchWorker | None = None
    try:
        out.update(preload(svc, queue=queue, tenant=tenant, events=events, batch=batch))
        penv = worker_env(svc, queue, **env)
        if with_worker:
            progress(f"{label}: starting a Celery worker -c 1 for the extraction tasks")
            worker = BenchWorker(penv, queue, svc.tmp / f"{queue}-worker.log", 1, ingest=False).start()
        progress(f"{label}: starting {consumers} consumer(s)")
        group = BenchConsumers(penv, svc.tmp / queue, consumers)
        (svc.tmp / queue).mkdir(parents=True, exist_ok=True)
        group.start()
        pg0, redis0 = postgres_cpu_s(svc.postmaster_pid), redis_cpu_s(svc.redis_url)
        stats: dict[int, ProcStats] = {}
        worker_stats: dict[int, ProcStats] = {}
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
                if now > deadline or now - last_change > STALL_S or not group.alive():
                    why = "budget" if now > deadline else ("stalled" if group.alive() else "a consumer died")
                    out["incomplete"] = why
                    out["consumer_log_tail"] = group.log_tail()
                    break
                time.sleep(0.1)
            wall = time.monotonic() - group.ready_at
            pg1, redis1 = postgres_cpu_s(svc.postmaster_pid), redis_cpu_s(svc.redis_url)
        finally:
            stats = group.stop()
            if worker is not None:
                worker_stats = worker.stop()
        span = _received_span_s(engine, tenant)
        out.update(
            rows=count,
            wall_s=round(wall, 2),
            events_per_s=round(count / wall, 1),
            steady_events_per_s=round((count - 1) / span, 1) if span and count > 1 else None,
            cpu_ms_per_event=_cpu_per_event(stats, worker_stats, pg0, pg1, redis0, redis1, count),
            processes=[
                {"pid": s.pid, "role": s.role, "peak_rss_mb": _mb(s.peak_rss), "vm_hwm_mb": _mb(s.vm_hwm)}
                for s in [*stats.values(), *worker_stats.values()]
            ],
        )
        return out
    finally:
        drop_queue(svc.redis_url, queue, tenant=tenant)


def lag_run(svc: Services, *, rate: int, seconds: float, consumers: int = 2) -> dict[str, Any]:
    """Consumers running; one emitter offers `rate` events/s for `seconds`; lag = received_at - event_time
    (the client stamps event_time when it emits; one machine, one clock)."""
    from sqlalchemy import text

    from bench.lib.project import get_engine

    queue, tenant = unique_name("bench-lag"), unique_name("t")
    engine = get_engine(svc.database_url, pool_size=1, application_name="bench")
    total = int(rate * seconds)
    out: dict[str, Any] = {"rate": rate, "seconds": seconds, "consumers": consumers, "events": total}
    try:
        penv = worker_env(svc, queue, **INGEST_ONLY_ENV)
        (svc.tmp / queue).mkdir(parents=True, exist_ok=True)
        group = BenchConsumers(penv, svc.tmp / queue, consumers).start()
        client = _client(svc, queue, tenant)
        pg0 = postgres_cpu_s(svc.postmaster_pid)
        try:
            t0 = time.monotonic()
            for n in range(total):
                due = t0 + n / rate
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                client.emit(**event_fields(n))
                if n % 1000 == 0:
                    progress(f"lag: {n:,}/{total:,} events offered at {rate}/s", n, total)
            out["offered_s"] = round(time.monotonic() - t0, 2)
            client.close()
            deadline = time.monotonic() + 60
            while _rows(engine, tenant) < total and time.monotonic() < deadline:
                time.sleep(0.2)
            pg1 = postgres_cpu_s(svc.postmaster_pid)
        finally:
            stats = group.stop()
        with engine.connect() as conn:
            lags = [
                float(v)
                for (v,) in conn.execute(
                    text(
                        "SELECT extract(epoch FROM received_at - event_time) * 1000 FROM events "
                        "WHERE tenant_id = :t"
                    ),
                    {"t": tenant},
                )
            ]
        out["stored"] = len(lags)
        lags.sort()
        if lags:
            out["lag_p50_ms"] = round(lags[len(lags) // 2], 1)
            out["lag_p99_ms"] = round(lags[min(len(lags) - 1, int(len(lags) * 0.99))], 1)
            out["lag_max_ms"] = round(lags[-1], 1)
        consumer_cpu = sum(st.cpu_s - st.cpu_s_start for st in stats.values())
        out["consumer_cpu_share"] = round(consumer_cpu / max(out["offered_s"], 1e-9), 3)
        out["cpu_ms_per_event_consumers"] = round(consumer_cpu * 1000 / max(total, 1), 3)
        out["cpu_ms_per_event_postgres"] = (
            round((pg1 - pg0) * 1000 / max(total, 1), 3) if pg0 is not None and pg1 is not None else None
        )
        out["peak_rss_mb"] = max((_mb(st.peak_rss) or 0.0 for st in stats.values()), default=None)
        return out
    finally:
        drop_queue(svc.redis_url, queue, tenant=tenant)


def _mb(n: int | None) -> float | None:
    return None if n is None else round(n / 1e6, 1)


def _cpu_per_event(
    stats: dict[int, ProcStats],
    worker_stats: dict[int, ProcStats],
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
        "consumer": per(sum(s.cpu_s - s.cpu_s_start for s in stats.values())),
        "worker": per(sum(s.cpu_s - s.cpu_s_start for s in worker_stats.values())) if worker_stats else None,
        "postgres": per(pg1 - pg0) if pg0 is not None and pg1 is not None else None,
        "redis_server": per(redis1 - redis0) if redis0 is not None and redis1 is not None else None,
    }


# --- one batch's pieces (in a child process with the consumer's environment) ------------------------------


def probe(out_path: Path, *, calls: int, tenant: str) -> None:
    from shared.contract import utcnow
    from shared.db.engine import get_engine, resolve_database_url
    from shared.logging import configure_logging
    from shared.settings import get_settings
    from store.ingest import split_envelope
    from worker.services.ingest import Item, store_items

    configure_logging(level="INFO", fmt="json")  # as in the consumer: its batch line is part of the cost
    settings = get_settings()
    engine = get_engine(resolve_database_url(settings), pool_size=1, role=settings.db_role_worker or None)
    counter = itertools.count(10_000_000)  # event ids apart from anything else the tenant gets

    def items(n: int) -> list[Item]:
        return [
            Item(
                f"0-{i}",
                {"tenant_id": tenant, "events": [{**event_fields(i), "role": "user", "type": "turn"}]},
            )
            for i in (next(counter) for _ in range(n))
        ]

    result: dict[str, Any] = {}
    known: set[str] = set()
    for size in PROBE_BATCHES:
        reps = max(5, calls // size) if size > 1 else calls
        for _ in range(5):  # warm-up: pool connections, statement caches
            store_items(engine, items(size), now=utcnow(), known_tenants=known)
        split_samples, store_samples = [], []
        for _ in range(reps):
            batch = items(size)
            t0 = time.perf_counter_ns()
            for it in batch:
                split_envelope(it.envelope, now=utcnow())
            split_samples.append(time.perf_counter_ns() - t0)
            t0 = time.perf_counter_ns()
            store_items(engine, batch, now=utcnow(), known_tenants=known)
            store_samples.append(time.perf_counter_ns() - t0)
        result[f"batch{size}"] = {
            "size": size,
            "validate": latency_summary_ms(split_samples),
            "store": latency_summary_ms(store_samples),
        }
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(max(5, calls // 100)):
        store_items(engine, items(100), now=utcnow(), known_tenants=known)
    profiler.disable()
    per_batch = 1000 / max(5, calls // 100)
    result["profile_top_tottime"] = [
        {"function": function, "tottime_ms_per_batch": round(own_s * per_batch, 4)}
        for function, own_s, _ in top_own_time(profiler)
    ]
    out_path.write_text(json.dumps(result, indent=2))


def run_probe(svc: Services, *, calls: int) -> dict[str, Any]:
    queue, tenant = unique_name("bench-probe"), unique_name("t")
    out = svc.tmp / f"{queue}.json"
    progress("probe: timing the pieces of one ingest batch")
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
    consumers: int
    batch: int = 1
    env: dict[str, str] = field(default_factory=lambda: INGEST_ONLY_ENV)
    slice_s: float | None = None
    events: int | None = None
    rate_from: str = "c1"  # the earlier run whose rate sizes this one
    rate_factor: float = 1.0
    with_worker: bool = False


def plan(quick: bool) -> list[Drain]:
    s = SLICE_S[quick]
    return [
        Drain("c1", 1, slice_s=s),
        Drain("c2", 2, slice_s=s, rate_factor=1.5),
        Drain("c2-pipeline", 2, env={}, slice_s=s / 2, rate_from="c2", rate_factor=0.5, with_worker=True),
        Drain("batch10-c2", 2, batch=10, slice_s=s / 2, rate_from="c2", rate_factor=2.0),
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
    figures: dict[str, Any] = {"sustained": [], "budget_s": budget_s, "before": BEFORE}
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
                consumers=d.consumers,
                batch=d.batch,
                deadline=run_deadline,
                label=d.label,
                env=d.env,
                with_worker=d.with_worker,
            )
            figures["sustained"].append(result)
            if result["rows"]:
                rates[d.label] = result["events_per_s"]
        if deadline - time.monotonic() > LAG_S[quick] + 60:
            figures["lag"] = lag_run(svc, rate=LAG_RATE, seconds=LAG_S[quick])
        else:
            figures["lag"] = None
            skipped.append("lag: not enough budget left")
    figures["rss"] = _rss_figure(figures["sustained"], RSS_EVENTS[quick])
    return report.result("ingest", quick, figures, skipped, started=started, targets=TARGETS, blocks=SECTION)


def _safe_url(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))  # never a password in a report


def _rss_figure(runs: list[dict[str, Any]], wanted_events: int) -> dict[str, Any] | None:
    """Peak RSS of a consumer in the dedicated 1-consumer run, and the worst consumer over every run."""
    candidates = [r for r in runs if r["consumers"] == 1]
    if not candidates:
        return None
    best = next(
        (r for r in candidates if r["label"].startswith("rss")), max(candidates, key=lambda r: r["rows"])
    )

    def peak(rs: list[dict[str, Any]], key: str) -> float | None:
        values = [
            p[key] for r in rs for p in r["processes"] if p["role"] == "consumer" and p[key] is not None
        ]
        return max(values) if values else None

    return {
        "run": best["label"],
        "events_drained": best["rows"],
        "entries": best["entries"],
        "wanted_events": wanted_events,
        "consumer_peak_rss_mb": peak([best], "peak_rss_mb"),
        "consumer_vm_hwm_mb": peak([best], "vm_hwm_mb"),
        "worst_any_run_mb": max(
            (v for key in ("peak_rss_mb", "vm_hwm_mb") if (v := peak(runs, key)) is not None), default=None
        ),
    }


# --- targets and the report -------------------------------------------------------------------------------


def _worst_rss(f: dict[str, Any]) -> float | None:
    rss = f["rss"]
    if not rss:
        return None
    values = [rss[k] for k in ("consumer_peak_rss_mb", "consumer_vm_hwm_mb", "worst_any_run_mb") if rss[k]]
    return max(values) if values else None


def _rss_note(f: dict[str, Any]) -> str:
    rss = f["rss"]
    if not rss:
        return "not measured"
    note = f"one consumer process, {rss['events_drained']:,} events in {rss['entries']:,} entries; worst of every run"
    if rss["events_drained"] < rss["wanted_events"]:
        note += f"; wanted {rss['wanted_events']:,}: not reached"
    return note


def _c2(f: dict[str, Any]) -> dict[str, Any] | None:
    return next((r for r in f["sustained"] if r["label"] == "c2"), None)


def _c2_note(f: dict[str, Any]) -> str:
    c2 = _c2(f)
    if c2 is None:
        return "not measured"
    return f"{c2['rows']:,} single-event entries, 2 consumer processes" + (
        f" ({c2['incomplete']})" if c2.get("incomplete") else ""
    )


TARGETS = (
    Target("emit() p50", "emit.emit.p50_ms", "<=", TARGET_EMIT_P50_MS, "ms"),
    Target("emit() p99", "emit.emit.p99_ms", "<=", TARGET_EMIT_P99_MS, "ms"),
    Target(
        "sustained ingest, single-event emits, 2 consumers",
        lambda f: c2["events_per_s"] if (c2 := _c2(f)) else None,
        ">=",
        TARGET_EVENTS_PER_S_C2,
        "events/s",
        _c2_note,
    ),
    Target("consumer peak RSS", _worst_rss, "<=", TARGET_PEAK_RSS_MB, "MB", _rss_note),
)


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return report.evaluate(TARGETS, figures)


def _emit_rows(e: dict[str, Any]) -> list[dict[str, Any]]:
    names = {
        "emit": "`MemoryClient.emit` (validate + redact + XADD)",
        "append": "`StreamProducer.append` alone (same payloads, one XADD)",
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
                f"""`send_task` / `emit` at p50: {e["send_task_over_emit_p50"]}x; `send_task` / bare XADD:
            {e["send_task_over_append_p50"]}x. Calls spooled (broker slower than the 50 ms timeout):
            {e["spooled"]}. Before the stream (Celery envelope by hand, commit {BEFORE["commit"]}): `emit` p50
            {BEFORE["emit_p50_ms"]} ms, p99 {BEFORE["emit_p99_ms"]} ms."""
            )
        ),
    ),
    data="emit",
)

SUSTAINED_INTRO = f"""Each run: events pre-loaded into a fresh stream for a fresh tenant (`emit`, one event per
    entry, or `emit_many` batches), then N ingest consumer processes started (`python -m worker.ingest_consumer`,
    batches of up to 500 entries, log level INFO, JSON logs to a file). events/s = rows / (last row seen -
    consumers started); steady = rows / span of `received_at` (first to last batch). CPU per event: user+system
    time of each process during the drain. Runs other than `-pipeline` defer the debounced extraction (no
    extraction task fires during the run), so they measure ingest alone; `-pipeline` keeps the default debounce
    and runs a Celery worker (`-c 1`) doing the rules-only extraction tasks at the same time, on the same two
    cores. Single-event runs drain what about {SLICE_S[False]:.0f} s ({SLICE_S[True]:.0f} s in quick mode)
    take at the rate measured so far, between {MIN_EVENTS[False]:,} and {SUSTAINED_EVENTS[False]:,} events
    ({MIN_EVENTS[True]:,} and {SUSTAINED_EVENTS[True]:,} in quick mode)."""


def _peak_rss(r: dict[str, Any]) -> str:
    return fmt(max((p["peak_rss_mb"] for p in r["processes"] if p["role"] == "consumer"), default=None))


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
                Column("entries", "entries", ","),
                Column("consumers", "consumers"),
                Column("events/s", "events_per_s", ",.0f"),
                Column("steady events/s", "steady_events_per_s", ",.0f"),
                Column("wall s", "wall_s"),
                Column(
                    "CPU ms/event: consumers / worker / postgres / redis",
                    lambda r: " / ".join(fmt(r["cpu_ms_per_event"].get(k)) for k in CPU_ROLES),
                ),
                Column("peak RSS MB per consumer", _peak_rss),
                Column("load 1 min", "load_1m"),
            )
        ),
        Text(
            f"""Before the stream, the same method (Celery messages, one transaction per message, commit
            {BEFORE["commit"]}, {BEFORE["date"]}): """
            + "; ".join(
                f"{name} {rate:,} events/s (CPU ms/event {cpu})" for name, rate, cpu in BEFORE["rows"]
            )
            + f"; worker peak RSS {BEFORE['worker_peak_rss_mb']} MB."
        ),
    ),
    data="sustained",
)

LAG_SECTION = Section(
    "Accepted-to-stored lag",
    (
        Text(
            lambda g: (
                f"""{g["events"]:,} single-event emits offered at {g["rate"]}/s by one paced emitter over
            {g["offered_s"]} s, {g["consumers"]} consumers running; lag of each event = `received_at` (the
            consumer's clock at the store) - `event_time` (the client's clock at `emit`), one machine."""
            )
        ),
        Table(
            (
                Column("stored", "stored", ","),
                Column("lag p50 ms", "lag_p50_ms"),
                Column("lag p99 ms", "lag_p99_ms"),
                Column("lag max ms", "lag_max_ms"),
                Column("consumers' CPU ms/event", "cpu_ms_per_event_consumers"),
                Column("postgres CPU ms/event", "cpu_ms_per_event_postgres"),
                Column("consumers' share of a core", "consumer_cpu_share"),
                Column("peak RSS MB per consumer", "peak_rss_mb"),
            ),
            lambda g: [g],
        ),
    ),
    data="lag",
)

RSS_SECTION = Section(
    "Consumer peak RSS",
    (
        Text(
            lambda rss: (
                f"""Run `{rss["run"]}`: one consumer process draining {rss["events_drained"]:,} events in
            {rss["entries"]:,} entries. psutil RSS sampled every 0.25 s, and the kernel's VmHWM read just before
            the consumer was stopped: {fmt(rss["consumer_peak_rss_mb"])} MB sampled, {fmt(rss["consumer_vm_hwm_mb"])}
            MB VmHWM. Worst consumer over every run of this benchmark: {fmt(rss["worst_any_run_mb"])} MB. (The
            Celery worker's own RSS is measured by the store and sleep benchmarks.)"""
            )
        ),
    ),
    data="rss",
)


def _probe_rows(f: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for size in PROBE_BATCHES:
        b = f["probe"].get(f"batch{size}")
        if not b:
            continue
        rows.append(
            {
                "size": size,
                "validate": b["validate"]["p50_ms"],
                "store": b["store"]["p50_ms"],
                "per_event": round(b["store"]["p50_ms"] / size, 4),
            }
        )
    return rows


def _where(f: dict[str, Any]) -> list[str]:
    runs = {r["label"]: r for r in f["sustained"]}
    out = []
    c2 = runs.get("c2")
    if c2 and c2.get("cpu_ms_per_event"):
        cpu = c2["cpu_ms_per_event"]
        total = sum(v for v in (cpu.get("consumer"), cpu.get("postgres"), cpu.get("redis_server")) if v)
        cores = os.cpu_count() or 1
        out.append(
            f"""With 2 consumers a single-event entry costs {total:.3f} ms of CPU in all (consumers
            {fmt(cpu.get("consumer"))}, postgres {fmt(cpu.get("postgres"))}, redis {fmt(cpu.get("redis_server"))}):
            {cores} cores can do at most ~{cores * 1000 / total:,.0f} events/s at that cost. Before the stream an
            event cost ~5.7 ms of CPU, most of it per Celery message (consumer, tracer, one transaction each)."""
        )
    rows = _probe_rows(f)
    if rows:
        first, last = rows[0], rows[-1]
        out.append(
            f"""A batch pays its transaction once: storing 1 entry takes {first["store"]:.2f} ms, {last["size"]}
            entries {last["store"]:.2f} ms ({last["per_event"]:.3f} ms per event). The consumers read what is
            waiting, up to 500 at a time, so under load the batches grow and the cost per event falls."""
        )
    return out


WHERE_SECTION = Section(
    "Where the time goes",
    (
        Text(
            f"""One batch's pieces, timed in one process with the consumer's settings (single-event entries;
            p50 over {PROBE_CALLS} batches of 1, fewer of the larger sizes):"""
        ),
        Table(
            (
                Column("entries per batch", "size"),
                Column("validate ms", "validate", ".3f"),
                Column("validate + redact + store + commit ms", "store", ".3f"),
                Column("ms per event", "per_event", ".4f"),
            ),
            _probe_rows,
        ),
        Bullets(_where),
        Text("Top functions by own time in a batch of 100 (cProfile, ms per batch):"),
        Bullets(
            lambda f: [
                f"`{p['function']}`: {p['tottime_ms_per_batch']}" for p in f["probe"]["profile_top_tottime"]
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
    LAG_SECTION,
    RSS_SECTION,
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
