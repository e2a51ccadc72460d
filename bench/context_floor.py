"""Calibration of the context block's relevance floor (issue 16): the two absolute signals every search hit
carries (`similarity`, `keyword_coverage`, see `core.relevance`), measured on hits that should be in a context
block and on hits that should not, for each embedder.

    python -m bench.context_floor [--embedder hashing|local|onnx-minilm|e5-small] [--split dev|test]
                                  [--locomo-conversations N]

Data (read in place, nothing copied):
- the labelled cases `tests/data/context_floor/cases.json` (one user's memories in English and Chinese;
  queries naming the memory they should bring, and queries that should bring none); `--split dev` (the
  default) calibrates, `--split test` is the held-back part, scored once with the chosen floor;
- the LoCoMo development conversations (`../shared/bench-data/locomo-dev.json`, CC BY-NC) when present: each
  conversation's turns are stored as one user's memories ("<speaker>: <text>", citing the turn), each question
  (categories 1-4) is searched (k = 10, memories), and a hit citing an evidence turn is a hit that should be
  kept; the null queries of the cases' split are asked of every conversation too.

Memories are written straight through the store's INSERT (no worker: the signals depend on the stored text
and its embedding only), into an embedded PostgreSQL in a temp dir. The output is the distribution of each
signal per group and, for a grid of floors, how many should-keep hits survive and how many should-drop hits
do; `CALIBRATION.md` records the run and the choice.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.lib.paths import REPO, RESULTS_DIR

CASES = REPO / "tests" / "data" / "context_floor" / "cases.json"
GRID_SIM = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.75, 0.78, 0.8, 0.82, 0.84, 0.86, 0.88)
GRID_COV = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
K = 10


@dataclass
class Signals:
    keep: list[tuple[float | None, float | None]] = field(default_factory=list)  # hits that belong in context
    drop: list[tuple[float | None, float | None]] = field(default_factory=list)  # hits of null queries
    missed: int = 0  # labelled memories not even among the k hits (no floor can bring them back)
    null_topicless: int = 0  # null queries set aside before search (no topic)
    null_queries: int = 0


def _load_memories(db: Any, embedder: Any, tenant: str, user: str, rows: list[tuple[str, list[str]]]) -> list[str]:
    """Insert (content, source_turn_ids) rows as the user's memories; returns their ids."""
    from sqlalchemy import text

    from core import keywords
    from shared.db.vectors import vector_literal
    from store.memories import insert_sql

    now = datetime.now(UTC)
    ids: list[str] = []
    vectors = embedder.embed([content for content, _ in rows])
    for (content, turns), vec in zip(rows, vectors, strict=True):
        row: dict[str, Any] = {
            "tenant_id": tenant,
            "user_id": user,
            "content": content,
            "content_key": content[:500],
            "kind": "semantic",
            "category": "fact",
            "valid_from": now,
            "last_confirmed_at": now,
            "embedding": vector_literal(vec),
            "search_tokens": keywords.document(content),
            "source_turn_ids": turns,
        }
        ids.append(str(db.execute(text(insert_sql(tuple(row))), row).scalar_one()))
    return ids


def _hits(db: Any, embedder: Any, tenant: str, user: str, query: str) -> list[Any]:
    """The k hits the context block reads for `query` (its topical part, as `store.context` searches)."""
    from core.relevance import topical_text
    from store.search import search

    return search(
        db, tenant_id=tenant, user_id=user, query=topical_text(query), k=K, embedder=embedder, now=datetime.now(UTC)
    )


