"""The memory store benchmark: search latency at 100,000 and 1,000,000 memories, HNSW recall, reconciliation.

Contract: `run(budget_s, quick) -> dict` measures, never asserts, and returns
`{"name", "quick", "figures", "targets", "skipped", "markdown"}` like the other bench modules. Everything
runs on an isolated embedded PostgreSQL (or `DATABASE_URL`) from `bench.common.services`.

- load: 10,000 users of one tenant, memory `i` belongs to user `i % 10,000`. Each memory is a synthetic
  sentence from a template grammar (preferences, profile facts, rules, lessons, decisions; English plus a
  few Chinese ones) embedded in Python batches by the project's hashing embedder (`store.embeddings`,
  384-dim) in two spawned processes, streamed by binary `COPY` into an unlogged staging table, then moved
  by one `INSERT ... SELECT` into `memories` (full-text vector by `to_tsvector('simple', ...)` in SQL). The
  secondary indexes of `memories` are dropped for the load and rebuilt from their own definitions after
  it (timed one by one: the HNSW build time is part of the report). Growing to 1,000,000 appends rows
  to the 100,000 and rebuilds the indexes.
- latency: `store.search.search` (hybrid: query embedding, one candidates query for the vector
  and keyword lists, ranking) for k=10 and one random user per call, in-process, as the API's database role (row-level
  security on, the tenant set per transaction), ef_search = the setting's default; per-statement times,
  the plan (EXPLAIN ANALYZE of the statements one call runs) and which indexes the calls used
  (`pg_stat_user_indexes` deltas).
- recall (largest size): top-10 of the vector query as the planner runs it, and with the HNSW index
  forced (the b-tree indexes dropped inside a rolled-back transaction), against an exact scan; plus the
  index's recall without a user filter.
- reconciliation: candidates with status 'new' for many users (new facts, exact repeats of a stored
  memory, slot values that supersede each other) inserted set-based; `memory.reconcile_user` enqueued per
  user by name through `shared.publisher.RedisPublisher`; a real `celery worker -c 2`; candidates/s from
  the first publish to the last candidate reconciled.

`load_store`, `rebuild_indexes`, `drop_secondary_indexes`, `capture_statements` and `explain_statements`
are reused by `bench.sleep` and `bench.api_load`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import common
from bench.common import fmt, paragraph, percentile, progress, unique_name

USERS = 10_000
DIM = 384
SIZES = {True: (100_000,), False: (100_000, 1_000_000)}
LATENCY_QUERIES = {True: 1_000, False: 2_000}
LATENCY_WARMUP = 100
PROFILE_CALLS = 300
K = 10
RECALL_QUERIES = 200
GLOBAL_RECALL_QUERIES = 20
RECONCILE_USERS = {True: 400, False: 1_000}
RECONCILE_PER_USER = 5
GEN_BATCH = 5_000
GEN_PROCESSES = 2
HNSW_BUILD_MEM = "3GB"
HNSW_INDEX = "ix_memories_embedding"
OWN_LIMIT_S = {True: 480.0, False: 1500.0}
STALL_S = 90.0
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)  # fixed: ages and decay are relative to it

TARGET_P95_MS = 15.0
ANCHORS = "mem0 paper: 148 / 200 ms p50 / p95; Zep: 87 / 155 ms (search as published, network included)"

# --- synthetic memories -----------------------------------------------------------------------------------

_W: dict[str, tuple[str, ...]] = {
    "tool": (
        "pnpm",
        "npm",
        "yarn",
        "poetry",
        "uv",
        "pip",
        "docker",
        "podman",
        "terraform",
        "pulumi",
        "vim",
        "neovim",
        "vscode",
        "emacs",
        "postgres",
        "mysql",
        "sqlite",
        "redis",
        "kafka",
        "rabbitmq",
        "pytest",
        "jest",
        "vitest",
        "ruff",
        "black",
        "mypy",
        "eslint",
        "prettier",
        "bazel",
        "gradle",
        "celery",
        "airflow",
        "dagster",
        "fastapi",
        "django",
        "flask",
        "rails",
        "nextjs",
        "svelte",
        "vue",
    ),
    "domain": (
        "frontend",
        "backend",
        "data pipeline",
        "infrastructure",
        "mobile",
        "machine learning",
        "billing",
        "search",
        "analytics",
        "auth",
        "payments",
        "reporting",
        "onboarding",
        "internal tools",
    ),
    "city": (
        "Berlin",
        "Lisbon",
        "Toronto",
        "Austin",
        "Singapore",
        "Nairobi",
        "Oslo",
        "Seoul",
        "Madrid",
        "Melbourne",
        "Denver",
        "Warsaw",
        "Dublin",
        "Osaka",
        "Bogota",
        "Prague",
        "Zurich",
        "Chennai",
    ),
    "job": (
        "backend engineer",
        "data scientist",
        "product manager",
        "designer",
        "SRE",
        "teacher",
        "nurse",
        "researcher",
        "founder",
        "student",
        "consultant",
        "QA engineer",
        "architect",
        "analyst",
    ),
    "project": (
        "atlas",
        "beacon",
        "cobalt",
        "delta",
        "ember",
        "falcon",
        "granite",
        "harbor",
        "ion",
        "juniper",
        "keystone",
        "lumen",
        "meridian",
        "nova",
        "orbit",
        "pioneer",
        "quartz",
        "rook",
    ),
    "infra": (
        "Kubernetes",
        "a single Hetzner box",
        "ECS",
        "Cloud Run",
        "Fly.io",
        "bare metal",
        "Nomad",
        "Lambda",
        "a Raspberry Pi cluster",
        "Heroku",
    ),
    "env": ("staging", "production", "the dev cluster", "the EU region", "the canary pool", "QA"),
    "relation": ("sister", "brother", "partner", "manager", "cofounder", "daughter", "son", "mentor"),
    "name": ("Ana", "Ben", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jia", "Kofi", "Lena"),
    "hobby": (
        "climbing",
        "chess",
        "baking sourdough",
        "trail running",
        "photography",
        "gardening",
        "jazz",
        "board games",
        "cycling",
        "pottery",
        "birdwatching",
        "sailing",
    ),
    "cause": (
        "a missing NOT NULL default",
        "an expired TLS certificate",
        "a stale Docker layer cache",
        "a race in the migration runner",
        "an exhausted connection pool",
        "a wrong IAM policy",
        "a timezone bug in the scheduler",
        "an out-of-memory kill",
        "a flaky DNS resolver",
    ),
    "fix": (
        "backfilling the column first",
        "renewing the certificate",
        "pinning the base image",
        "adding an advisory lock",
        "raising the pool size",
        "scoping the policy to one bucket",
        "storing times in UTC",
        "streaming the export",
        "caching lookups locally",
    ),
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the release day", "the last sprint"),
    "lang": ("English", "German", "Portuguese", "Spanish", "French", "Chinese"),
    "drink": ("咖啡", "绿茶", "乌龙茶", "豆浆", "奶茶"),
    "zcity": ("北京", "上海", "深圳", "杭州", "成都", "广州"),
}
_TEMPLATES: tuple[tuple[str, str, str], ...] = (
    (
        "semantic",
        "preference",
        "The user prefers {tool} {ver} over {tool} for {domain} projects since {date}",
    ),
    (
        "semantic",
        "profile",
        "The user lives in {city} since {year} and works as a {job} at a {count}-person company",
    ),
    ("semantic", "fact", "The {project} service runs on {infra} in {env} with {count} replicas"),
    ("semantic", "profile", "The user's {relation} {name} is {age} and loves {hobby}"),
    ("semantic", "preference", "For {domain} work the user always reaches for {tool} and {tool} {ver}"),
    ("procedural", "constraint", "Never suggest {tool} for {domain} code; use {tool} {ver} instead"),
    ("procedural", "feedback", "Answer in {lang}, keep answers under {count} words, show {tool} examples"),
    (
        "procedural",
        "constraint",
        "Run {tool} before every commit to the {project} {domain} code (ticket {ticket})",
    ),
    (
        "episodic",
        "lesson",
        "Deploying {project} {ver} to {env} on {date} failed because of {cause}; fixed by {fix}",
    ),
    (
        "episodic",
        "decision",
        "On {date} the team chose {tool} for the {project} {domain} rewrite, budget {count}k",
    ),
    ("episodic", "lesson", "The {project} outage in {env} on {date} came from {cause}, found with {tool}"),
    ("semantic", "preference", "用户{year}年起住在{zcity}，每天早上喝{drink}，预算{count}元"),
)
_NUMBERS = {
    "ver": lambda r: f"{r.randrange(1, 25)}.{r.randrange(0, 40)}",
    "date": lambda r: f"{r.randrange(2019, 2027)}-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d}",
    "year": lambda r: str(r.randrange(1995, 2027)),
    "count": lambda r: str(r.randrange(2, 900)),
    "age": lambda r: str(r.randrange(3, 80)),
    "ticket": lambda r: f"{r.choice('ABCDEFGH')}{r.choice('PQRSTUVW')}-{r.randrange(10, 9999)}",
}
_HALF_LIFE_SQL = "CASE kind WHEN 'episodic' THEN 30.0 WHEN 'procedural' THEN 90.0 END"


def sentence(rng: random.Random) -> tuple[str, str, str]:
    """(kind, category, content) of one synthetic memory."""
    kind, category, template = _TEMPLATES[rng.randrange(len(_TEMPLATES))]
    parts = template.split("{")
    out = [parts[0]]
    for part in parts[1:]:
        key, rest = part.split("}", 1)
        number = _NUMBERS.get(key)
        out.append((number(rng) if number else rng.choice(_W[key])) + rest)
    return kind, category, "".join(out)


def user_id(n: int) -> str:
    return f"u{n:05d}"


_EMBEDDER: Any = None


def _embedder() -> Any:
    global _EMBEDDER
    if _EMBEDDER is None:
        from store.embeddings import HashingEmbedder

        _EMBEDDER = HashingEmbedder(DIM)
    return _EMBEDDER


@dataclass(frozen=True)
class Profile:
    """How the rows of a load look besides their text: `search` (all active, ages up to a year) or
    `lifecycle` (a store the hourly prune has been keeping: ages, accesses, pins, TTLs, archived rows)."""

    name: str = "search"
    embed: bool = True  # False: every row gets one of a small pool of real vectors (same width, cheap)


def make_batch(task: tuple[int, int, int, int, str, bool]) -> tuple[int, list[tuple[Any, ...]]]:
    """Rows [start, stop) of a load (runs in a spawned process): deterministic from (seed, start)."""
    import numpy as np

    from core import keywords
    from core.reconcile import content_key

    seed, start, stop, users, profile, embed = task
    rng = random.Random(f"{seed}:{start}")
    made = [sentence(rng) for _ in range(start, stop)]
    texts = [m[2] for m in made]
    emb = _embedder()
    if embed:
        vectors = np.asarray(emb.embed(texts), dtype=np.float32)
    else:
        pool = np.asarray(emb.embed([sentence(random.Random(i))[2] for i in range(256)]), dtype=np.float32)
        vectors = pool[np.arange(start, stop) % len(pool)]
    rows = []
    for offset, (kind, category, content) in enumerate(made):
        n = start + offset
        life = (
            _lifecycle(rng)
            if profile == "lifecycle"
            else (rng.randrange(365 * 86400), rng.randrange(4), False, None, "active", None)
        )
        rows.append(
            (
                n,
                n % users,
                kind,
                category,
                content,
                keywords.document(content),
                content_key(content),
                *life,
                vectors[offset],
            )
        )
    return start, rows


def _lifecycle(rng: random.Random) -> tuple[int, int, bool, int | None, str, int | None]:
    """(age_s, access_count, pinned, expires_in_s, status, archived_age_s) of a store pruned hourly: most
    rows are young; a minority has aged past three half-lives since the last run, a few carry a TTL, and
    earlier runs left archived rows (archived up to 90 days ago; retention is 30 days)."""
    day = 86400
    r = rng.random()
    if r < 0.06:
        return rng.randrange(100 * day, 700 * day), 0, False, None, "archived", rng.randrange(0, 90 * day)
    age = int(rng.expovariate(1 / (60 * day)))  # mean 60 days
    access = min(int(rng.expovariate(1 / 1.5)), 50)
    pinned = rng.random() < 0.01
    expires = rng.randrange(-5 * day, 60 * day) if rng.random() < 0.04 else None
    return age, access, pinned, expires, "active", None


# --- loading ----------------------------------------------------------------------------------------------

_STAGE_COLUMNS = (
    "n",
    "uid",
    "kind",
    "category",
    "content",
    "doc",
    "ckey",
    "age_s",
    "access",
    "pinned",
    "expires_s",
    "status",
    "archived_s",
    "emb",
)
_STAGE_TYPES = (
    "int8",
    "int4",
    "text",
    "text",
    "text",
    "text",
    "text",
    "int8",
    "int4",
    "bool",
    "int8",
    "text",
    "int8",
    "vector",
)


def summary_ms(durations_ns: Sequence[float]) -> dict[str, float]:
    """p50 / p90 / p95 / p99 / max / mean in ms of durations in ns."""
    values = sorted(d / 1e6 for d in durations_ns)
    if not values:
        return {"n": 0}
    out: dict[str, float] = {"n": len(values)}
    out.update({f"p{q}_ms": round(percentile(values, q), 3) for q in (50, 90, 95, 99)})
    out.update(max_ms=round(values[-1], 3), mean_ms=round(sum(values) / len(values), 3))
    return out


def psycopg_conninfo(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextlib.contextmanager
def raw_connection(url: str, *, autocommit: bool = True) -> Iterator[Any]:
    """A plain psycopg connection as the URL's (owner) user, outside any engine."""
    import psycopg

    with psycopg.connect(psycopg_conninfo(url), autocommit=autocommit) as conn:
        yield conn


