"""Loading a synthetic store fast, and the index tooling around it (plain psycopg, the owner's role).

Contract:
- `raw_connection(url)` is a psycopg connection outside any engine (autocommit by default);
- `load_store(...)` appends memories [start, stop) of the corpus (`bench.lib.corpus.make_batch`) to one
  tenant: generated and embedded in GEN_PROCESSES spawned processes in batches of GEN_BATCH, streamed by
  binary COPY into an unlogged staging table, then moved by one INSERT ... SELECT into `memories` (and
  `memory_access` for the rows with accesses); returns phase timings;
- `drop_secondary_indexes` / `rebuild_indexes` drop every index but the primary key for a load and
  rebuild them from their own definitions, timed one by one (the HNSW build time is a figure);
- `relation_sizes` and `index_scans` read the sizes and the index usage of `memories`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import time
from collections.abc import Iterator, Sequence
from typing import Any

from bench.lib.corpus import DIM, NOW, ROW_FIELDS, Profile, make_batch
from bench.lib.progress import progress

GEN_BATCH = 5_000
GEN_PROCESSES = 2
HNSW_BUILD_MEM = "3GB"
HNSW_INDEX = "ix_memories_embedding"
# each `memories` column the load fills, and the SQL over a staging row (`src`) that fills it; the names are
# checked against the store's model (`store.models.MEMORY_COLUMNS`) when a load starts
_LOAD_COLUMNS = {
    "id": "id",
    "tenant_id": "%(t)s",
    "user_id": "'u' || lpad(uid::text, 5, '0')",
    "scope": "'user'",
    "kind": "kind",
    "category": "category",
    "content": "content",
    "content_key": "ckey",
    "importance": "CASE WHEN kind = 'procedural' THEN 0.65 ELSE 0.6 END",
    "confidence": "0.7",
    "evidence_count": "1 + access / 3",
    "status": "status",
    "valid_from": "%(now)s - make_interval(secs => age_s + 86400)",
    "recorded_at": "%(now)s - make_interval(secs => age_s)",
    "last_confirmed_at": "%(now)s - make_interval(secs => age_s)",
    "expires_at": "%(now)s + make_interval(secs => expires_s)",
    "pinned": "pinned",
    "archived_at": "%(now)s - make_interval(secs => archived_s)",
    "valid_to": "CASE WHEN status = 'archived' THEN %(now)s - make_interval(secs => archived_s) END",
    "source_event_ids": "ARRAY['ev-' || n]",
    "source_turn_ids": "ARRAY['D' || uid || ':' || n]",
    "embedding": "emb",
    "search_tokens": "to_tsvector('simple', doc)",
    "updated_at": "%(now)s",
}


def _check_load_columns() -> None:
    from store.models import MEMORY_COLUMNS

    unknown = set(_LOAD_COLUMNS) - set(MEMORY_COLUMNS)
    if unknown:
        raise RuntimeError(f"the store load fills columns memories does not have: {sorted(unknown)}")


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

    _check_load_columns()

    tasks = [
        (seed, s, min(s + GEN_BATCH, stop), users, profile.name, profile.embed)
        for s in range(start, stop, GEN_BATCH)
    ]
    columns = ", ".join(name for name, _ in ROW_FIELDS)
    t0 = time.monotonic()
    with raw_connection(url) as conn:
        register_vector(conn)
        conn.execute(
            "CREATE UNLOGGED TABLE IF NOT EXISTS bench_stage ("
            + ", ".join(
                f"{name} {f'vector({DIM})' if kind == 'vector' else kind}" for name, kind in ROW_FIELDS
            )
            + ")"
        )
        conn.execute("TRUNCATE bench_stage")
        ctx = multiprocessing.get_context("spawn")
        done = 0
        copy_sql = f"COPY bench_stage ({columns}) FROM STDIN (FORMAT BINARY)"
        with ctx.Pool(GEN_PROCESSES) as pool, conn.cursor() as cur, cur.copy(copy_sql) as cp:
            cp.set_types([kind for _, kind in ROW_FIELDS])
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
            f"mem AS (INSERT INTO memories ({', '.join(_LOAD_COLUMNS)}) "
            f"SELECT {', '.join(_LOAD_COLUMNS.values())} "
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


def index_scans(url: str) -> dict[str, int]:
    """Scans so far of each index of `memories` (`pg_stat_user_indexes`)."""
    with raw_connection(url) as conn:
        rows = conn.execute(
            "SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE relname = 'memories'"
        ).fetchall()
    return {str(n): int(s or 0) for n, s in rows}


def server_facts(url: str) -> dict[str, str]:
    """The server's version, memory settings and pgvector version, as the reports state them."""
    with raw_connection(url) as conn:
        out = {
            k: str(conn.execute(f"SHOW {k}").fetchone()[0])
            for k in ("server_version", "shared_buffers", "work_mem", "max_parallel_workers_per_gather")
        }
        out["pgvector"] = str(
            conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        )
    return out
