"""The memory store benchmark: search latency at 100,000 and 1,000,000 memories, HNSW recall, reconciliation.

Contract: `run(budget_s, quick) -> dict` measures, never asserts, and returns
`{"name", "quick", "figures", "targets", "skipped", "markdown"}` like the other bench modules. Everything
runs on an isolated embedded PostgreSQL (or `DATABASE_URL`) from `bench.lib.services.services`.

- load: 10,000 users of one tenant, the synthetic corpus of `bench.lib.corpus` loaded by
  `bench.lib.db.load_store` with the secondary indexes of `memories` dropped and rebuilt after it (timed
  one by one: the HNSW build time is part of the report). Growing to 1,000,000 appends rows to the
  100,000 and rebuilds the indexes.
- latency: `store.search.search` (hybrid: query embedding, one candidates query for the vector
  and keyword lists, ranking) for k=10 and one random user per call, in-process, as the API's database role
  (row-level security on, the tenant set per transaction), ef_search = the setting's default; per-statement
  times, the plan (EXPLAIN ANALYZE of the statements one call runs) and which indexes the calls used
  (`pg_stat_user_indexes` deltas).
- recall (largest size): top-10 of the vector query as the planner runs it, and with the HNSW index
  forced (the b-tree indexes dropped inside a rolled-back transaction), against an exact scan; plus the
  index's recall without a user filter.
- reconciliation: candidates with status 'new' for many users (new facts, exact repeats of a stored
  memory, slot values that supersede each other) inserted set-based; `memory.reconcile_user` enqueued per
  user by name through `shared.publisher.TaskPublisher`; a real `celery worker -c 2`; candidates/s from
  the first publish to the last candidate reconciled.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from bench.lib import report
from bench.lib.capture import capture_statements, explain_statements, shorten, top_own_time
from bench.lib.corpus import DIM, NOW, WORDS, embedder, queries, sentence, user_id
from bench.lib.db import (
    GEN_BATCH,
    GEN_PROCESSES,
    HNSW_BUILD_MEM,
    HNSW_INDEX,
    drop_secondary_indexes,
    index_scans,
    load_store,
    raw_connection,
    rebuild_indexes,
    relation_sizes,
    server_facts,
)
from bench.lib.processes import BenchWorker, cpu_since_start, postgres_cpu_s
from bench.lib.progress import progress
from bench.lib.report import Code, Column, Each, Section, Table, Target, Text, fmt
from bench.lib.services import Services, drop_queue, services, unique_name, worker_env
from bench.lib.stats import percentile, summary_ms

USERS = 10_000
SIZES = {True: (100_000,), False: (100_000, 1_000_000)}
LATENCY_QUERIES = {True: 1_000, False: 2_000}
LATENCY_WARMUP = 100
PROFILE_CALLS = 300
K = 10
RECALL_QUERIES = 200
GLOBAL_RECALL_QUERIES = 20
RECONCILE_USERS = {True: 400, False: 1_000}
RECONCILE_PER_USER = 5
OWN_LIMIT_S = {True: 480.0, False: 1500.0}
STALL_S = 90.0

TARGET_P95_MS = 15.0
ANCHORS = "mem0 paper: 148 / 200 ms p50 / p95; Zep: 87 / 155 ms (search as published, network included)"


# --- search latency ---------------------------------------------------------------------------------------


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


def _search(db: Any, *, tenant: str, user: str, query: str, ef_search: int, emb: Any = None) -> list[Any]:
    from bench.lib import project

    return list(
        project.search(
            db,
            tenant_id=tenant,
            user_id=user,
            query=query,
            k=K,
            embedder=emb or embedder(),
            now=NOW,
            ef_search=ef_search,
        )
    )


def _api_engine(url: str) -> tuple[Any, int]:
    """An engine acting as the API's role, and the HNSW ef_search the API searches with."""
    from bench.lib import project
    from shared.settings import Settings

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = project.get_engine(
        url, pool_size=1, application_name="bench-store", role=settings.db_role_api or None
    )
    return engine, settings.hnsw_ef_search


def _default_query_embedder() -> Any | None:
    """The embedder `MEMORY_EMBEDDER=auto` gives the API on this machine, when it is not the hashing one."""
    from shared.settings import default_embedder
    from store.embeddings import make_embedder

    name = default_embedder()
    return None if name == "hashing" else make_embedder(name, dim=DIM)