def load_store(
    url: str,
    *,
    tenant: str,
    users: int,
    start: int,
    stop: int,
    seed: int,
    profile: Profile = Profile(),
    label: str = "load",
) -> dict[str, float]:
    """Append memories [start, stop) of tenant `tenant` (see `make_batch`); returns phase timings in s."""
    from pgvector.psycopg import register_vector

    tasks = [
        (seed, s, min(s + GEN_BATCH, stop), users, profile.name, profile.embed)
        for s in range(start, stop, GEN_BATCH)
    ]
    t0 = time.monotonic()
    with raw_connection(url) as conn:
        register_vector(conn)
        conn.execute(
            "CREATE UNLOGGED TABLE IF NOT EXISTS bench_stage (n int8, uid int4, kind text, "
            "category text, content text, doc text, ckey text, age_s int8, access int4, pinned bool, "
            f"expires_s int8, status text, archived_s int8, emb vector({DIM}))"
        )
        conn.execute("TRUNCATE bench_stage")
        ctx = multiprocessing.get_context("spawn")
        done = 0
        copy_sql = f"COPY bench_stage ({', '.join(_STAGE_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
        with ctx.Pool(GEN_PROCESSES) as pool, conn.cursor() as cur, cur.copy(copy_sql) as cp:
            cp.set_types(list(_STAGE_TYPES))
            for _, rows in pool.imap_unordered(make_batch, tasks):
                for row in rows:
                    cp.write_row(row)
                done += len(rows)
                progress(f"{label}: generated and copied {done:,}/{stop - start:,} rows", done, stop - start)
        t_copy = time.monotonic() - t0
        progress(f"{label}: INSERT ... SELECT into memories")
        t1 = time.monotonic()
        conn.execute(
            # the ids are drawn first: the access counts (memory_access) are rows of their own
            "WITH src AS MATERIALIZED (SELECT gen_random_uuid() AS id, * FROM bench_stage), "
            "mem AS (INSERT INTO memories (id, tenant_id, user_id, scope, kind, category, content, content_key, "
            "importance, confidence, evidence_count, status, valid_from, recorded_at, last_confirmed_at, "
            "half_life_days, expires_at, pinned, archived_at, valid_to, source_event_ids, "
            "source_turn_ids, embedding, search_tokens, updated_at) "
            "SELECT id, %(t)s, 'u' || lpad(uid::text, 5, '0'), 'user', kind, category, content, ckey, "
            "CASE WHEN kind = 'procedural' THEN 0.65 ELSE 0.6 END, 0.7, 1 + access / 3, status, "
            "%(now)s - make_interval(secs => age_s + 86400), %(now)s - make_interval(secs => age_s), "
            "%(now)s - make_interval(secs => age_s), "
            f"{_HALF_LIFE_SQL}, %(now)s + make_interval(secs => expires_s), pinned, "
            "%(now)s - make_interval(secs => archived_s), "
            "CASE WHEN status = 'archived' THEN %(now)s - make_interval(secs => archived_s) END, "
            "ARRAY['ev-' || n], ARRAY['D' || uid || ':' || n], emb, to_tsvector('simple', doc), %(now)s "
            "FROM src) "
            "INSERT INTO memory_access (memory_id, tenant_id, user_id, access_count, last_accessed_at) "
            "SELECT id, %(t)s, 'u' || lpad(uid::text, 5, '0'), access, %(now)s - make_interval(secs => age_s / 2) "
            "FROM src WHERE access > 0",
            {"t": tenant, "now": NOW},
        )
        conn.execute("TRUNCATE bench_stage")
        t_insert = time.monotonic() - t1
    return {
        "generate_copy_s": round(t_copy, 1),
        "insert_select_s": round(t_insert, 1),
        "rows_per_s": round((stop - start) / (time.monotonic() - t0)),
    }


