"""The sleep-time benchmark: prune + purge over 1,000,000 memories, nightly distillation, LLM cost.

Contract: `run(budget_s, quick) -> dict` measures, never asserts, and returns
`{"name", "quick", "figures", "targets", "skipped", "markdown"}` like the other bench modules.

- prune: a store of 1,000,000 memories (quick: 200,000) over 10 tenants of 10,000 users each (one tenant
  overrides the episodic half-life), loaded with `bench.lib.db.load_store`'s `lifecycle` profile: ages
  exponential with a 60-day mean, accesses, 1 % pinned, 4 % with a TTL, 6 % archived by earlier runs
  (archived up to 90 days ago), one `add` history row per memory (plus an `archive` row per archived one);
  indexes rebuilt after the load, VACUUM ANALYZE. Rows carry real 384-dim vectors (a pool of 256 hashing
  vectors: same row width, no embedding cost); the HNSW index is not built, because a prune UPDATE to
  status 'archived' and a purge DELETE never insert into a partial index on active rows. Timed:
  `store.pruning.prune`, then `purge`, each in its own transaction as the worker role in the
  all-tenant scope (what the `memory.prune` / `memory.purge` tasks do), with a fixed `now`; then the same
  prune again (changes nothing: its time is the scan alone), under EXPLAIN ANALYZE.
- distill: 10,000 users x 50 fragments (quick: 1,000 users) from the template grammar of `bench.lib.corpus`,
  hashing-embedded; one `memory.distill` task per user (tenant, user) published by name to a real
  `celery worker -c 2`, no LLM (deterministic path); fragments/s from the first publish to the last run
  record finished. When the rate measured on the first users says the rest would not fit the budget, only
  part of the users is published (said in the report). An in-process probe times the pieces of
  `distill_user` (load, cluster, writes) on 20 more users.
- llm: 200 users x 50 fragments (quick: 50 users), `distill_user` in-process with the LLM pointed at the
  fake OpenAI-compatible server of the tests (its token count: one token per four characters), which
  answers every cluster with one merged memory covering all of it: tokens per consolidated memory.
"""

from __future__ import annotations

import cProfile
import json
import re
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bench.lib import report
from bench.lib.capture import Captured, capture_statements, explain_statements, shorten, top_own_time
from bench.lib.corpus import NOW, Profile, embedder, user_id
from bench.lib.db import drop_secondary_indexes, load_store, raw_connection, rebuild_indexes, relation_sizes
from bench.lib.processes import BenchWorker, cpu_since_start, postgres_cpu_s
from bench.lib.progress import progress
from bench.lib.report import Code, Column, Each, Section, Table, Target, Text, fmt
from bench.lib.services import Services, drop_queue, services, unique_name, worker_env
from bench.lib.stats import summary_ms

PRUNE_MEMORIES = {True: 200_000, False: 1_000_000}
PRUNE_TENANTS = 10
DISTILL_USERS = {True: 1_000, False: 10_000}
FRAGMENTS_PER_USER = 50
PROBE_USERS = 20
LLM_USERS = {True: 50, False: 200}
OWN_LIMIT_S = {True: 480.0, False: 1200.0}
STALL_S = 120.0
PURGE_TIMEOUT_S = 90.0
PURGE_PROBE_ROWS = 5

TARGET_PRUNE_S = 10.0


# --- prune + purge ----------------------------------------------------------------------------------------