def measure_default_embedder(
    url: str, *, tenant: str, users: int, n: int, seed: int
) -> dict[str, Any] | None:
    """`search()` latency with the query embedded by the default embedder (issue #18: <= 15 ms at 1,000,000
    memories), alternated query by query with the hashing embedder's in the same process. The stored vectors are
    the hashing embedder's (embedding a million rows with a transformer is hours here): the per-user plan reads
    the same ~100 rows whatever the vectors, so the difference between the two is the query embedding."""
    from sqlmodel import Session

    from bench.lib import project

    default = _default_query_embedder()
    if default is None:
        return None
    engine, ef = _api_engine(url)
    qs = queries(seed + 7, n + LATENCY_WARMUP, users)
    timings: dict[str, list[int]] = {"default": [], "hashing": []}
    embed_ns: list[int] = []
    clock = time.perf_counter_ns
    for i, (user, q) in enumerate(qs):
        pair = [("default", default), ("hashing", embedder())]
        order = pair if i % 2 else pair[::-1]
        for name, emb in order:
            with Session(engine) as db:
                project.set_tenant(db, tenant)
                t0 = clock()
                _search(db, tenant=tenant, user=user, query=q, ef_search=ef, emb=emb)
                t1 = clock()
                db.commit()
            if i >= LATENCY_WARMUP:
                timings[name].append(t1 - t0)
        t = clock()
        default.embed_query(q)
        if i >= LATENCY_WARMUP:
            embed_ns.append(clock() - t)
        if i % 200 == 0:
            progress(f"search with the default embedder: {i - LATENCY_WARMUP:,}/{n:,}", i, n + LATENCY_WARMUP)
    engine.dispose()
    return {
        "embedder": default.name if hasattr(default, "name") else type(default).__name__,
        "queries": n,
        "search": summary_ms(timings["default"]),
        "search_hashing": summary_ms(timings["hashing"]),
        "embed_query": summary_ms(embed_ns),
    }