def drop_secondary_indexes(url: str, table: str = "memories") -> list[tuple[str, str]]:
    """Drop every index of `table` but its primary key; return (name, definition) to rebuild them."""
    with raw_connection(url) as conn:
        defs = conn.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i JOIN pg_class c ON c.relname = i.indexname "
            "JOIN pg_index x ON x.indexrelid = c.oid WHERE i.tablename = %s AND NOT x.indisprimary "
            "ORDER BY i.indexname",
            (table,),
        ).fetchall()
        for name, _ in defs:
            conn.execute(f'DROP INDEX "{name}"')
    return [(str(n), str(d)) for n, d in defs]


def rebuild_indexes(
    url: str, defs: Sequence[tuple[str, str]], *, label: str = "indexes", parallel_workers: int = 1
) -> dict[str, Any]:
    """Re-create the indexes (HNSW with `HNSW_BUILD_MEM` of maintenance memory and one parallel worker:
    two cores), then ANALYZE. Returns seconds per index, the total and the server's notices."""
    out: dict[str, Any] = {"seconds": {}, "notices": []}
    t0 = time.monotonic()
    with raw_connection(url) as conn:
        conn.add_notice_handler(lambda d: out["notices"].append(str(d.message_primary)))
        conn.execute(f"SET maintenance_work_mem = '{HNSW_BUILD_MEM}'")
        conn.execute(f"SET max_parallel_maintenance_workers = {int(parallel_workers)}")
        for name, ddl in defs:
            progress(f"{label}: building {name}")
            t = time.monotonic()
            conn.execute(ddl)
            out["seconds"][name] = round(time.monotonic() - t, 1)
        progress(f"{label}: ANALYZE")
        t = time.monotonic()
        conn.execute("ANALYZE memories")
        out["seconds"]["ANALYZE memories"] = round(time.monotonic() - t, 1)
    out["total_s"] = round(time.monotonic() - t0, 1)
    return out


def relation_sizes(url: str) -> dict[str, float]:
    """Table (heap + TOAST) and per-index sizes of `memories`, in MB."""
    with raw_connection(url) as conn:
        rows = conn.execute(
            "SELECT 'memories (heap + toast)', pg_table_size('memories') UNION ALL "
            "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index "
            "WHERE indrelid = 'memories'::regclass ORDER BY 1"
        ).fetchall()
    return {str(name): round(int(size) / 1e6, 1) for name, size in rows}


# --- statements: capture, time, explain --------------------------------------------------------------------


@dataclass
class Captured:
    statement: str
    parameters: Any
    duration_ms: float = 0.0


@contextlib.contextmanager
def capture_statements(engine: Any) -> Iterator[list[Captured]]:
    """Every statement `engine` runs inside the block, with its parameters and wall time."""
    from sqlalchemy import event

    seen: list[Captured] = []

    def before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        conn.info.setdefault("bench_t0", []).append(time.perf_counter())

    def after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        t0 = conn.info["bench_t0"].pop()
        seen.append(Captured(statement, parameters, (time.perf_counter() - t0) * 1000))

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)