def load_prune_store(svc: Services, *, n: int, seed: int) -> dict[str, Any]:
    """`n` lifecycle memories over PRUNE_TENANTS tenants, history rows, indexes, VACUUM ANALYZE."""
    timings: dict[str, Any] = {}
    defs = drop_secondary_indexes(svc.database_url)
    hist_defs = drop_secondary_indexes(svc.database_url, "memory_history")
    tenants = [unique_name(f"t-sleep{i}") for i in range(PRUNE_TENANTS)]
    with raw_connection(svc.database_url) as conn:
        for i, t in enumerate(tenants):
            settings = '{"half_life_days": {"episodic": 14}}' if i == 0 else "{}"
            conn.execute("INSERT INTO tenants (id, settings) VALUES (%s, %s::jsonb)", (t, settings))
    per = n // PRUNE_TENANTS
    t0 = time.monotonic()
    loads = []
    for i, t in enumerate(tenants):
        loads.append(
            load_store(
                svc.database_url,
                tenant=t,
                users=10_000,
                start=i * per,
                stop=(i + 1) * per,
                seed=seed,
                profile=Profile("lifecycle", embed=False),
                label=f"prune store: tenant {i + 1}/{PRUNE_TENANTS}",
            )
        )
    timings["load_s"] = round(time.monotonic() - t0, 1)
    progress("prune store: history rows")
    t1 = time.monotonic()
    with raw_connection(svc.database_url) as conn:
        conn.execute(
            "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, after, reason, actor, event_ids, "
            "created_at) SELECT id, tenant_id, user_id, 'add', "
            "jsonb_build_object('content', content, 'kind', "
            "kind, 'status', 'active'), 'bench load', 'bench', source_event_ids, recorded_at FROM memories"
        )
        conn.execute(
            "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, reason, actor, created_at) "
            "SELECT id, tenant_id, user_id, 'archive', 'decay: older than three half-lives, rarely used', "
            "'bench', archived_at FROM memories WHERE status = 'archived'"
        )
    timings["history_s"] = round(time.monotonic() - t1, 1)
    no_hnsw = [d for d in defs if d[0] != "ix_memories_embedding"]
    timings["indexes"] = rebuild_indexes(svc.database_url, no_hnsw, label="prune store indexes")
    hist = rebuild_indexes(svc.database_url, hist_defs, label="history indexes")
    timings["indexes"]["seconds"].update(hist["seconds"])
    progress("prune store: VACUUM ANALYZE")
    t2 = time.monotonic()
    with raw_connection(svc.database_url) as conn:
        conn.execute("VACUUM ANALYZE memories")
        conn.execute("VACUUM ANALYZE memory_history")
        counts = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE status = 'active'), count(*) FILTER (WHERE status = "
            "'archived'), count(*) FILTER (WHERE pinned), count(*) FILTER (WHERE expires_at IS NOT NULL), "
            "(SELECT count(*) FROM memory_history) FROM memories"
        ).fetchone()
    timings["vacuum_s"] = round(time.monotonic() - t2, 1)
    timings["hnsw_skipped"] = "ix_memories_embedding"
    return {
        "tenants": PRUNE_TENANTS,
        "timings": timings,
        "sizes_mb": relation_sizes(svc.database_url),
        "rows": dict(
            zip(
                ("memories", "active", "archived", "pinned", "with_ttl", "history"),
                map(int, counts),
                strict=True,
            )
        ),
    }


def measure_prune(svc: Services) -> dict[str, Any]:
    from bench.lib.project import ALL_TENANTS, ForgettingPolicy, get_engine, pruning, session_scope
    from shared.settings import Settings

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = get_engine(
        svc.database_url, pool_size=1, application_name="bench-sleep", role=settings.db_role_worker or None
    )
    policy = ForgettingPolicy(retention_days=settings.retention_days)
    out: dict[str, Any] = {"retention_days": policy.retention_days, "now": NOW.isoformat()}

    def timed(name: str, fn: Callable[..., dict[str, int]], timeout_s: float | None = None) -> dict[str, Any]:
        """One function in its own transaction; a statement past `timeout_s` is cancelled (rolled back)."""
        from sqlalchemy import text
        from sqlalchemy.exc import OperationalError

        progress(f"prune: {name}" + (f" (statement timeout {timeout_s:g} s)" if timeout_s else ""))
        counts: dict[str, int] = {}
        error = None
        with capture_statements(engine) as seen:
            t0 = time.perf_counter()
            t1 = t0
            try:
                with session_scope(engine, tenant=ALL_TENANTS) as db:
                    if timeout_s:
                        db.execute(text(f"SET LOCAL statement_timeout = '{int(timeout_s * 1000)}'"))
                    counts = fn(db, now=NOW, policy=policy, actor=f"bench:{name}")
                    t1 = time.perf_counter()
            except OperationalError as exc:
                error = f"cancelled by statement_timeout after {timeout_s:g} s: {type(exc.orig).__name__}"
                t1 = time.perf_counter()
            t2 = time.perf_counter()
        kept = [c for c in seen if "set_config" not in c.statement and "statement_timeout" not in c.statement]
        stmts = [{"statement": _label(c.statement), "ms": round(c.duration_ms, 1)} for c in kept]
        out = {
            "counts": counts,
            "seconds": round(t2 - t0, 2),
            "commit_s": round(t2 - t1, 2),
            "statements": stmts,
            "captured": kept,
        }
        if error:
            out["error"] = error
        return out

    first = timed("prune", pruning.prune)
    few = explain_purge_few(svc, engine, policy=policy)
    purge = timed("purge", pruning.purge, timeout_s=PURGE_TIMEOUT_S)
    again = timed("prune again (no-op)", pruning.prune)
    progress("prune: EXPLAIN ANALYZE of the no-op prune")
    plans = explain_statements(engine, again.pop("captured"), tenant=ALL_TENANTS)
    first.pop("captured")
    purge.pop("captured")
    out.update(prune=first, purge=purge, prune_again=again, plans_noop=plans)
    out["purge_probe"] = few
    out["purge_with_index"] = purge_with_index(
        svc, engine, policy=policy, role=settings.db_role_worker or "NONE"
    )
    out["total_s"] = round(first["seconds"] + purge["seconds"], 2)
    return out


