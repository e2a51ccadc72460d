"""The web console (`/console/`, issue #17): how long each page takes for a user with 10,000 memories.

    python -m bench.run --only console [--quick]

Against a real API (uvicorn, one process of its own) on a real PostgreSQL and Redis, signed in through the
sign-in form like a browser: one user of one tenant with `MEMORIES` memories (70 % active, the rest
superseded, archived or forgotten; an `add` history row each and an `edit` on one in five), 2,000 events,
a working memory document, LLM usage for 14 days, runs and dead letters, then ANALYZE (as autovacuum
would after such a load). Each page is asked
`SAMPLES` times in turn (after warm-up), one request at a time over loopback HTTP with keep-alive; the
figure is the request's wall time in the client, an upper bound of the server's time (the loopback adds a
fraction of a millisecond). The target (issue #17): every page under 200 ms at the median and p95.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import text

from bench.lib import report
from bench.lib.corpus import NOW, embedder, sentence
from bench.lib.progress import progress
from bench.lib.report import Column, Table, Target, Text
from bench.lib.services import Services, drop_queue, services, unique_name
from bench.lib.stats import summary_ms

NAME = "console"
MEMORIES = 10_000
EVENTS = 2_000
SAMPLES = {True: 20, False: 60}
WARMUP = 5
GOAL_MS = 200.0
USER = "u-console"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
STATUSES = ["active"] * 14 + ["superseded"] * 3 + ["archived"] * 2 + ["deleted"]


def _load(svc: Services, tenant: str) -> dict[str, Any]:
    """The user's rows; returns the ids the pages are asked about and how long the load took."""
    from bench.lib.project import create_key, get_engine, session_scope, vector_literal
    from core import keywords
    from store.memories import insert_sql

    started = time.monotonic()
    rng = random.Random("console")
    pool = [vector_literal(v) for v in embedder().embed([sentence(rng)[2] for _ in range(50)])]
    engine = get_engine(svc.database_url, pool_size=1, application_name="bench")
    rows = []
    for n in range(MEMORIES):
        kind, category, content = sentence(rng)
        status = STATUSES[n % len(STATUSES)]
        recorded = NOW - timedelta(days=rng.uniform(0, 90))
        closed = recorded + timedelta(days=rng.uniform(0, 5)) if status != "active" else None
        rows.append(
            {
                "tenant_id": tenant,
                "user_id": USER,
                "content": f"{content} (#{n})",
                "content_key": f"{content} (#{n})".lower(),
                "kind": kind,
                "category": category,
                "status": status,
                "importance": rng.random(),
                "valid_from": recorded,
                "valid_to": closed,
                "archived_at": closed if status in ("archived", "deleted") else None,
                "recorded_at": recorded,
                "last_confirmed_at": recorded,
                "embedding": pool[n % len(pool)],
                "search_tokens": keywords.document(content),
                "source_event_ids": [f"ev-{n % EVENTS}"],
            }
        )
    columns = tuple(rows[0])
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tenants (id) VALUES (:t)"), {"t": tenant})
        for start in range(0, len(rows), 1000):
            batch = rows[start : start + 1000]
            conn.execute(text(insert_sql(columns)), batch)
        ids = [
            str(r[0])
            for r in conn.execute(
                text("SELECT id FROM memories WHERE tenant_id = :t ORDER BY recorded_at"), {"t": tenant}
            )
        ]
        history = [
            {
                "m": mid,
                "t": tenant,
                "u": USER,
                "op": "add",
                "a": json.dumps({"content": rows[0]["content"]}),
                "r": "extracted",
                "actor": "worker:extract",
            }
            for mid in ids
        ] + [
            {
                "m": mid,
                "t": tenant,
                "u": USER,
                "op": "edit",
                "a": json.dumps({"content": "edited"}),
                "r": "edited via API: content",
                "actor": "api_key:bench",
            }
            for mid in ids[::5]
        ]
        conn.execute(
            text(
                "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, after, reason, actor) "
                "VALUES (:m, :t, :u, :op, CAST(:a AS jsonb), :r, :actor)"
            ),
            history,
        )
        conn.execute(
            text(
                "INSERT INTO sessions (tenant_id, user_id, session_id, turn_count) VALUES (:t, :u, 's-1', :n)"
            ),
            {"t": tenant, "u": USER, "n": EVENTS},
        )
        conn.execute(
            text(
                "INSERT INTO events (tenant_id, event_id, user_id, session_id, role, content, event_time, "
                "received_at, processed_at, status) SELECT :t, 'ev-' || g, :u, 's-1', 'user', 'turn ' || g, "
                "now() - make_interval(secs => g * 2), now() - make_interval(secs => g * 2), "
                "now() - make_interval(secs => g * 2 - 1), 'extracted' FROM generate_series(0, :n - 1) g"
            ),
            {"t": tenant, "u": USER, "n": EVENTS},
        )
        conn.execute(
            text(
                "INSERT INTO llm_usage (tenant_id, day, stage, calls, prompt_tokens, completion_tokens) "
                "SELECT :t, to_char(now() - make_interval(days => g), 'YYYY-MM-DD'), s, 40, 50000, 8000 "
                "FROM generate_series(0, 13) g, unnest(ARRAY['extract', 'distill']) s"
            ),
            {"t": tenant},
        )
        conn.execute(
            text(
                "INSERT INTO consolidation_runs (kind, scope, tenant_id, user_id, actor, started_at, "
                "finished_at, outcome, counts) SELECT 'distill', 'user', :t, :u, 'bench', "
                "now() - make_interval(hours => g), now() - make_interval(hours => g), 'ok', "
                '\'{"clusters": 3, "tokens": 1200}\' FROM generate_series(1, 40) g'
            ),
            {"t": tenant, "u": USER},
        )
        conn.execute(
            text(
                "INSERT INTO dead_letters (fingerprint, tenant_id, event_id, task_name, payload, reason) "
                "SELECT md5(:t || g), :t, 'dead-' || g, 'memory.ingest', '{\"role\": \"x\"}', 'bad role' "
                "FROM generate_series(1, 30) g"
            ),
            {"t": tenant},
        )
        conn.execute(
            text(
                "INSERT INTO working_memory (tenant_id, user_id, content, mode) "
                "VALUES (:t, :u, '## Now\n- the console benchmark', 'deterministic')"
            ),
            {"t": tenant, "u": USER},
        )
    with engine.connect() as conn:  # what autovacuum does after a bulk load: the planner sees 10,000 rows
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(
            text("ANALYZE memories, memory_history, events, memory_access")
        )
    with session_scope(engine) as session:
        key, _ = create_key(session, tenant, name="bench console")
    active = ids[0::20]  # status 'active' (every 20th row starts the STATUSES cycle)
    return {"key": key, "memory": active[len(active) // 2], "load_s": round(time.monotonic() - started, 1)}


def _sign_in(base: str, key: str) -> httpx.Client:
    http = httpx.Client(base_url=base, timeout=30)
    token = CSRF.search(http.get("/console/login").text)
    assert token is not None
    signed = http.post("/console/login", data={"api_key": key, "csrf_token": token.group(1)})
    if signed.status_code != 303:
        raise RuntimeError(f"sign-in failed: {signed.status_code} {signed.text[:300]}")
    return http


def _pages(memory: str) -> dict[str, str]:
    day = (NOW - timedelta(days=30)).date().isoformat()
    return {
        "index (users)": "/console/",
        "user: current memories": f"/console/users/{USER}",
        "user: search": f"/console/users/{USER}?q=deploy",
        "user: search (htmx fragment)": f"/console/users/{USER}?q=deploy#fragment",
        "user: as of 30 days ago": f"/console/users/{USER}?as_of={day}",
        "memory with history": f"/console/memories/{memory}",
        "memory: why": f"/console/memories/{memory}/why",
        "event trace": "/console/events/ev-7",
        "operations": "/console/ops",
    }


def _measure(http: httpx.Client, pages: dict[str, str], samples: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, path in pages.items():
        headers = {"HX-Request": "true"} if path.endswith("#fragment") else {}
        url = path.removesuffix("#fragment")
        for _ in range(WARMUP):
            http.get(url, headers=headers)
        durations = []
        size = 0
        for _ in range(samples):
            started = time.perf_counter_ns()
            r = http.get(url, headers=headers)
            durations.append(time.perf_counter_ns() - started)
            if r.status_code != 200:
                raise RuntimeError(f"{url}: {r.status_code} {r.text[:300]}")
            size = len(r.content)
        out[name] = {**summary_ms(durations), "path": url, "kb": round(size / 1024, 1)}
        progress(f"{name}: p50 {out[name]['p50_ms']} ms")
    return out


def run(budget_s: float, quick: bool) -> dict[str, Any]:
    from bench.client import _api, _free_port  # the same one-process API the client benchmark runs

    started = time.monotonic()
    figures: dict[str, Any] = {
        "memories": MEMORIES,
        "events": EVENTS,
        "samples": SAMPLES[quick],
        "cpu_count": os.cpu_count(),
    }
    skipped: list[str] = []
    with services() as svc:
        queue, tenant = unique_name("bench-console"), unique_name("bench-console")
        figures["services"] = svc.description
        try:
            progress(f"loading {MEMORIES:,} memories for one user")
            loaded = _load(svc, tenant)
            figures["load_s"] = loaded["load_s"]
            port = _free_port()
            api = _api(svc, queue, port, svc.tmp / "api.log")
            try:
                http = _sign_in(f"http://127.0.0.1:{port}", loaded["key"])
                figures["pages"] = _measure(http, _pages(loaded["memory"]), SAMPLES[quick])
                http.close()
            finally:
                api.terminate()
                api.wait(timeout=20)
        finally:
            drop_queue(svc.redis_url, queue)
    figures["slowest_p95_ms"] = max(p["p95_ms"] for p in figures["pages"].values())
    figures["slowest_p50_ms"] = max(p["p50_ms"] for p in figures["pages"].values())
    return report.result(NAME, quick, figures, skipped, started=started, targets=TARGETS, blocks=SECTION)


TARGETS = (
    Target("slowest page, median (user with 10,000 memories)", "slowest_p50_ms", "<=", GOAL_MS, "ms"),
    Target("slowest page, p95 (user with 10,000 memories)", "slowest_p95_ms", "<=", GOAL_MS, "ms"),
)


def _setup(f: dict[str, Any]) -> str:
    return (
        f"Setup: one API process (uvicorn) on {f['services']} and Redis; one user with {f['memories']:,} "
        f"memories (70 % active), {f['events']:,} events, 14 days of LLM usage, 40 runs, 30 dead letters "
        f"(loaded in {f['load_s']} s). Each page asked {f['samples']} times after {WARMUP} warm-up requests, "
        "one at a time, signed in through the sign-in form; wall time of the request in the client over "
        f"loopback HTTP (an upper bound of the server's time). Load average at the end: "
        f"{f['load_avg_1m_at_end']}."
    )


def _loaded(f: dict[str, Any]) -> str | None:
    cores = f.get("cpu_count") or 1
    if f["load_avg_1m_at_end"] <= cores:
        return None
    return (
        f"The machine was shared: a load average of {f['load_avg_1m_at_end']} on {cores} cores (other work "
        "running beside the benchmark), so these times include waiting for a core; on an idle machine they "
        "are lower."
    )


def _rows(f: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"page": name, **v} for name, v in f["pages"].items()]


SECTION = (
    Text(_setup),
    Text(_loaded),
    Table(
        rows=_rows,
        columns=(
            Column("page", "page"),
            Column("path", lambda r: f"`{r['path']}`"),
            Column("p50 (ms)", "p50_ms"),
            Column("p95 (ms)", "p95_ms"),
            Column("max (ms)", "max_ms"),
            Column("size (KiB)", "kb"),
        ),
    ),
)


def render_markdown(result: dict[str, Any]) -> str:
    return report.render(result, SECTION)


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return report.evaluate(TARGETS, figures)