def explain_statements(
    engine: Any, statements: Sequence[Captured], *, tenant: str | None = None, settings: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """EXPLAIN (ANALYZE, BUFFERS) each data statement in one transaction that is rolled back; SET / set_config
    statements are replayed as they are, so the plans see the same settings."""
    from sqlalchemy import text

    out = []
    with engine.connect() as conn:
        trans = conn.begin()
        try:
            if tenant is not None:
                conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": tenant})
            for s in settings:
                conn.exec_driver_sql(s)
            for c in statements:
                head = c.statement.lstrip().split(None, 1)[0].upper()
                if head == "SET" or "set_config(" in c.statement:
                    conn.exec_driver_sql(c.statement, c.parameters or {})
                    continue
                rows = conn.exec_driver_sql(
                    "EXPLAIN (ANALYZE, BUFFERS) " + c.statement, c.parameters or {}
                ).all()
                out.append(
                    {"statement": " ".join(c.statement.split())[:400], "plan": [shorten(r[0]) for r in rows]}
                )
        finally:
            trans.rollback()
    return out


_VECTOR_LITERAL = re.compile(r"'\[[-0-9.,e ]{40,}\]'")


def shorten(line: str) -> str:
    """A plan or statement line with its 384-float vector literal elided."""
    return _VECTOR_LITERAL.sub("'[384 floats]'", line)


def statement_kind(sql: str) -> str:
    # search() asks for a table's candidates in one statement: the vector list and, when the query has
    # keywords, the keyword list with its BM25 statistics (store.search.candidates)
    if "<=>" in sql:
        return "candidates query"
    if "to_tsquery" in sql:
        return "keyword query"
    if "hnsw." in sql:
        return "hnsw settings (SET LOCAL)"
    if "set_config" in sql:
        return "set_config (tenant)"
    return "other"


def index_scans(url: str) -> dict[str, int]:
    with raw_connection(url) as conn:
        rows = conn.execute(
            "SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE relname = 'memories'"
        ).fetchall()
    return {str(n): int(s or 0) for n, s in rows}


# --- search latency ---------------------------------------------------------------------------------------


def queries(seed: int, n: int, users: int) -> list[tuple[str, str]]:
    rng = random.Random(f"queries:{seed}")
    return [(user_id(rng.randrange(users)), sentence(rng)[2]) for _ in range(n)]


def measure_search(url: str, *, tenant: str, users: int, n: int, seed: int) -> dict[str, Any]:
    """Latency of `search()` (k=10, per-user filter, query embedding included) as the API role."""
    from sqlmodel import Session

    from shared.db.engine import get_engine, set_tenant
    from shared.settings import Settings
    from store.search import search

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = get_engine(url, pool_size=1, application_name="bench-store", role=settings.db_role_api or None)
    emb = _embedder()
    qs = queries(seed, n + LATENCY_WARMUP, users)
    search_ns: list[int] = []
    txn_ns: list[int] = []
    embed_ns: list[int] = []
    per_kind: dict[str, list[float]] = {}
    hits_returned: list[int] = []
    scans0 = index_scans(url)
    clock = time.perf_counter_ns
    with capture_statements(engine) as seen:
        for i, (user, q) in enumerate(qs):
            first = len(seen)
            t0 = clock()
            with Session(engine) as db:
                set_tenant(db, tenant)
                t1 = clock()
                hits = search(
                    db,
                    tenant_id=tenant,
                    user_id=user,
                    query=q,
                    k=K,
                    embedder=emb,
                    now=NOW,
                    ef_search=settings.hnsw_ef_search,
                )
                t2 = clock()
                db.commit()
            t3 = clock()
            if i < LATENCY_WARMUP:
                continue
            search_ns.append(t2 - t1)
            txn_ns.append(t3 - t0)
            hits_returned.append(len(hits))
            for c in seen[first:]:
                per_kind.setdefault(statement_kind(c.statement), []).append(c.duration_ms)
            t = clock()
            emb.embed_query(q)
            embed_ns.append(clock() - t)
            if i % 200 == 0:
                progress(f"search latency: {i - LATENCY_WARMUP:,}/{n:,}", i, n + LATENCY_WARMUP)
        del seen[:]
    engine.dispose()  # a backend that exits flushes its statistics
    time.sleep(0.5)
    scans1 = index_scans(url)
    # the plan of one more call's statements, replayed under EXPLAIN ANALYZE (rolled back)
    user, q = qs[-1]
    with capture_statements(engine) as seen, Session(engine) as db:
        set_tenant(db, tenant)
        search(
            db,
            tenant_id=tenant,
            user_id=user,
            query=q,
            k=K,
            embedder=emb,
            now=NOW,
            ef_search=settings.hnsw_ef_search,
        )
        db.rollback()
    plans = explain_statements(engine, [c for c in seen if "set_config" not in c.statement], tenant=tenant)
    profile = _profile_search(engine, tenant=tenant, qs=qs[:PROFILE_CALLS], ef_search=settings.hnsw_ef_search)

    def ms(values: list[float]) -> dict[str, float]:
        return summary_ms([int(v * 1e6) for v in values])

    return {
        "queries": n,
        "warmup": LATENCY_WARMUP,
        "ef_search": settings.hnsw_ef_search,
        "search": summary_ms(search_ns),
        "transaction": summary_ms(txn_ns),
        "embed_query": summary_ms(embed_ns),
        "statements": {
            kind: {**ms(v), "per_call": round(len(v) / n, 2)} for kind, v in sorted(per_kind.items())
        },
        "mean_hits": round(sum(hits_returned) / len(hits_returned), 2),
        "index_scans": {
            k: scans1.get(k, 0) - scans0.get(k, 0) for k in scans1 if scans1.get(k, 0) - scans0.get(k, 0)
        },
        "plans": plans,
        "profile_calls": PROFILE_CALLS,
        "profile_top_tottime": profile,
    }


def _profile_search(
    engine: Any, *, tenant: str, qs: Sequence[tuple[str, str]], ef_search: int
) -> list[dict[str, Any]]:
    """cProfile over `search()` calls: the functions with the most own time, in ms per call."""
    import cProfile
    import pstats
    from pathlib import Path

    from sqlmodel import Session

    from shared.db.engine import set_tenant
    from store.search import search

    profiler = cProfile.Profile()
    for user, q in qs:
        with Session(engine) as db:
            set_tenant(db, tenant)
            profiler.enable()
            search(
                db,
                tenant_id=tenant,
                user_id=user,
                query=q,
                k=K,
                embedder=_embedder(),
                now=NOW,
                ef_search=ef_search,
            )
            profiler.disable()
            db.rollback()
    st = pstats.Stats(profiler)
    rows = sorted(st.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:8]  # type: ignore[attr-defined]
    return [
        {"function": f"{Path(f).name}:{line}({fn})", "ms_per_call": round(v[2] * 1000 / len(qs), 3)}
        for (f, line, fn), v in rows
    ]


# --- recall -----------------------------------------------------------------------------------------------

_VECTOR_SQL = (
    "SELECT id, embedding <=> CAST(%(v)s AS vector) FROM memories WHERE tenant_id = %(t)s AND {user} "
    "AND status = ANY(%(st)s) ORDER BY embedding <=> CAST(%(v)s AS vector) LIMIT %(k)s"
)
Hits = list[tuple[str, float]]


def _topk(conn: Any, sql: str, params: dict[str, Any], settings: Sequence[str]) -> tuple[Hits, float]:
    with conn.transaction(force_rollback=True):  # never keeps a DROP INDEX
        for s in settings:
            conn.execute(s)
        t = time.perf_counter()
        hits = [(str(r[0]), float(r[1])) for r in conn.execute(sql, params).fetchall()]
        return hits, (time.perf_counter() - t) * 1000


def overlap(got: Hits, truth: Hits) -> float:
    """Share of the exact top-k found, ties included: a returned row at or within the exact k-th distance
    counts (many memories may sit at exactly the same distance)."""
    if not truth:
        return 1.0
    kth = truth[-1][1] + 1e-6
    return min(len(truth), sum(1 for _, d in got if d <= kth)) / len(truth)


def _plan(conn: Any, sql: str, params: dict[str, Any], settings: Sequence[str]) -> list[str]:
    with conn.transaction(force_rollback=True):
        for s in settings:
            conn.execute(s)
        return [shorten(r[0]) for r in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()]


def measure_recall(
    url: str, *, tenant: str, users: int, n: int, n_global: int, seed: int, ef_search: int
) -> dict[str, Any]:
    """Top-10 overlap with an exact scan: the planner's choice, the HNSW index forced, no user filter."""
    from shared.db.vectors import vector_literal

    emb = _embedder()
    qs = queries(seed + 7, n, users)
    hnsw = [
        "SET LOCAL hnsw.iterative_scan = relaxed_order",
        f"SET LOCAL hnsw.ef_search = {max(ef_search, 40)}",
    ]
    exact = ["SET LOCAL enable_indexscan = off"]  # the user's rows through the b-tree bitmap, sorted exactly
    # without the b-trees (dropped inside the transaction, rolled back) the planner must use the HNSW index
    with raw_connection(url) as conn:
        others = [
            str(r[0])
            for r in conn.execute(
                "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'memories'::regclass "
                "AND NOT indisprimary AND indexrelid::regclass::text <> 'ix_memories_embedding'"
            ).fetchall()
        ]
    forced = [
        *(f"DROP INDEX {name}" for name in others),
        "SET LOCAL enable_seqscan = off",
        "SET LOCAL enable_bitmapscan = off",
        *hnsw,
    ]
    user_sql = _VECTOR_SQL.format(user="user_id = %(u)s")
    paths = {"planner": hnsw, "hnsw_forced": forced}
    overlaps: dict[str, list[float]] = {p: [] for p in paths}
    returned: dict[str, list[int]] = {p: [] for p in paths}
    latency: dict[str, list[float]] = {p: [] for p in [*paths, "exact"]}
    plans: dict[str, list[str]] = {}
    with raw_connection(url) as conn:
        for i, (user, q) in enumerate(qs):
            params = {
                "t": tenant,
                "u": user,
                "st": ["active"],
                "v": vector_literal(emb.embed_query(q)),
                "k": K,
            }
            truth, ms = _topk(conn, user_sql, params, exact)
            latency["exact"].append(ms)
            for name, settings in paths.items():
                got, ms = _topk(conn, user_sql, params, settings)
                latency[name].append(ms)
                returned[name].append(len(got))
                overlaps[name].append(overlap(got, truth))
            if i == 0:
                for name, settings in {**paths, "exact": exact}.items():
                    plans[name] = _plan(conn, user_sql, params, settings)
            if i % 25 == 0:
                progress(f"recall: {i:,}/{n:,} filtered queries", i, n)
        # the index itself: no user filter, exact = a (parallel) sequential scan
        global_sql = (
            "SELECT id, embedding <=> CAST(%(v)s AS vector) FROM memories WHERE status = 'active' "
            "ORDER BY embedding <=> CAST(%(v)s AS vector) LIMIT %(k)s"
        )
        glob: dict[str, list[float]] = {"ef_search 40": [], "ef_search 80": [], "ef_search 200": []}
        glob_ms: dict[str, list[float]] = {k: [] for k in [*glob, "exact"]}
        for i, (_, q) in enumerate(queries(seed + 11, n_global, users)):
            params = {"v": vector_literal(emb.embed_query(q)), "k": K}
            truth, ms = _topk(conn, global_sql, params, ["SET LOCAL enable_indexscan = off"])
            glob_ms["exact"].append(ms)
            for name in glob:
                ef = int(name.split()[-1])
                got, ms = _topk(conn, global_sql, params, [f"SET LOCAL hnsw.ef_search = {ef}"])
                glob_ms[name].append(ms)
                glob[name].append(overlap(got, truth))
            progress(f"recall: {i + 1}/{n_global} unfiltered queries (exact = full scan)", i + 1, n_global)

    def mean(v: list[float]) -> float:
        return round(sum(v) / len(v), 4) if v else 0.0

    def p50(v: list[float]) -> float:
        return round(percentile(sorted(v), 50), 2) if v else 0.0

    return {
        "queries": n,
        "global_queries": n_global,
        "filtered": {
            name: {
                "recall_at_10": mean(overlaps[name]),
                "mean_returned": mean([float(r) for r in returned[name]]),
                "short_answers": sum(1 for r in returned[name] if r < K),
                "p50_ms": p50(latency[name]),
            }
            for name in paths
        },
        "exact_p50_ms": p50(latency["exact"]),
        "global": {name: {"recall_at_10": mean(v), "p50_ms": p50(glob_ms[name])} for name, v in glob.items()},
        "global_exact_p50_ms": p50(glob_ms["exact"]),
        "plans": plans,
    }


# --- reconciliation throughput ----------------------------------------------------------------------------


def insert_candidates(
    url: str, *, tenant: str, users: Sequence[str], per_user: int, seed: int
) -> dict[str, int]:
    """Per user: new facts, one exact repeat of a stored memory, and two values of one slot (the second
    supersedes the first). One INSERT ... SELECT FROM unnest(...)."""
    rng = random.Random(f"cands:{seed}")
    with raw_connection(url) as conn:
        stored = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT DISTINCT ON (user_id) user_id, content, kind, category FROM memories "
                "WHERE tenant_id = %s "
                "AND user_id = ANY(%s) AND status = 'active' ORDER BY user_id, recorded_at",
                (tenant, list(users)),
            ).fetchall()
        }
        cols: dict[str, list[Any]] = {
            k: [] for k in ("user", "content", "kind", "cat", "slot", "value", "ev", "time")
        }
        kinds: dict[str, int] = {}

        def add(
            user: str,
            content: str,
            kind: str,
            cat: str,
            slot: str | None,
            value: str | None,
            what: str,
            seconds: int,
        ) -> None:
            n = len(cols["user"])
            for k, v in zip(
                cols,
                (user, content, kind, cat, slot, value, f"cand-ev-{n}", NOW + timedelta(seconds=seconds)),
                strict=True,
            ):
                cols[k].append(v)
            kinds[what] = kinds.get(what, 0) + 1

        for user in users:
            a, b = rng.sample(_W["city"], 2)
            add(user, f"The user moved to {a}", "semantic", "profile", "location", a, "slot (first value)", 1)
            add(user, f"The user moved to {b}", "semantic", "profile", "location", b, "slot (new value)", 2)
            made = 2
            if user in stored:
                content, kind, cat = stored[user]
                add(user, content, kind, cat, None, None, "repeat of a stored memory", 3)
                made += 1
            for _ in range(made, per_user):
                kind, cat, content = sentence(rng)
                add(user, content, kind, cat, None, None, "new fact", 4)
        conn.execute(
            "INSERT INTO candidates (tenant_id, user_id, session_id, op, content, kind, category, tier, "
            "slot, "
            "value, confidence, lang, origin, rule, source_event_ids, source_turn_ids, event_time, status) "
            "SELECT %(t)s, u, u || '-s1', 'remember', c, k, cat, 'worth', s, v, 0.8, 'en', 'rules', 'bench', "
            "ARRAY[ev], '{}', tm, 'new' FROM unnest(%(u)s::text[], %(c)s::text[], %(k)s::text[], "
            "%(cat)s::text[], %(s)s::text[], %(v)s::text[], %(ev)s::text[], %(tm)s::timestamptz[]) "
            "AS x(u, c, k, cat, s, v, ev, tm)",
            {
                "t": tenant,
                "u": cols["user"],
                "c": cols["content"],
                "k": cols["kind"],
                "cat": cols["cat"],
                "s": cols["slot"],
                "v": cols["value"],
                "ev": cols["ev"],
                "tm": cols["time"],
            },
        )
    return kinds


