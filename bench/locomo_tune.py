"""LoCoMo search tuning: replay the development conversations once into a kept database, then score the
search in process as often as needed.

    python -m bench.locomo_tune load  --embedder onnx-minilm [--dir .memdata/locomo-tune]
    python -m bench.locomo_tune score --embedder onnx-minilm [--dir ...] [--k 10] [--no-time-frame] [--expand]

`load` starts an embedded PostgreSQL and Redis under `<dir>/<embedder>/` (kept after the run), replays every
turn through the real stack as `bench.locomo` does (MemoryClient -> Redis -> a `celery worker -c 2` ->
PostgreSQL, rules-only extraction) and waits until drained. `score` asks every question of categories 1-5
through `store.search.search` in this process (no HTTP: a full pass takes seconds to a minute), with
include_turns and passages as the API's defaults, and prints recall@5 / @10 and tokens per query, overall
(categories 1-4) and per category, and the search latency in this process.

This is the tuning loop, not the benchmark: figures for BENCHMARKS.md come from `bench.locomo` (real HTTP).
Tune on these development conversations only (issue #18: never read the scores of other conversations
while tuning). Data: `../shared/bench-data/locomo-dev.json`, read in place; absent -> a message, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.lib.paths import REPO

DEFAULT_DIR = REPO / ".memdata" / "locomo-tune"


def _services(folder: Path) -> tuple[Any, Any]:
    from shared.embedded import start_postgres, start_redis

    return start_postgres(folder), start_redis(folder / "redis")


def load(embedder: str, folder: Path) -> int:
    from bench import locomo
    from bench.lib.locomo_data import DataMissing, load_conversations
    from bench.lib.processes import BenchWorker
    from bench.lib.project import create_key, get_engine, migrate, session_scope
    from bench.lib.services import Services, unique_name, worker_env

    try:
        conversations = load_conversations()
    except DataMissing as exc:
        print(exc, file=sys.stderr)
        return 2
    os.environ["MEMORY_EMBEDDER"] = embedder  # the schema records the embedder at migration
    pg, redis = _services(folder)
    migrate(pg.url)
    with locomo._environment(embedder, True, pg.url):
        svc = Services(pg.url, redis.url, folder, None, embedded=False)
        tenant, queue = f"t-tune-{embedder}", unique_name("locomo-tune")
        with session_scope(get_engine(pg.url)) as session:
            key, _ = create_key(session, tenant, name="locomo-tune")
        env = worker_env(svc, queue, MEMORY_EMBEDDER=embedder, MEMORY_INDEX_TURNS="true")
        worker = BenchWorker(env, queue, folder / f"{queue}.log", concurrency=2).start()
        try:
            stack = locomo.Stack(
                tenant=tenant,
                redis_url=redis.url,
                queue=queue,
                database_url=pg.url,
                api_url="",
                api_key=key,
                worker_alive=worker.alive,
                worker_log_tail=worker.log_tail,
                spool_dir=folder,
            )
            t0 = time.monotonic()
            locomo.replay(stack, conversations)
            expected = {c.sample_id: len(c.turns) + len(c.sessions) for c in conversations}
            drain = locomo.wait_drained(stack, get_engine(pg.url), expected, started=t0, deadline=None)
        finally:
            worker.stop()
    (folder / "tune.json").write_text(json.dumps({"tenant": tenant, "embedder": embedder}))
    print(f"loaded: drained={drain['drained']} in {time.monotonic() - t0:.1f} s; tenant {tenant}")
    return 0 if drain["drained"] else 1


def score(embedder: str, folder: Path, *, k: int, time_frame: bool, expand: bool) -> int:
    from bench.lib import scorer
    from bench.lib.locomo_data import load_conversations
    from bench.lib.project import get_engine, make_embedder, search, session_scope
    from bench.lib.stats import percentile

    if not (folder / "tune.json").is_file():
        print(f"nothing loaded in {folder}: run `python -m bench.locomo_tune load` first", file=sys.stderr)
        return 2
    tenant = json.loads((folder / "tune.json").read_text())["tenant"]
    pg, _ = _services(folder)
    engine = get_engine(pg.url)
    emb = make_embedder(embedder, dim=384)
    now = datetime.now(UTC)
    scores, latencies = [], []
    for conv in load_conversations():
        for q in conv.questions:
            with session_scope(engine, tenant=tenant) as db:
                t0 = time.perf_counter()
                hits = search(
                    db,
                    tenant_id=tenant,
                    user_id=conv.sample_id,
                    query=q.question,
                    k=k,
                    embedder=emb,
                    now=now,
                    include_turns=True,
                    time_frame=time_frame,
                    expand=expand,
                )
                latencies.append(time.perf_counter() - t0)
            results = [scorer.Result.of(h.content, h.source_turn_ids) for h in hits]
            scores.append(scorer.score_question(q.evidence, results, category=q.category))
    summary = scorer.aggregate(scores)

    def line(name: str, s: dict[str, Any]) -> str:
        r = s["recall_at"]
        return f"{name:22} R@5 {100 * r[5]:5.1f}  R@10 {100 * r[10]:5.1f}  scored {s['scored']}"

    print(line("1-4", summary["overall"]) + f"  tokens/query {summary['overall']['tokens_at'][k]:.0f}")
    for cat, s in summary["by_category"].items():
        print(line(f"{cat} {s['name']}", s))
    latencies.sort()
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    print(f"search in process: p50 {1000 * p50:.1f} ms, p95 {1000 * p95:.1f} ms")
    return 0


def main(argv: list[str] | None = None) -> int:
    from store.embeddings import EMBEDDER_NAMES

    ap = argparse.ArgumentParser(prog="python -m bench.locomo_tune", description=__doc__.split("\n", 1)[0])
    ap.add_argument("command", choices=("load", "score"))
    ap.add_argument("--embedder", choices=EMBEDDER_NAMES, default="onnx-minilm")
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where the kept databases live")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--no-time-frame", action="store_true", help="search with time_frame=False")
    ap.add_argument("--expand", action="store_true", help="search with expand=True")
    args = ap.parse_args(argv)
    folder = args.dir / args.embedder
    if args.command == "load":
        return load(args.embedder, folder)
    return score(args.embedder, folder, k=args.k, time_frame=not args.no_time_frame, expand=args.expand)


if __name__ == "__main__":
    sys.exit(main())