def _purge_statement(engine: Any, *, policy: Any) -> Captured | None:
    """purge's DELETE statement and its parameters, from a purge that finds nothing (`now` years back)."""
    from sqlmodel import Session

    from bench.lib.project import ALL_TENANTS, pruning, set_tenant

    with capture_statements(engine) as seen, Session(engine) as db:
        set_tenant(db, ALL_TENANTS)
        pruning.purge(db, now=NOW - timedelta(days=3650), policy=policy, actor="bench:purge-probe")
        db.rollback()
    return next((c for c in seen if "DELETE FROM memories" in c.statement), None)


def _few_rows_params(svc: Services, stmt: Captured, *, policy: Any) -> tuple[int, dict[str, Any]]:
    """How many rows the real purge would delete, and the statement's parameters with the cutoff moved
    back so that only the PURGE_PROBE_ROWS oldest qualify."""
    cutoff = NOW - timedelta(days=policy.retention_days)
    with raw_connection(svc.database_url) as conn:
        eligible, small_cutoff = conn.execute(
            "SELECT count(*), (array_agg(archived_at ORDER BY archived_at))[%s] FROM memories "
            "WHERE status IN ('archived', 'deleted') AND NOT pinned AND archived_at <= %s",
            (PURGE_PROBE_ROWS, cutoff),
        ).fetchone()
    return int(eligible), {**stmt.parameters, "cutoff": small_cutoff}


def explain_purge_few(svc: Services, engine: Any, *, policy: Any) -> dict[str, Any]:
    """Before the real purge: EXPLAIN ANALYZE of purge's statement on its PURGE_PROBE_ROWS oldest rows
    (rolled back): the per-row cost, triggers included."""
    from bench.lib.project import ALL_TENANTS

    stmt = _purge_statement(engine, policy=policy)
    if stmt is None:
        return {}
    eligible, params = _few_rows_params(svc, stmt, policy=policy)
    progress(f"purge probe: EXPLAIN ANALYZE on the {PURGE_PROBE_ROWS} oldest rows (rolled back)")
    plan = explain_statements(engine, [Captured(stmt.statement, params)], tenant=ALL_TENANTS)
    return {"eligible": eligible, "probe_rows": PURGE_PROBE_ROWS, "plan": plan[0]["plan"] if plan else []}


def purge_with_index(svc: Services, engine: Any, *, policy: Any, role: str) -> dict[str, Any]:
    """After the real purge: in one rolled-back transaction, an index on memories(superseded_by) (the
    column of the self-referencing ON DELETE SET NULL key), the same EXPLAIN, then the whole purge timed."""
    from sqlalchemy import text
    from sqlmodel import Session

    from bench.lib.project import ALL_TENANTS, pruning, set_tenant

    stmt = _purge_statement(engine, policy=policy)
    if stmt is None:
        return {}
    eligible, params = _few_rows_params(svc, stmt, policy=policy)
    out: dict[str, Any] = {"eligible": eligible}
    if not eligible:
        return out
    progress("purge probe: with an index on memories(superseded_by), rolled back")
    with engine.connect() as conn:
        trans = conn.begin()
        try:
            t0 = time.perf_counter()
            conn.execute(text("SET LOCAL ROLE NONE"))  # the table's owner builds the index
            conn.execute(text("CREATE INDEX bench_superseded_by ON memories (superseded_by)"))
            out["index_build_s"] = round(time.perf_counter() - t0, 2)
            conn.execute(text(f"SET LOCAL ROLE {role}"))
            set_tenant(conn, ALL_TENANTS)  # type: ignore[arg-type]
            out["plan"] = [
                shorten(r[0])
                for r in conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + stmt.statement, params).all()
            ]
            conn.execute(text(f"SET LOCAL statement_timeout = '{int(PURGE_TIMEOUT_S * 1000)}'"))
            t1 = time.perf_counter()
            counts = pruning.purge(Session(bind=conn), now=NOW, policy=policy, actor="bench:purge-probe")
            out["purge_s"] = round(time.perf_counter() - t1, 2)
            out["counts"] = counts
        finally:
            trans.rollback()
    return out


def _label(sql: str) -> str:
    s = " ".join(sql.split())
    if "DELETE FROM memories" in s:
        return "purge (DELETE + history scrub + tombstones)"
    if "expires_at" in s and "UPDATE memories" in s:
        return "TTL archive (UPDATE + history)"
    if "UPDATE memories" in s:
        return "decay archive (UPDATE + history)"
    return s[:80]


# --- distillation -----------------------------------------------------------------------------------------


def load_fragments_store(svc: Services, *, tenant: str, users: int, seed: int, label: str) -> dict[str, Any]:
    """`users` x FRAGMENTS_PER_USER active, unslotted, hashing-embedded fragments (up to a year old)."""
    return load_store(
        svc.database_url,
        tenant=tenant,
        users=users,
        start=0,
        stop=users * FRAGMENTS_PER_USER,
        seed=seed,
        label=label,
    )