def measure_reconcile(
    svc: common.Services, *, tenant: str, users: int, n_users: int, per_user: int, seed: int, deadline: float
) -> dict[str, Any]:
    from shared import tasknames
    from shared.publisher import RedisPublisher

    rng = random.Random(f"rec-users:{seed}")
    chosen = [user_id(u) for u in rng.sample(range(users), n_users)]
    progress(f"reconcile: inserting {n_users * per_user:,} candidates")
    mix = insert_candidates(svc.database_url, tenant=tenant, users=chosen, per_user=per_user, seed=seed)
    total = sum(mix.values())
    queue = unique_name("bench-store-rec")
    out: dict[str, Any] = {"users": n_users, "candidates": total, "mix": mix, "concurrency": 2}
    worker = common.BenchWorker(common.worker_env(svc, queue), queue, svc.tmp / f"{queue}.log", 2).start()
    publisher = RedisPublisher(svc.redis_url, queue=queue, timeout_s=5.0)
    try:
        pg0 = common.postgres_cpu_s(svc.postmaster_pid)
        t0 = time.monotonic()
        for user in chosen:
            publisher.publish(tasknames.RECONCILE_USER, [tenant, user])
        publish_s = time.monotonic() - t0
        last, last_change, left = -1, time.monotonic(), total
        with raw_connection(svc.database_url) as conn:
            while True:
                left = int(
                    conn.execute(
                        "SELECT count(*) FROM candidates WHERE tenant_id = %s AND status = 'new'", (tenant,)
                    ).fetchone()[0]
                )
                now = time.monotonic()
                progress(f"reconcile: {total - left:,}/{total:,} candidates reconciled", total - left, total)
                if left != last:
                    last, last_change = left, now
                if left == 0:
                    break
                if now > deadline or now - last_change > STALL_S or not worker.alive():
                    out["incomplete"] = (
                        "budget" if now > deadline else ("stalled" if worker.alive() else "died")
                    )
                    out["worker_log_tail"] = worker.log_tail()
                    break
                time.sleep(0.2)
            wall = time.monotonic() - t0
            pg1 = common.postgres_cpu_s(svc.postmaster_pid)
            decisions = dict(
                conn.execute(
                    "SELECT coalesce(decision, status), count(*) FROM candidates "
                    "WHERE tenant_id = %s GROUP BY 1",
                    (tenant,),
                ).fetchall()
            )
    finally:
        stats = worker.stop()
        publisher.close()
        common.drop_queue(svc.redis_url, queue, tenant=tenant)
    done = total - left
    out.update(
        reconciled=done,
        wall_s=round(wall, 2),
        publish_s=round(publish_s, 3),
        candidates_per_s=round(done / wall, 1) if wall else None,
        decisions={str(k): int(v) for k, v in decisions.items()},
        cpu_ms_per_candidate={
            "worker_main": _per(
                sum(s.cpu_s - s.cpu_s_start for s in stats.values() if s.role == "main"), done
            ),
            "pool_children": _per(
                sum(s.cpu_s - s.cpu_s_start for s in stats.values() if s.role == "child"), done
            ),
            "postgres": _per(pg1 - pg0, done) if pg0 is not None and pg1 is not None else None,
        },
    )
    return out