def measure(url: str, embedder_name: str, split: str, locomo_conversations: int | None) -> dict[str, Any]:
    from bench.lib.locomo_data import DataMissing, load_conversations
    from bench.lib.project import get_engine
    from core.relevance import has_topic
    from shared.db.engine import session_scope
    from store.embeddings import make_embedder

    embedder = make_embedder(embedder_name)
    engine = get_engine(url)
    cases = json.loads(CASES.read_text())
    queries = [q for q in cases["queries"] if q["split"] == split]
    nulls = [q["q"] for q in queries if not q["relevant"]]
    groups: dict[str, Signals] = {"cases": Signals(), "locomo": Signals()}
    tenant = f"floor-{embedder_name}-{int(time.time())}"
    with session_scope(engine, tenant=tenant) as db:
        ids = _load_memories(db, embedder, tenant, "cases", [(m["content"], [m["id"]]) for m in cases["memories"]])
        by_label = {m["id"]: i for m, i in zip(cases["memories"], ids, strict=True)}
        g = groups["cases"]
        for q in queries:
            hits = _hits(db, embedder, tenant, "cases", q["q"])
            if q["relevant"]:
                wanted = {by_label[label] for label in q["relevant"]}
                found = [h for h in hits if h.id in wanted]
                g.missed += len(wanted) - len(found)
                g.keep += [(h.similarity, h.keyword_coverage) for h in found]
            else:
                g.null_queries += 1
                if not has_topic(q["q"]):
                    g.null_topicless += 1
                    continue
                g.drop += [(h.similarity, h.keyword_coverage) for h in hits]
    conversations = []
    try:
        if locomo_conversations != 0:  # 0: the labelled cases only
            conversations = list(load_conversations(conversations=locomo_conversations))
    except DataMissing as exc:
        print(f"LoCoMo skipped: {exc}", file=sys.stderr)
    g = groups["locomo"]
    for conv in conversations:
        turns = [t for s in conv.sessions for t in s.turns]
        with session_scope(engine, tenant=tenant) as db:
            _load_memories(db, embedder, tenant, conv.sample_id, [(t.content, [t.dia_id]) for t in turns])
        with session_scope(engine, tenant=tenant) as db:
            for question in conv.questions:
                if question.category not in (1, 2, 3, 4) or not question.evidence:
                    continue
                for h in _hits(db, embedder, tenant, conv.sample_id, question.question):
                    if set(h.source_turn_ids) & question.evidence:
                        g.keep.append((h.similarity, h.keyword_coverage))
            for null in nulls:
                g.null_queries += 1
                if not has_topic(null):
                    g.null_topicless += 1
                    continue
                hits = _hits(db, embedder, tenant, conv.sample_id, null)
                g.drop += [(h.similarity, h.keyword_coverage) for h in hits]
    return {
        "embedder": embedder_name,
        "split": split,
        "groups": {name: _summary(s) for name, s in groups.items()},
        "grid": _grid(groups),
    }


def _kept(pairs: Iterable[tuple[float | None, float | None]], sim: float, cov: float) -> int:
    from core.relevance import RelevanceFloor

    floor = RelevanceFloor(sim, cov)
    return sum(floor.keeps(s, c) for s, c in pairs)


def _quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    v = sorted(values)
    pick = lambda q: round(v[min(len(v) - 1, int(q * (len(v) - 1)))], 3)  # noqa: E731
    return {"min": pick(0), "p05": pick(0.05), "p25": pick(0.25), "p50": pick(0.5), "p75": pick(0.75), "max": pick(1)}


def _summary(s: Signals) -> dict[str, Any]:
    return {
        "keep_hits": len(s.keep),
        "drop_hits": len(s.drop),
        "missed": s.missed,
        "null_queries": s.null_queries,
        "null_topicless": s.null_topicless,
        "keep_similarity": _quantiles([a for a, _ in s.keep if a is not None]),
        "drop_similarity": _quantiles([a for a, _ in s.drop if a is not None]),
        "keep_coverage": _quantiles([b for _, b in s.keep if b is not None]),
        "drop_coverage": _quantiles([b for _, b in s.drop if b is not None]),
    }


def _grid(groups: dict[str, Signals]) -> list[dict[str, Any]]:
    rows = []
    for sim in GRID_SIM:
        for cov in GRID_COV:
            row: dict[str, Any] = {"min_similarity": sim, "min_keyword_coverage": cov}
            for name, s in groups.items():
                row[f"{name}_keep"] = f"{_kept(s.keep, sim, cov)}/{len(s.keep)}"
                row[f"{name}_drop_kept"] = f"{_kept(s.drop, sim, cov)}/{len(s.drop)}"
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    from bench.lib.services import services

    parser = argparse.ArgumentParser(prog="python -m bench.context_floor", description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", choices=("hashing", "local", "onnx-minilm", "e5-small"), default="hashing")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--locomo-conversations", type=int, default=None)
    args = parser.parse_args(argv)
    with services() as svc:
        result = measure(svc.database_url, args.embedder, args.split, args.locomo_conversations)
    out = Path(RESULTS_DIR) / f"context_floor_{args.embedder}_{args.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["groups"], indent=1))
    for row in result["grid"]:
        print(row)
    print(f"written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