def time_users_to_distill(svc: Services) -> dict[str, Any]:
    """The nightly run's first query (which users have new fragments), over the whole store."""
    from bench.lib.project import ALL_TENANTS, distillation_store, get_engine, session_scope
    from shared.settings import Settings

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = get_engine(
        svc.database_url, pool_size=1, application_name="bench-sleep", role=settings.db_role_worker or None
    )
    progress("distill: users_to_distill over the store")
    t0 = time.perf_counter()
    with session_scope(engine, tenant=ALL_TENANTS) as db:
        users = distillation_store.users_to_distill(db)
    return {"seconds": round(time.perf_counter() - t0, 2), "users": len(users)}


def measure_distill_workers(svc: Services, *, tenant: str, users: int, deadline: float) -> dict[str, Any]:
    """One `memory.distill` task per user on a `celery worker -c 2`; the later users are only published when
    the rate of the first ones says they fit before `deadline`."""
    from shared import tasknames
    from shared.publisher import TaskPublisher

    queue = unique_name("bench-sleep-distill")
    out: dict[str, Any] = {"users": users, "fragments_per_user": FRAGMENTS_PER_USER, "concurrency": 2}
    worker = BenchWorker(worker_env(svc, queue), queue, svc.tmp / f"{queue}.log", 2).start()
    publisher = TaskPublisher(svc.redis_url, queue=queue, timeout_s=5.0)
    all_users = [user_id(u) for u in range(users)]
    first_wave = min(users, max(100, users // 10))
    published = 0
    try:
        pg0 = postgres_cpu_s(svc.postmaster_pid)
        t0 = time.monotonic()

        def publish(n: int) -> None:
            nonlocal published
            for u in all_users[published : published + n]:
                publisher.publish(tasknames.DISTILL, [None, tenant, u])
            published += n

        publish(first_wave)
        last, last_change, done = -1, time.monotonic(), 0
        with raw_connection(svc.database_url) as conn:
            while True:
                done = int(
                    conn.execute(
                        "SELECT count(*) FROM consolidation_runs WHERE tenant_id = %s AND "
                        "kind = 'distill' AND outcome <> 'running'",
                        (tenant,),
                    ).fetchone()[0]
                )
                now = time.monotonic()
                if done != last:
                    last, last_change = done, now
                progress(
                    f"distill: {done:,}/{published:,} users published done ({users:,} in all)", done, users
                )
                if published < users and done >= published * 0.5 and done:
                    rate = done / (now - t0)  # users/s
                    fits = int(rate * max(deadline - now, 0) * 0.9) + done
                    extra = max(0, min(users, fits) - published)
                    if extra:
                        publish(extra)
                    elif done >= published:
                        out["cut"] = (
                            f"{users - published:,} users not published: the budget would not hold them"
                        )
                        users = published
                if done >= published and published >= users:
                    break
                if now > deadline + 30 or now - last_change > STALL_S or not worker.alive():
                    out["incomplete"] = (
                        "budget" if now > deadline + 30 else ("stalled" if worker.alive() else "died")
                    )
                    out["worker_log_tail"] = worker.log_tail()
                    break
                time.sleep(0.25)
            wall = time.monotonic() - t0
            pg1 = postgres_cpu_s(svc.postmaster_pid)
            agg = conn.execute(
                "SELECT count(*), sum((counts->>'clusters')::int), sum((counts->>'consolidated')::int), "
                "sum((counts->>'created')::int), count(*) FILTER (WHERE outcome = 'error'), "
                "extract(epoch FROM max(finished_at) - min(started_at)) FROM consolidation_runs "
                "WHERE tenant_id = %s AND kind = 'distill'",
                (tenant,),
            ).fetchone()
    finally:
        stats = worker.stop()
        publisher.close()
        drop_queue(svc.redis_url, queue, tenant=tenant)
    runs, clusters, consolidated, created, errors, span = agg
    fragments = int(runs or 0) * FRAGMENTS_PER_USER
    out.update(
        users_published=published,
        users_done=int(runs or 0),
        wall_s=round(wall, 1),
        runs_span_s=round(float(span or 0), 1),
        fragments=fragments,
        fragments_per_s=round(fragments / wall, 1) if wall else None,
        users_per_s=round(int(runs or 0) / wall, 2) if wall else None,
        clusters=int(clusters or 0),
        consolidated=int(consolidated or 0),
        created=int(created or 0),
        errors=int(errors or 0),
        cpu_ms_per_user={
            "worker_main": _per(cpu_since_start(stats, "main"), runs),
            "pool_children": _per(cpu_since_start(stats, "child"), runs),
            "postgres": _per(pg1 - pg0, runs) if pg0 is not None and pg1 is not None else None,
        },
    )
    if out["fragments_per_s"]:
        out["projected_full_s"] = round(DISTILL_USERS[False] * FRAGMENTS_PER_USER / out["fragments_per_s"])
    return out


def _per(cpu_s: float, n: Any) -> float | None:
    return round(cpu_s * 1000 / int(n), 1) if n else None


def probe_distill(svc: Services, *, seed: int) -> dict[str, Any]:
    """In-process `distill_user` on PROBE_USERS users: the pieces timed, and cProfile's top functions."""
    from bench.lib.project import (
        cluster,
        consolidate,
        distillation,
        distillation_store,
        get_engine,
        lock_user,
        session_scope,
    )
    from shared.settings import Settings

    tenant = unique_name("t-sleep-probe")
    # the first PROBE_USERS users are timed, the next PROBE_USERS profiled (a user distills only once)
    load_fragments_store(svc, tenant=tenant, users=2 * PROBE_USERS, seed=seed + 5, label="distill probe")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = get_engine(
        svc.database_url,
        pool_size=1,
        application_name="bench-sleep-probe",
        role=settings.db_role_worker or None,
    )
    emb = embedder()
    pieces: dict[str, list[int]] = {
        "load_fragments": [],
        "cluster": [],
        "consolidate (pure)": [],
        "distill_user (whole)": [],
    }
    sql_ms: dict[str, float] = {}
    profiler = cProfile.Profile()
    created = 0
    clock = time.perf_counter_ns
    for i in range(PROBE_USERS):
        user = user_id(i)
        with session_scope(engine, tenant=tenant) as db:
            t0 = clock()
            frags = distillation_store.load_fragments(db, tenant, user)
            t1 = clock()
            groups = cluster(frags)
            t2 = clock()
            for g in groups:
                consolidate(g)
            t3 = clock()
            pieces["load_fragments"].append(t1 - t0)
            pieces["cluster"].append(t2 - t1)
            pieces["consolidate (pure)"].append(t3 - t2)
            db.rollback()
        with capture_statements(engine) as seen, session_scope(engine, tenant=tenant) as db:
            lock_user(db, tenant, user)
            t4 = clock()
            result = distillation.distill_user(
                db,
                tenant,
                user,
                embedder=emb,
                llm=None,
                now=NOW,
                actor="bench-probe",
                new_since=None,
                token_cap=0,
            )
            pieces["distill_user (whole)"].append(clock() - t4)
            created += result.created
        for c in seen:
            key = _distill_kind(c.statement)
            sql_ms[key] = sql_ms.get(key, 0.0) + c.duration_ms
    for i in range(PROBE_USERS, 2 * PROBE_USERS):
        user = user_id(i)
        with session_scope(engine, tenant=tenant) as db:
            lock_user(db, tenant, user)
            profiler.enable()
            distillation.distill_user(
                db,
                tenant,
                user,
                embedder=emb,
                llm=None,
                now=NOW,
                actor="bench-probe",
                new_since=None,
                token_cap=0,
            )
            profiler.disable()
    return {
        "users": PROBE_USERS,
        "fragments_per_user": FRAGMENTS_PER_USER,
        "created": created,
        "pieces_ms": {k: summary_ms(v) for k, v in pieces.items()},
        "sql_ms_per_user": {
            k: round(v / PROBE_USERS, 2) for k, v in sorted(sql_ms.items(), key=lambda kv: -kv[1])
        },
        "profile_top_tottime_ms_per_user": [
            {"function": function, "ms": round(own_s * 1000 / PROBE_USERS, 2)}
            for function, own_s, _ in top_own_time(profiler)
        ],
    }


def _distill_kind(sql: str) -> str:
    s = " ".join(sql.split())
    if "INSERT INTO memories" in s and "status = 'consolidated'" in s:
        return "new memories + fragments consolidated (one statement)"
    for key, label in (
        ("INSERT INTO memories", "insert consolidated memory"),
        ("INSERT INTO memory_history", "history rows"),
        ("SET status = 'consolidated'", "mark fragments consolidated"),
        ("embedding::text", "load fragments"),
        ("FROM memories WHERE id", "snapshots"),
        ("pg_advisory_xact_lock", "advisory lock"),
        ("set_config", "tenant"),
    ):
        if key in s:
            return label
    return "other"


# --- the LLM path -----------------------------------------------------------------------------------------

_FRAGMENT_LINE = re.compile(r"^\[([0-9a-f-]{36})\] \((\w+)/(\w+)\) (.*)$")


def merge_responder(body: dict[str, Any]) -> str:
    """The fake LLM's answer to a distillation prompt: one memory per cluster, covering all of it, written
    as the longest fragment plus the distinct details of the others (clipped), like a real rewrite."""
    prompt = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
    clusters: list[list[tuple[str, str, str, str]]] = []
    for line in prompt.splitlines():
        if line.startswith("## Cluster"):
            clusters.append([])
            continue
        m = _FRAGMENT_LINE.match(line)
        if m and clusters:
            clusters[-1].append((m.group(1), m.group(2), m.group(3), m.group(4)))
    memories = []
    for members in clusters:
        if len(members) < 2:
            continue
        main = max(members, key=lambda x: len(x[3]))
        others = sorted({x[3] for x in members if x[3] != main[3]})[:3]
        content = main[3] + ("; also: " + "; ".join(o[:60] for o in others) if others else "")
        memories.append(
            {"content": content, "kind": main[1], "category": main[2], "covers": [x[0] for x in members]}
        )
    return json.dumps({"memories": memories})


def measure_llm(svc: Services, *, users: int, seed: int) -> dict[str, Any]:
    from bench.lib.project import LLMConfig, OpenAIClient, distillation, get_engine, lock_user, session_scope
    from shared.settings import Settings
    from tests.fakes.openai_server import FakeOpenAI

    tenant = unique_name("t-sleep-llm")
    load_fragments_store(svc, tenant=tenant, users=users, seed=seed + 9, label="LLM distillation store")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = get_engine(
        svc.database_url,
        pool_size=1,
        application_name="bench-sleep-llm",
        role=settings.db_role_worker or None,
    )
    emb = embedder()
    totals = {"clusters": 0, "consolidated": 0, "created": 0, "tokens": 0, "errors": 0}
    per_user_ms: list[int] = []
    with FakeOpenAI() as fake:
        fake.default_responder = merge_responder
        llm = OpenAIClient(
            LLMConfig(base_url=fake.base_url, api_key="bench", model="fake-chat", timeout_s=30)
        )
        for i in range(users):
            user = user_id(i)
            t0 = time.perf_counter_ns()
            with session_scope(engine, tenant=tenant) as db:
                lock_user(db, tenant, user)
                r = distillation.distill_user(
                    db,
                    tenant,
                    user,
                    embedder=emb,
                    llm=llm,
                    now=NOW,
                    actor="bench-llm",
                    new_since=None,
                    token_cap=settings.distill_token_cap,
                )
            per_user_ms.append(time.perf_counter_ns() - t0)
            for k in ("clusters", "consolidated", "created", "tokens"):
                totals[k] += getattr(r, k)
            totals["errors"] += len(r.errors)
            if i % 20 == 0:
                progress(f"LLM distillation: {i}/{users} users", i, users)
        calls, prompt, completion = len(fake.calls), fake.prompt_tokens, fake.completion_tokens
    created = totals["created"]
    return {
        "users": users,
        "fragments": users * FRAGMENTS_PER_USER,
        **totals,
        "calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "tokens_per_consolidated_memory": round((prompt + completion) / created, 1) if created else None,
        "prompt_tokens_per_consolidated_memory": round(prompt / created, 1) if created else None,
        "tokens_per_fragment_merged": round((prompt + completion) / totals["consolidated"], 1)
        if totals["consolidated"]
        else None,
        "per_user_ms": summary_ms(per_user_ms),
    }


# --- the benchmark ----------------------------------------------------------------------------------------


def run(budget_s: float, quick: bool) -> dict[str, Any]:
    budget_s = min(budget_s, OWN_LIMIT_S[quick])
    started = time.monotonic()
    deadline = started + budget_s
    seed = 20261102
    figures: dict[str, Any] = {"budget_s": budget_s}
    skipped: list[str] = []
    with services() as svc:
        figures["services"] = svc.description
        n = PRUNE_MEMORIES[quick]
        figures["prune_store"] = load_prune_store(svc, n=n, seed=seed)
        figures["prune"] = measure_prune(svc)
        with raw_connection(svc.database_url) as conn:  # the distillation runs on its own data
            conn.execute("TRUNCATE memories, memory_history, tenants CASCADE")
            conn.execute("VACUUM memories")
        tenant = unique_name("t-sleep-distill")
        users = DISTILL_USERS[quick]
        defs = drop_secondary_indexes(svc.database_url)  # the HNSW index is already absent (see above)
        load = load_fragments_store(svc, tenant=tenant, users=users, seed=seed, label="distill store")
        load["indexes"] = rebuild_indexes(svc.database_url, defs, label="distill store indexes")
        figures["distill_store"] = load
        figures["users_to_distill"] = time_users_to_distill(svc)
        llm_reserve = 60 + LLM_USERS[quick] * 0.5
        figures["distill"] = measure_distill_workers(
            svc, tenant=tenant, users=users, deadline=deadline - llm_reserve - 60
        )
        figures["distill_probe"] = probe_distill(svc, seed=seed)
        if deadline - time.monotonic() > 30:
            figures["llm"] = measure_llm(svc, users=LLM_USERS[quick], seed=seed)
        else:
            skipped.append("LLM distillation: budget")
    return report.result("sleep", quick, figures, skipped, started=started, targets=TARGETS, blocks=SECTION)


# --- targets and the report -------------------------------------------------------------------------------


def _prune_note(f: dict[str, Any]) -> str:
    p = f.get("prune")
    n = f.get("prune_store", {}).get("rows", {}).get("memories")
    note = f"{n:,} memories" if n else "not measured"
    if n and n < 1_000_000:
        note += "; target is at 1,000,000"
    if p and p["purge"].get("error"):
        note += f"; purge cancelled at {PURGE_TIMEOUT_S:g} s, so a lower bound"
    return note


TARGETS = (Target("prune + purge", "prune.total_s", "<=", TARGET_PRUNE_S, "s", _prune_note),)


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return report.evaluate(TARGETS, figures)


def _prune(f: dict[str, Any]) -> dict[str, Any] | None:
    return {**f["prune"], "store": f["prune_store"]} if f.get("prune") and f.get("prune_store") else None


def _prune_text(p: dict[str, Any]) -> str:
    s = p["store"]
    r, t = s["rows"], s["timings"]
    return f"""Store: {r["memories"]:,} memories over {s["tenants"]} tenants x 10,000 users ({r["active"]:,}
        active, {r["archived"]:,} archived by earlier runs, {r["pinned"]:,} pinned, {r["with_ttl"]:,} with a
        TTL), {r["history"]:,} history rows; last confirmation ages exponential (mean 60 days), kinds from
        the template grammar (semantic never decays; episodic 30 days, 14 in one tenant's settings;
        procedural 90 days). Table {s["sizes_mb"].get("memories (heap + toast)")} MB. Built in
        {t["load_s"]} s (+ history {t["history_s"]} s, indexes {t["indexes"]["total_s"]} s, VACUUM ANALYZE
        {t["vacuum_s"]} s); the HNSW index is left out (see the module docstring). `now` = {p["now"]},
        retention {p["retention_days"]:g} days; worker role, all-tenant scope, one transaction per function
        as the tasks run them."""


def _steps(p: dict[str, Any]) -> list[dict[str, Any]]:
    names = {"prune": "`prune`", "purge": "`purge`", "prune_again": "`prune` again, same `now` (no-op)"}
    return [{**p[key], "name": name} for key, name in names.items()]


STEPS_TABLE = Table(
    (
        Column("step", lambda x: x["name"] + (f" ({x['error']})" if x.get("error") else "")),
        Column("seconds (incl. commit)", "seconds"),
        Column("commit s", "commit_s"),
        Column("rows", lambda x: ", ".join(f"{k} {v:,}" for k, v in x["counts"].items()) or "none"),
        Column(
            "statements (ms)",
            lambda x: "; ".join(f"{st['statement']} {st['ms']:,}" for st in x["statements"]),
        ),
    ),
    _steps,
)


def _purge_probe_text(p: dict[str, Any]) -> str | None:
    few = p.get("purge_probe") or {}
    if not few.get("plan"):
        return None
    return f"""Where purge's time goes: {few["eligible"]:,} rows were due for purging. Its statement under
        EXPLAIN ANALYZE on the {few["probe_rows"]} oldest of them (cutoff moved back, rolled back), before
        the real run:"""


def _purge_index_text(p: dict[str, Any]) -> str | None:
    idx = p.get("purge_with_index") or {}
    if not idx.get("plan"):
        return None
    counts = ", ".join(f"{k} {v:,}" for k, v in idx.get("counts", {}).items())
    done = (
        f"the whole purge then took {idx['purge_s']} s ({counts})"
        if "purge_s" in idx
        else "the whole purge did not finish"
    )
    return f"""The same with an index on `memories (superseded_by)` created inside a rolled-back transaction
        (build {idx["index_build_s"]} s): {done}, with {idx["eligible"]:,} rows due. Plan on the same oldest
        rows:"""


PRUNE_SECTION = Section(
    "Prune and purge",
    (
        Text(_prune_text),
        STEPS_TABLE,
        Text(
            lambda p: (
                f"prune + purge: **{p['total_s']} s**"
                + (" (lower bound: purge cancelled)." if p["purge"].get("error") else ".")
            )
        ),
        Text(_purge_probe_text),
        Code("purge_probe.plan"),
        Text(_purge_index_text),
        Code("purge_with_index.plan"),
        Text(
            lambda p: (
                "EXPLAIN ANALYZE of the no-op prune (what the scan alone costs):"
                if p.get("plans_noop")
                else None
            )
        ),
        Each("plans_noop", (Code("plan"),)),
    ),
    data=_prune,
)


def _distill(f: dict[str, Any]) -> dict[str, Any] | None:
    return (
        {**f["distill"], "store": f.get("distill_store"), "probe": f.get("distill_probe")}
        if f.get("distill")
        else None
    )


def _distill_text(d: dict[str, Any]) -> str:
    load = d["store"]
    loaded = load["generate_copy_s"] + load["insert_select_s"] if load else "n/a"
    return f"""{d["users"]:,} users x {d["fragments_per_user"]} fragments (active, unslotted, hashing-embedded
        template sentences; loaded in {loaded} s); one `memory.distill` task per user published by name to a
        real `celery worker -c {d["concurrency"]}`, no LLM configured. Wall time from the first publish to
        the last run record finished. The HNSW index is absent from this store (it would add one graph insert
        per consolidated memory)."""


def _distill_projection(d: dict[str, Any]) -> str | None:
    full = f"{DISTILL_USERS[False]:,} users x {FRAGMENTS_PER_USER}"
    if d.get("cut") or d.get("incomplete"):
        return (
            f"**Partial: {d.get('cut') or d.get('incomplete')}.** At the measured rate the full {full} would "
            f"take about {fmt(d.get('projected_full_s'))} s."
        )
    if d.get("projected_full_s"):
        return f"At this rate {full} fragments take about {d['projected_full_s']:,} s."
    return None


def _distill_probe_text(d: dict[str, Any]) -> str | None:
    probe = d["probe"]
    if not probe:
        return None
    pieces = probe["pieces_ms"]
    sql = ", ".join(f"{k} {v}" for k, v in probe["sql_ms_per_user"].items())
    top = ", ".join(f"`{x['function']}` {x['ms']}" for x in probe["profile_top_tottime_ms_per_user"][:6])
    return f"""Where the time goes, in-process on {probe["users"]} more users (worker role, one user per
        transaction): per user p50 `load_fragments` {pieces["load_fragments"]["p50_ms"]:.1f} ms, `cluster`
        {pieces["cluster"]["p50_ms"]:.1f} ms, the pure rewrites {pieces["consolidate (pure)"]["p50_ms"]:.2f}
        ms; the whole `distill_user` (with its writes) {pieces["distill_user (whole)"]["p50_ms"]:.1f} ms. SQL
        per user (client wall ms): {sql}. Top own time (cProfile over `distill_user` of {probe["users"]}
        other users, ms per user, profiler overhead included): {top}."""


def _cpu(per: dict[str, Any]) -> str:
    return " / ".join(fmt(per[k]) for k in ("worker_main", "pool_children", "postgres"))


DISTILL_SECTION = Section(
    "Nightly distillation, deterministic path",
    (
        Text(_distill_text),
        Table(
            (
                Column("users done", lambda d: f"{d['users_done']:,} of {d['users']:,}"),
                Column("fragments", "fragments", ","),
                Column("wall s", "wall_s"),
                Column("fragments/s", "fragments_per_s"),
                Column("users/s", "users_per_s"),
                Column("clusters", "clusters", ","),
                Column("fragments consolidated", "consolidated", ","),
                Column("memories created", "created", ","),
                Column("errors", "errors"),
                Column("CPU ms/user: worker main / pool / postgres", lambda d: _cpu(d["cpu_ms_per_user"])),
            ),
            lambda d: [d],
        ),
        Text(_distill_projection),
        Text(_distill_probe_text),
    ),
    data=_distill,
)

LLM_SECTION = Section(
    "Distillation with the LLM (fake server counting)",
    (
        Text(
            lambda r: (
                f"""{r["users"]} users x {FRAGMENTS_PER_USER} fragments, `distill_user` in-process with
            the LLM configured (one batched call per user: every cluster of the user in one prompt). The fake
            OpenAI-compatible server answers each cluster with one memory covering all its fragments; tokens
            as the server counts them (one per four characters, system prompt included)."""
            )
        ),
        Table(
            (
                Column("calls", "calls", ","),
                Column("clusters", "clusters", ","),
                Column("fragments merged", "consolidated", ","),
                Column("consolidated memories", "created", ","),
                Column("prompt tokens", "prompt_tokens", ","),
                Column("completion tokens", "completion_tokens", ","),
                Column("tokens / consolidated memory", "tokens_per_consolidated_memory"),
                Column("prompt tokens / consolidated memory", "prompt_tokens_per_consolidated_memory"),
                Column("tokens / fragment merged", "tokens_per_fragment_merged"),
                Column("errors", "errors"),
                Column("per-user p50 ms", "per_user_ms.p50_ms", ".1f"),
            ),
            lambda r: [r],
        ),
    ),
    data="llm",
)

SECTION = (
    Text(lambda f: f"Services: {f['services']}, on the same 2-core machine as the benchmark process."),
    PRUNE_SECTION,
    DISTILL_SECTION,
    LLM_SECTION,
)


def render_markdown(result: dict[str, Any]) -> str:
    return report.render(result, SECTION)