def _per(cpu_s: float, n: int) -> float | None:
    return round(cpu_s * 1000 / n, 2) if n else None


def probe_reconcile(url: str, *, tenant: str, users: int, seed: int, n_users: int = 40) -> dict[str, Any]:
    """In-process: one `reconcile_user` per user (worker role), statements timed by kind."""
    from core.reconcile import Policy
    from shared.db.engine import get_engine, session_scope
    from shared.settings import Settings
    from worker.services.reconcile import reconcile_user

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = get_engine(
        url, pool_size=1, application_name="bench-store-probe", role=settings.db_role_worker or None
    )
    rng = random.Random(f"probe:{seed}")
    chosen = [user_id(u) for u in rng.sample(range(users), n_users)]
    insert_candidates(url, tenant=tenant, users=chosen, per_user=RECONCILE_PER_USER, seed=seed + 1)
    per_kind: dict[str, float] = {}
    n = 0
    t0 = time.perf_counter()
    with capture_statements(engine) as seen:
        for user in chosen:
            with session_scope(engine, tenant=tenant) as db:
                counts = reconcile_user(
                    db, tenant, user, embedder=_embedder(), policy=Policy(), actor="bench", now=NOW
                )
            n += sum(counts.values())
    wall_ms = (time.perf_counter() - t0) * 1000
    for c in seen:
        key = _rec_kind(c.statement)
        per_kind[key] = per_kind.get(key, 0.0) + c.duration_ms
    sql_ms = sum(per_kind.values())
    return {
        "candidates": n,
        "ms_per_candidate": round(wall_ms / n, 2) if n else None,
        "sql_ms_per_candidate": {
            k: round(v / n, 3) for k, v in sorted(per_kind.items(), key=lambda kv: -kv[1])
        }
        if n
        else {},
        "python_ms_per_candidate": round((wall_ms - sql_ms) / n, 2) if n else None,
    }


def _rec_kind(sql: str) -> str:
    s = " ".join(sql.split())
    for key, label in (
        ("pg_advisory_xact_lock", "advisory lock"),
        ("INSERT INTO memories", "insert memory"),
        ("INSERT INTO memory_history", "history row"),
        ("<=>", "nearest neighbours"),
        ("UPDATE candidates", "mark candidate"),
        ("FROM candidates", "load candidates"),
        ("FOR UPDATE", "slot rows"),
        ("UPDATE memories", "update memory"),
        ("FROM memories WHERE id", "snapshot"),
        ("set_config", "tenant"),
        ("SET LOCAL", "SET LOCAL"),
    ):
        if key in s:
            return label
    return "other"


# --- the benchmark ----------------------------------------------------------------------------------------