def measure_search(url: str, *, tenant: str, users: int, n: int, seed: int) -> dict[str, Any]:
    """Latency of `search()` (k=10, per-user filter, query embedding included) as the API role."""
    from sqlmodel import Session

    from bench.lib import project

    engine, ef = _api_engine(url)
    emb = embedder()
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
                project.set_tenant(db, tenant)
                t1 = clock()
                hits = _search(db, tenant=tenant, user=user, query=q, ef_search=ef)
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
        project.set_tenant(db, tenant)
        _search(db, tenant=tenant, user=user, query=q, ef_search=ef)
        db.rollback()
    plans = explain_statements(engine, [c for c in seen if "set_config" not in c.statement], tenant=tenant)
    profile = _profile_search(engine, tenant=tenant, qs=qs[:PROFILE_CALLS], ef_search=ef)

    def ms(values: list[float]) -> dict[str, float]:
        return summary_ms([int(v * 1e6) for v in values])

    return {
        "queries": n,
        "warmup": LATENCY_WARMUP,
        "ef_search": ef,
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

    from sqlmodel import Session

    from bench.lib import project

    profiler = cProfile.Profile()
    for user, q in qs:
        with Session(engine) as db:
            project.set_tenant(db, tenant)
            profiler.enable()
            _search(db, tenant=tenant, user=user, query=q, ef_search=ef_search)
            profiler.disable()
            db.rollback()
    return [
        {"function": function, "ms_per_call": round(own_s * 1000 / len(qs), 3)}
        for function, own_s, _ in top_own_time(profiler)
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
    from bench.lib import project

    emb = embedder()
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
                f"AND NOT indisprimary AND indexrelid::regclass::text <> '{HNSW_INDEX}'"
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
                "v": project.vector_literal(emb.embed_query(q)),
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
            params = {"v": project.vector_literal(emb.embed_query(q)), "k": K}
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
            a, b = rng.sample(WORDS["city"], 2)
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
    svc: Services, *, tenant: str, users: int, n_users: int, per_user: int, seed: int, deadline: float
) -> dict[str, Any]:
    from shared import tasknames
    from shared.publisher import TaskPublisher

    rng = random.Random(f"rec-users:{seed}")
    chosen = [user_id(u) for u in rng.sample(range(users), n_users)]
    progress(f"reconcile: inserting {n_users * per_user:,} candidates")
    mix = insert_candidates(svc.database_url, tenant=tenant, users=chosen, per_user=per_user, seed=seed)
    total = sum(mix.values())
    queue = unique_name("bench-store-rec")
    out: dict[str, Any] = {"users": n_users, "candidates": total, "mix": mix, "concurrency": 2}
    worker = BenchWorker(worker_env(svc, queue), queue, svc.tmp / f"{queue}.log", 2).start()
    publisher = TaskPublisher(svc.redis_url, queue=queue, timeout_s=5.0)
    try:
        pg0 = postgres_cpu_s(svc.postmaster_pid)
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
            pg1 = postgres_cpu_s(svc.postmaster_pid)
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
        drop_queue(svc.redis_url, queue, tenant=tenant)
    done = total - left
    out.update(
        reconciled=done,
        wall_s=round(wall, 2),
        publish_s=round(publish_s, 3),
        candidates_per_s=round(done / wall, 1) if wall else None,
        decisions={str(k): int(v) for k, v in decisions.items()},
        cpu_ms_per_candidate={
            "worker_main": _per(cpu_since_start(stats, "main"), done),
            "pool_children": _per(cpu_since_start(stats, "child"), done),
            "postgres": _per(pg1 - pg0, done) if pg0 is not None and pg1 is not None else None,
        },
    )
    return out


def _per(cpu_s: float, n: int) -> float | None:
    return round(cpu_s * 1000 / n, 2) if n else None


def probe_reconcile(url: str, *, tenant: str, users: int, seed: int, n_users: int = 40) -> dict[str, Any]:
    """In-process: one `reconcile_user` per user (worker role), statements timed by kind."""
    from bench.lib import project
    from shared.settings import Settings

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = project.get_engine(
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
            with project.session_scope(engine, tenant=tenant) as db:
                counts = project.reconcile_user(
                    db, tenant, user, embedder=embedder(), policy=project.Policy(), actor="bench", now=NOW
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
    with services() as svc:
        tenant = unique_name("t-store")
        figures["services"] = svc.description
        figures["server"] = server_facts(svc.database_url)
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
            if last:
                entry["default_embedder"] = measure_default_embedder(
                    svc.database_url, tenant=tenant, users=USERS, n=LATENCY_QUERIES[quick], seed=seed + size
                )
            figures["sizes"].append(entry)
        if figures["sizes"]:
            last_entry = figures["sizes"][-1]
            if deadline - time.monotonic() > 120:
                last_entry["recall"] = measure_recall(
                    svc.database_url,
                    tenant=tenant,
                    users=USERS,
                    n=RECALL_QUERIES,
                    n_global=GLOBAL_RECALL_QUERIES,
                    seed=seed,
                    ef_search=last_entry["latency"]["ef_search"],
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
    return report.result(
        "store", quick, figures, skipped, started=started, targets=target_table, blocks=SECTION
    )


# --- targets and the report -------------------------------------------------------------------------------


def target_table(figures: dict[str, Any]) -> list[Target]:
    """The 1,000,000-memory target, after a reference row for each smaller size measured."""

    def p95_at(size: int) -> Callable[[dict[str, Any]], float | None]:
        def read(f: dict[str, Any]) -> float | None:
            return next((e["latency"]["search"]["p95_ms"] for e in f["sizes"] if e["memories"] == size), None)

        return read

    sizes = sorted(e["memories"] for e in figures["sizes"])
    measured = 1_000_000 in sizes
    out = [
        Target(
            f"search p95, k=10, {size:,} memories (no target at this size)",
            p95_at(size),
            "<=",
            TARGET_P95_MS,
            "ms",
            reference=True,
        )
        for size in sizes
        if size != 1_000_000
    ]
    out.append(
        Target(
            "search p95, k=10, per-user filter, 1,000,000 memories / 10,000 users",
            p95_at(1_000_000),
            "<=",
            TARGET_P95_MS,
            "ms",
            "query embedding included" if measured else "not measured",
        )
    )

    def default_at_1m(f: dict[str, Any]) -> dict[str, Any] | None:
        entry = next((e for e in f["sizes"] if e["memories"] == 1_000_000), None)
        return entry.get("default_embedder") if entry else None

    def default_p95(f: dict[str, Any]) -> float | None:
        measured = default_at_1m(f)
        return measured["search"]["p95_ms"] if measured else None

    def default_note(f: dict[str, Any]) -> str:
        measured = default_at_1m(f)
        if not measured:
            return "not measured (the default embedder here is hashing, or no 1,000,000 run)"
        return (
            f"the query embedded by {measured['embedder']} (p95 {measured['embed_query']['p95_ms']} ms of it), "
            f"alternated with hashing's {measured['search_hashing']['p95_ms']} ms; stored vectors hashing's"
        )

    out.append(
        Target(
            "search p95 with the default embedder, 1,000,000 memories (issue #18)",
            default_p95,
            "<=",
            TARGET_P95_MS,
            "ms",
            default_note,
        )
    )
    return out


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return report.evaluate(target_table(figures), figures)


def _anchors(f: dict[str, Any]) -> str:
    srv = f.get("server", {})
    return f"""Anchors: {ANCHORS}. Services: {f["services"]}, PostgreSQL {srv.get("server_version")},
        pgvector {srv.get("pgvector")}, shared_buffers {srv.get("shared_buffers")}; everything on the
        same 2-core machine as the benchmark process. Data: {USERS:,} users of one tenant; memory i
        belongs to user i mod {USERS:,}; synthetic sentences from a template grammar (12 templates,
        ~200 slot words; 1 in 12 Chinese), embedded by the hashing embedder (384-dim) in Python batches
        of {GEN_BATCH:,} in {GEN_PROCESSES} processes, binary COPY into an unlogged staging table, one
        INSERT ... SELECT into `memories` (tsvector built in SQL) with the secondary indexes dropped,
        then the indexes rebuilt from their own definitions (maintenance_work_mem {HNSW_BUILD_MEM}, one
        parallel maintenance worker); the HNSW index only at the largest size (per-user queries do not
        use it: see the plans), so smaller sizes show n/a there. All rows active."""


def _other_index_s(e: dict[str, Any]) -> float:
    secs = e["indexes"]["seconds"]
    return round(sum(v for k, v in secs.items() if k not in (HNSW_INDEX, "ANALYZE memories")), 1)


def _notices(sizes: list[dict[str, Any]]) -> str | None:
    notices = [n for e in sizes for n in e["indexes"]["notices"]]
    return (
        "Server notices during the builds: " + "; ".join(f"`{n}`" for n in notices[:4]) if notices else None
    )


LOAD_TABLE = Table(
    (
        Column("memories", "memories", ","),
        Column("rows added", "load.rows_added", ","),
        Column("generate + COPY s", "load.generate_copy_s"),
        Column("INSERT ... SELECT s", "load.insert_select_s"),
        Column("rows/s", "load.rows_per_s", ","),
        Column("HNSW build s", f"indexes.seconds.{HNSW_INDEX}"),
        Column("other indexes s", _other_index_s),
        Column("ANALYZE s", "indexes.seconds.ANALYZE memories"),
        Column("table MB", "sizes_mb.memories (heap + toast)"),
        Column("HNSW MB", f"sizes_mb.{HNSW_INDEX}"),
    )
)


def _p(summary: dict[str, Any], *qs: int) -> str:
    return " / ".join(f"{summary[f'p{q}_ms']:.2f}" for q in qs)


def _statements_per_call(la: dict[str, Any]) -> str:
    """Statements per transaction, by kind ("1 candidates query, 1 set_config (tenant)")."""
    parts = [f"{v['per_call']:g} {k}" for k, v in la["statements"].items() if "per_call" in v]
    return ", ".join(parts) or "n/a"


def _candidates_query(la: dict[str, Any]) -> str:
    cq = la["statements"].get("candidates query", {})
    return f"{fmt(cq.get('p50_ms'), '.2f')} / {fmt(cq.get('p95_ms'), '.2f')}"


def _indexes_used(la: dict[str, Any]) -> str:
    return ", ".join(f"`{k}` {v:,}" for k, v in sorted(la["index_scans"].items(), key=lambda kv: -kv[1]))


LATENCY_TABLE = Table(
    (
        Column("memories", "memories", ","),
        Column("calls", "latency.queries", ","),
        Column("search p50 / p95 / p99 ms", lambda e: _p(e["latency"]["search"], 50, 95, 99)),
        Column("transaction p50 / p95 / p99 ms", lambda e: _p(e["latency"]["transaction"], 50, 95, 99)),
        Column("embed p50 ms", "latency.embed_query.p50_ms", ".3f"),
        Column("candidates query p50 / p95 ms", lambda e: _candidates_query(e["latency"])),
        Column("statements/call", lambda e: _statements_per_call(e["latency"])),
        Column("hits/call", "latency.mean_hits"),
        Column("indexes used (scans)", lambda e: _indexes_used(e["latency"])),
    )
)

SEARCH_INTRO = f"""In-process calls of `store.search.search` (what `POST /v1/search` runs after authentication)
    as the API's database role, row-level security on: query embedding (hashing), the candidates query (one
    statement: the 40 nearest by vector, the keyword matches and their BM25 statistics; the HNSW settings
    come with the pooled connection), ranking. `search()` = that call; transaction = session +
    `set_config` of the tenant + search + commit. One random user and one synthetic query per call,
    {LATENCY_WARMUP} warm-up calls first. Pieces are per-statement wall times seen by the client."""

_PATHS = {
    "planner": "as the planner runs it (`hnsw.iterative_scan = relaxed_order`)",
    "hnsw_forced": "HNSW index forced (b-trees dropped in a rolled-back transaction, seqscan off)",
}


def _recall(f: dict[str, Any]) -> dict[str, Any] | None:
    last = f["sizes"][-1] if f["sizes"] else {}
    return {**last["recall"], "memories": last["memories"]} if last.get("recall") else None


def _recall_rows(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every path measured: its recall@10, mean rows returned, queries with < 10 rows, p50 ms."""
    rows = [
        {
            "path": _PATHS[name],
            "recall": f"{100 * r['recall_at_10']:.1f} %",
            "returned": r["mean_returned"],
            "short": r["short_answers"],
            "p50_ms": r["p50_ms"],
        }
        for name, r in rec["filtered"].items()
    ]
    rows.append({"path": "exact (reference)", "recall": "100 %", "p50_ms": rec["exact_p50_ms"]})
    rows += [
        {
            "path": f"no user filter, HNSW {name}",
            "recall": f"{100 * r['recall_at_10']:.1f} %",
            "p50_ms": r["p50_ms"],
        }
        for name, r in rec["global"].items()
    ]
    rows.append(
        {"path": "no user filter, exact full scan", "recall": "100 %", "p50_ms": rec["global_exact_p50_ms"]}
    )
    return rows


RECALL_SECTION = Section(
    lambda r: f"Recall of the vector query at {r['memories']:,} memories",
    (
        Text(
            lambda r: (
                f"""Top-10 of the vector query (per-user filter, status active) against an exact scan
            of the same user's rows (b-tree bitmap scan, exact sort), {r["queries"]} queries; and, without
            the user filter, the index against a full scan, {r["global_queries"]} queries."""
            )
        ),
        Table(
            (
                Column("path", "path"),
                Column("recall@10", "recall"),
                Column("mean rows returned", lambda row: row.get("returned", "-")),
                Column("queries with < 10 rows", lambda row: row.get("short", "-")),
                Column("p50 ms", "p50_ms"),
            ),
            _recall_rows,
        ),
        Each(
            lambda r: [(label, r["plans"][name]) for name, label in _PATHS.items() if r["plans"].get(name)],
            (Text(lambda plan: f"Plan, {plan[0]}:"), Code(lambda plan: plan[1])),
        ),
    ),
    data=_recall,
)


def _cpu(per: dict[str, Any]) -> str:
    return " / ".join(fmt(per[k]) for k in ("worker_main", "pool_children", "postgres"))


def _reconcile(f: dict[str, Any]) -> dict[str, Any] | None:
    return {**f["reconcile"], "probe": f.get("reconcile_probe")} if f.get("reconcile") else None


def _probe_text(r: dict[str, Any]) -> str | None:
    probe = r["probe"]
    if not probe or not probe.get("candidates"):
        return None
    parts = ", ".join(f"{k} {v}" for k, v in probe["sql_ms_per_candidate"].items())
    return f"""In-process probe ({probe["candidates"]} candidates, one `reconcile_user` per user, worker
        role): {probe["ms_per_candidate"]} ms per candidate, of which SQL (client wall time per statement
        kind, ms per candidate): {parts}; Python (embedding, decisions, snapshots' JSON)
        {probe["python_ms_per_candidate"]} ms."""


RECONCILE_SECTION = Section(
    "Reconciliation throughput",
    (
        Text(
            lambda r: (
                f"""{r["candidates"]:,} candidates (status 'new') for {r["users"]:,} users of the
            {r["store_memories"]:,}-memory store, inserted in one statement; mix:
            {", ".join(f"{v:,} {k}" for k, v in r["mix"].items())}. `memory.reconcile_user` published once per
            user by name (`TaskPublisher`) to a real `celery worker -c {r["concurrency"]}` started
            beforehand; time from the first publish to no candidate left 'new'."""
            )
        ),
        Table(
            (
                Column("candidates", "candidates", ","),
                Column(
                    "reconciled",
                    lambda r: (
                        f"{r['reconciled']:,}" + (f" ({r['incomplete']})" if r.get("incomplete") else "")
                    ),
                ),
                Column("wall s", "wall_s"),
                Column("candidates/s", "candidates_per_s"),
                Column(
                    "decisions", lambda r: ", ".join(f"{k} {v:,}" for k, v in sorted(r["decisions"].items()))
                ),
                Column(
                    "CPU ms/candidate: worker main / pool / postgres",
                    lambda r: _cpu(r["cpu_ms_per_candidate"]),
                ),
            ),
            lambda r: [r],
        ),
        Text(_probe_text),
    ),
    data=_reconcile,
)


def _where(f: dict[str, Any]) -> str | None:
    """Where a `search()` call's time goes at the largest size."""
    if not f["sizes"]:
        return None
    e = f["sizes"][-1]
    la = e["latency"]
    st = la["statements"]
    cq = st.get("candidates query", {}).get("p50_ms")
    if cq is None:
        return None
    s, emb = la["search"], la["embed_query"]["p50_ms"]
    # statements inside search() other than the candidates query (the tenant's set_config precedes it)
    others = {
        k: v
        for k, v in st.items()
        if k not in ("candidates query", "set_config (tenant)") and v.get("p50_ms") is not None
    }
    other_ms = sum(v["p50_ms"] * v.get("per_call", 1) for v in others.values())
    listed = "".join(f"{k} {v['p50_ms'] * v.get('per_call', 1):.2f} ms, " for k, v in others.items())
    top = ", ".join(f"`{x['function']}` {x['ms_per_call']}" for x in la["profile_top_tottime"][:6])
    return f"""At {e["memories"]:,} memories a `search()` call takes {s["p50_ms"]:.2f} ms at p50: the
        candidates query (vector and keyword lists with the BM25 statistics, one statement) {cq:.2f} ms,
        {listed}embedding the query {emb:.3f} ms, and the rest (ranking, row objects, SQLAlchemy, psycopg)
        {s["p50_ms"] - cq - other_ms - emb:.2f} ms. The per-user filter reaches {e["per_user"]} rows per user;
        which index answered is in the table above (`pg_stat_user_indexes`). Top own time in `search()`
        (cProfile over {la["profile_calls"]} calls, ms per call, profiler overhead included): {top}."""


SECTION = (
    Text(_anchors),
    Section("Load and index build", (LOAD_TABLE, Text(_notices)), data="sizes"),
    Section(
        "Search latency (k=10, one user's memories)",
        (
            Text(SEARCH_INTRO),
            LATENCY_TABLE,
            Text(
                lambda sizes: (
                    f"""Plans at {sizes[-1]["memories"]:,} memories (EXPLAIN ANALYZE of one call's
                statements, replayed in a rolled-back transaction):"""
                )
            ),
            Each(
                lambda sizes: sizes[-1]["latency"]["plans"], (Code(lambda p: [p["statement"], *p["plan"]]),)
            ),
        ),
        data="sizes",
    ),
    RECALL_SECTION,
    RECONCILE_SECTION,
    Section("Where the time goes", (Text(_where),), data=lambda f: f if _where(f) else None),
)


def render_markdown(result: dict[str, Any]) -> str:
    return report.render(result, SECTION)