def run(budget_s: float, quick: bool) -> dict[str, Any]:
    budget_s = min(budget_s, OWN_LIMIT_S[quick])
    started = time.monotonic()
    deadline = started + budget_s
    seed = 20261101
    figures: dict[str, Any] = {"sizes": [], "budget_s": budget_s, "users": USERS}
    skipped: list[str] = []
    with common.services() as svc:
        tenant = unique_name("t-store")
        figures["services"] = "embedded PostgreSQL in a temp dir" if svc.embedded else "DATABASE_URL"
        with raw_connection(svc.database_url) as conn:
            figures["server"] = {
                k: conn.execute(f"SHOW {k}").fetchone()[0]
                for k in ("server_version", "shared_buffers", "work_mem", "max_parallel_workers_per_gather")
            }
            figures["server"]["pgvector"] = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()[0]
        loaded = 0
        sizes = SIZES[quick]
        all_defs: list[tuple[str, str]] = []
        for size in sizes:
            left = deadline - time.monotonic()
            need = 60 + size / 1_000  # ~1,000 s for 1M on this machine (HNSW build ~half)
            if left < need:
                skipped.append(f"{size:,} memories: {left:.0f} s of budget left, about {need:.0f} s needed")
                continue
            entry: dict[str, Any] = {"memories": size, "per_user": size // USERS}
            dropped = drop_secondary_indexes(svc.database_url)
            all_defs = all_defs or dropped
            # the HNSW graph is built once, at the largest size: per-user queries never use it (see the plans)
            last = size == sizes[-1]
            defs = [d for d in all_defs if last or d[0] != HNSW_INDEX]
            entry["hnsw_built"] = last
            entry["load"] = load_store(
                svc.database_url,
                tenant=tenant,
                users=USERS,
                start=loaded,
                stop=size,
                seed=seed,
                label=f"load {size:,}",
            )
            entry["load"]["rows_added"] = size - loaded
            loaded = size
            entry["indexes"] = rebuild_indexes(svc.database_url, defs, label=f"indexes at {size:,}")
            entry["sizes_mb"] = relation_sizes(svc.database_url)
            progress(f"search latency at {size:,}")
            entry["latency"] = measure_search(
                svc.database_url, tenant=tenant, users=USERS, n=LATENCY_QUERIES[quick], seed=seed + size
            )
            figures["sizes"].append(entry)
        if figures["sizes"]:
            last = figures["sizes"][-1]
            if deadline - time.monotonic() > 120:
                last["recall"] = measure_recall(
                    svc.database_url,
                    tenant=tenant,
                    users=USERS,
                    n=RECALL_QUERIES,
                    n_global=GLOBAL_RECALL_QUERIES,
                    seed=seed,
                    ef_search=last["latency"]["ef_search"],
                )
            else:
                skipped.append("recall: budget")
            if deadline - time.monotonic() > 90:
                figures["reconcile"] = measure_reconcile(
                    svc,
                    tenant=tenant,
                    users=USERS,
                    n_users=RECONCILE_USERS[quick],
                    per_user=RECONCILE_PER_USER,
                    seed=seed,
                    deadline=min(deadline, time.monotonic() + 300),
                )
                figures["reconcile"]["store_memories"] = loaded
                figures["reconcile_probe"] = probe_reconcile(
                    svc.database_url, tenant=tenant, users=USERS, seed=seed
                )
            else:
                skipped.append("reconciliation: budget")
    return common.report(
        "store", quick, figures, skipped, started=started, targets=targets, render=render_markdown
    )


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    at = {e["memories"]: e for e in figures["sizes"]}
    big = at.get(1_000_000)
    out = []
    for size, entry in sorted(at.items()):
        if size != 1_000_000:
            lat = entry["latency"]["search"]
            out.append(
                common.target(
                    f"search p95, k=10, {size:,} memories (no target at this size)",
                    lat["p95_ms"],
                    "<=",
                    TARGET_P95_MS,
                    "ms",
                    "reference",
                )
            )
    out.append(
        common.target(
            "search p95, k=10, per-user filter, 1,000,000 memories / 10,000 users",
            big["latency"]["search"]["p95_ms"] if big else None,
            "<=",
            TARGET_P95_MS,
            "ms",
            "query embedding included" if big else "not measured",
        )
    )
    return out


# --- markdown ---------------------------------------------------------------------------------------------


def render_markdown(result: dict[str, Any]) -> str:
    f = result["figures"]
    lines = common.targets_table(result["targets"])
    srv = f.get("server", {})
    lines += [
        "",
        paragraph(f"""Anchors: {ANCHORS}. Services: {f["services"]}, PostgreSQL {srv.get("server_version")},
              pgvector {srv.get("pgvector")}, shared_buffers {srv.get("shared_buffers")}; everything on the
              same 2-core machine as the benchmark process. Data: {USERS:,} users of one tenant; memory i
              belongs to user i mod {USERS:,}; synthetic sentences from a template grammar (12 templates,
              ~200 slot words; 1 in 12 Chinese), embedded by the hashing embedder (384-dim) in Python batches
              of {GEN_BATCH:,} in {GEN_PROCESSES} processes, binary COPY into an unlogged staging table, one
              INSERT ... SELECT into `memories` (tsvector built in SQL) with the secondary indexes dropped,
              then the indexes rebuilt from their own definitions (maintenance_work_mem {HNSW_BUILD_MEM}, one
              parallel maintenance worker); the HNSW index only at the largest size (per-user queries do not
              use it: see the plans), so smaller sizes show n/a there. All rows active."""),
    ]
    lines += [
        "",
        "### Load and index build",
        "",
        "| memories | rows added | generate + COPY s | INSERT ... SELECT s | rows/s | HNSW build s | "
        "other indexes s | ANALYZE s | table MB | HNSW MB |",
        "| --- " * 10 + "|",
    ]
    for e in f["sizes"]:
        secs = e["indexes"]["seconds"]
        hnsw = secs.get("ix_memories_embedding")
        other = round(
            sum(v for k, v in secs.items() if k not in ("ix_memories_embedding", "ANALYZE memories")), 1
        )
        mb = e["sizes_mb"]
        lines.append(
            f"| {e['memories']:,} | {e['load']['rows_added']:,} | {e['load']['generate_copy_s']} | "
            f"{e['load']['insert_select_s']} | {e['load']['rows_per_s']:,} | {fmt(hnsw)} | {other} | "
            f"{secs.get('ANALYZE memories')} | {fmt(mb.get('memories (heap + toast)'))} | "
            f"{fmt(mb.get('ix_memories_embedding'))} |"
        )
    notices = [n for e in f["sizes"] for n in e["indexes"]["notices"]]
    if notices:
        lines += ["", "Server notices during the builds: " + "; ".join(f"`{n}`" for n in notices[:4])]
    lines += [
        "",
        "### Search latency (k=10, one user's memories)",
        "",
        paragraph(f"""In-process calls of
              `store.search.search` (what `POST /v1/search` runs after authentication) as the API's
              database role, row-level security on: query embedding (hashing), the candidates query (one
              statement: the 40 nearest by vector, the keyword matches and their BM25 statistics; the HNSW
              settings come with the pooled connection), ranking. `search()` = that call; transaction =
              session + `set_config` of the tenant + search + commit. One random user and one synthetic query
              per call, {LATENCY_WARMUP} warm-up calls first. Pieces are per-statement wall times seen by the
              client."""),
        "",
        "| memories | calls | search p50 / p95 / p99 ms | transaction p50 / p95 / p99 ms | "
        "embed p50 ms | candidates query p50 / p95 ms | statements/call | hits/call | indexes used (scans) |",
        "| --- " * 9 + "|",
    ]
    for e in f["sizes"]:
        la = e["latency"]
        s, t, st = la["search"], la["transaction"], la["statements"]
        cq = st.get("candidates query", {})
        used = ", ".join(f"`{k}` {v:,}" for k, v in sorted(la["index_scans"].items(), key=lambda kv: -kv[1]))
        lines.append(
            f"| {e['memories']:,} | {la['queries']:,} | {s['p50_ms']:.2f} / {s['p95_ms']:.2f} / "
            f"{s['p99_ms']:.2f} | {t['p50_ms']:.2f} / {t['p95_ms']:.2f} / {t['p99_ms']:.2f} | "
            f"{la['embed_query']['p50_ms']:.3f} | {fmt(cq.get('p50_ms'), '.2f')} / "
            f"{fmt(cq.get('p95_ms'), '.2f')} | {_statements_per_call(la)} | {la['mean_hits']} | {used} |"
        )
    if f["sizes"]:
        e = f["sizes"][-1]
        lines += [
            "",
            f"Plans at {e['memories']:,} memories (EXPLAIN ANALYZE of one call's statements, "
            "replayed in a rolled-back transaction):",
        ]
        for p in e["latency"]["plans"]:
            lines += ["", "```", p["statement"], *p["plan"], "```"]
        rec = e.get("recall")
        if rec:
            lines += _recall_md(rec, e["memories"])
    lines += _reconcile_md(f.get("reconcile"), f.get("reconcile_probe"))
    lines += _where_md(f)
    if result["skipped"]:
        lines += ["", "Skipped (budget): " + "; ".join(result["skipped"])]
    return "\n".join(lines) + "\n"


def _recall_md(rec: dict[str, Any], size: int) -> list[str]:
    names = {
        "planner": "as the planner runs it (`hnsw.iterative_scan = relaxed_order`)",
        "hnsw_forced": "HNSW index forced (b-trees dropped in a rolled-back transaction, seqscan off)",
    }
    out = [
        "",
        f"### Recall of the vector query at {size:,} memories",
        "",
        paragraph(f"""Top-10 of the vector query
           (per-user filter, status active) against an exact scan of the same user's rows (b-tree bitmap
           scan, exact sort), {rec["queries"]} queries; and, without the user filter, the index against a full
           scan, {rec["global_queries"]} queries."""),
        "",
        "| path | recall@10 | mean rows returned | queries with < 10 rows | p50 ms |",
        "| --- " * 5 + "|",
    ]
    for name, r in rec["filtered"].items():
        out.append(
            f"| {names[name]} | {100 * r['recall_at_10']:.1f} % | {r['mean_returned']} | "
            f"{r['short_answers']} | {r['p50_ms']} |"
        )
    out.append(f"| exact (reference) | 100 % | - | - | {rec['exact_p50_ms']} |")
    for name, r in rec["global"].items():
        out.append(
            f"| no user filter, HNSW {name} | {100 * r['recall_at_10']:.1f} % | - | - | {r['p50_ms']} |"
        )
    out.append(f"| no user filter, exact full scan | 100 % | - | - | {rec['global_exact_p50_ms']} |")
    for name in ("planner", "hnsw_forced"):
        plan = rec["plans"].get(name)
        if plan:
            out += ["", f"Plan, {names[name]}:", "", "```", *plan, "```"]
    return out


def _reconcile_md(r: dict[str, Any] | None, probe: dict[str, Any] | None) -> list[str]:
    if not r:
        return []
    cpu = r["cpu_ms_per_candidate"]
    out = [
        "",
        "### Reconciliation throughput",
        "",
        paragraph(f"""{r["candidates"]:,} candidates (status 'new') for
           {r["users"]:,} users of the {r["store_memories"]:,}-memory store, inserted in one statement; mix:
           {", ".join(f"{v:,} {k}" for k, v in r["mix"].items())}. `memory.reconcile_user` published once per
           user by name (`RedisPublisher`) to a real `celery worker -c {r["concurrency"]}` started beforehand;
           time from the first publish to no candidate left 'new'."""),
        "",
        "| candidates | reconciled | wall s | candidates/s | decisions | CPU ms/candidate: worker main / "
        "pool / postgres |",
        "| --- " * 6 + "|",
        f"| {r['candidates']:,} | {r['reconciled']:,}"
        f"{' (' + r['incomplete'] + ')' if r.get('incomplete') else ''}"
        f" | {r['wall_s']} | {fmt(r['candidates_per_s'])} | "
        f"{', '.join(f'{k} {v:,}' for k, v in sorted(r['decisions'].items()))} | "
        f"{fmt(cpu['worker_main'])} / {fmt(cpu['pool_children'])} / {fmt(cpu['postgres'])} |",
    ]
    if probe and probe.get("candidates"):
        parts = ", ".join(f"{k} {v}" for k, v in probe["sql_ms_per_candidate"].items())
        out += [
            "",
            paragraph(f"""In-process probe ({probe["candidates"]} candidates, one `reconcile_user` per user,
                worker role): {probe["ms_per_candidate"]} ms per candidate, of which SQL (client wall time per
                statement kind, ms per candidate): {parts}; Python (embedding, decisions, snapshots' JSON)
                {probe["python_ms_per_candidate"]} ms."""),
        ]
    return out


def _top_calls(la: dict[str, Any]) -> str:
    return ", ".join(f"`{x['function']}` {x['ms_per_call']}" for x in la["profile_top_tottime"][:6])


def _statements_per_call(la: dict[str, Any]) -> str:
    """Statements per transaction, by kind ("1 candidates query, 1 set_config (tenant)")."""
    parts = [f"{v['per_call']:g} {k}" for k, v in la["statements"].items() if "per_call" in v]
    return ", ".join(parts) or "n/a"


def _other_statements(others: dict[str, dict[str, Any]]) -> str:
    return "".join(f"{k} {v['p50_ms'] * v.get('per_call', 1):.2f} ms, " for k, v in others.items())


def _where_md(f: dict[str, Any]) -> list[str]:
    if not f["sizes"]:
        return []
    e = f["sizes"][-1]
    la = e["latency"]
    st = la["statements"]
    s = la["search"]
    cq = st.get("candidates query", {}).get("p50_ms")
    emb = la["embed_query"]["p50_ms"]
    if cq is None:
        return []
    # statements inside search() other than the candidates query (the tenant's set_config precedes it)
    others = {
        k: v
        for k, v in st.items()
        if k not in ("candidates query", "set_config (tenant)") and v.get("p50_ms") is not None
    }
    other_ms = sum(v["p50_ms"] * v.get("per_call", 1) for v in others.values())
    rest = s["p50_ms"] - cq - other_ms - emb
    return [
        "",
        "### Where the time goes",
        "",
        paragraph(f"""At {e["memories"]:,} memories a `search()` call takes
            {s["p50_ms"]:.2f} ms at p50: the candidates query (vector and keyword lists with the BM25
            statistics, one statement) {cq:.2f} ms, {_other_statements(others)}embedding the query
            {emb:.3f} ms, and the rest (ranking, row objects, SQLAlchemy, psycopg) {rest:.2f} ms. The
            per-user filter reaches
            {e["per_user"]} rows per user; which index answered is in the table above
            (`pg_stat_user_indexes`). Top own time in `search()` (cProfile over {la["profile_calls"]} calls,
            ms per call, profiler overhead included): {_top_calls(la)}.
            """),
    ]


if __name__ == "__main__":
    import json
    import sys

    quick_mode = "--quick" in sys.argv
    print(
        json.dumps(
            run(float(os.environ.get("BENCH_BUDGET_S", "900")), quick_mode)["figures"], indent=1, default=str
        )[:5000]
    )
