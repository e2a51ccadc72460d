"""Each benchmark's section of BENCHMARKS.md, rendered from small figures: the figures behind the published
sections (tests/data/bench_figures.json, taken from BENCHMARKS.md as of the renovation) must render the
published target and table rows verbatim; LoCoMo's figures are made by its own scorer."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from tests.services import REPO

FIXTURES = json.loads((REPO / "tests" / "data" / "bench_figures.json").read_text(encoding="utf-8"))


def _render(name: str, figures: dict[str, Any], *, skipped: list[str] | None = None) -> str:
    module = importlib.import_module(f"bench.{name}")
    result = {"name": name, "quick": False, "figures": figures, "skipped": skipped or []}
    result["targets"] = module.targets(figures)
    return str(module.render_markdown(result))


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_published_figures_render_the_published_rows(name: str) -> None:
    fixture = FIXTURES[name]
    lines = _render(name, fixture["figures"]).splitlines()
    rows = [line for line in lines if line.startswith("| ") and "---" not in line]
    assert rows[1:] == fixture["published_rows"]  # after the targets table's header, in order


def test_the_store_section_reads_the_recall_and_the_plans_of_the_largest_size() -> None:
    markdown = _render("store", FIXTURES["store"]["figures"])
    assert "### Recall of the vector query at 1,000,000 memories" in markdown
    assert "Plans at 1,000,000 memories (EXPLAIN ANALYZE" in markdown
    assert markdown.count("```") == 2 * 3  # one search statement, two recall paths
    assert "At 1,000,000 memories a `search()` call takes 8.07 ms at p50" in markdown


def test_a_store_run_without_its_largest_size_says_the_target_was_not_measured() -> None:
    figures = json.loads(json.dumps(FIXTURES["store"]["figures"]))
    figures["sizes"] = figures["sizes"][:1]
    figures.pop("reconcile")
    markdown = _render("store", figures, skipped=["1,000,000 memories: 12 s of budget left"])
    assert (
        "| search p95, k=10, 100,000 memories (no target at this size) | 2.497 ms | <= 15 ms | - |"
        in markdown
    )
    assert (
        "| search p95, k=10, per-user filter, 1,000,000 memories / 10,000 users (not measured) | n/a | "
        "<= 15 ms | **no** |"
    ) in markdown
    assert "### Reconciliation throughput" not in markdown
    assert markdown.endswith("Skipped: 1,000,000 memories: 12 s of budget left\n")


def test_a_failed_ingest_probe_is_reported_in_place_of_its_pieces() -> None:
    figures = {**FIXTURES["ingest"]["figures"], "probe": {"error": "Traceback ...\nboom"}}
    markdown = _render("ingest", figures)
    assert "### Where the time goes\n\nThe probe failed: `Traceback ... boom`" in markdown
    assert "| piece |" not in markdown


def _locomo_figures() -> dict[str, Any]:
    from bench import locomo
    from bench.lib import scorer

    evidence = frozenset({"D1:1", "D1:2"})
    hit = [scorer.Result.of("user: a", ["D1:1"]), scorer.Result.of("user: b", ["D1:2", "D1:3"])]
    miss = [scorer.Result.of("user: c", ["D2:9"])]
    scores = {
        name: [
            scorer.score_question(evidence, hit if name.startswith("project") else miss, category=cat)
            for cat in (1, 2, 4, 5)
        ]
        for name in locomo.SCORED
    }
    store = {
        "sample_id": "conv-26",
        "sessions": 19,
        "turns": 419,
        "questions": 4,
        "memories": 9,
        "memory_tokens": 97,
        "extraction_coverage": 0.03,
        "questions_fully_covered_by_memories": 0.013,
        "evidence_indexed": 1.0,
    }
    return {
        "k": 10,
        "deep_k": 25,
        "include_turns": True,
        "embedder": "hashing",
        "events_emitted": 438,
        "drain": {"drained": True, "user_drained_s": {"conv-26": 85.7}, "incomplete": None},
        "timings_s": {"emit": 1.31, "ingest": 100.59, "search": 228.4, "baselines": 44.16},
        "search_latency_ms": {"n": 4, "p50": 71.83, "p95": 95.87, "max": 99.0},
        "result_types": {"memory": 1, "turn": 7},
        "store": [store],
        "systems": {name: scorer.aggregate(s) for name, s in scores.items()},
        "services": "test figures",
        "duration_s": 380.7,
        "options": {
            "embedder": "hashing",
            "index_turns": True,
            "conversations": ["conv-26"],
            "sessions": None,
            "complete_data": False,
            "max_memory_per_child_kib": None,
        },
    }


def test_the_locomo_section_compares_the_project_with_the_baselines_per_category() -> None:
    markdown = _render("locomo", _locomo_figures())
    assert "| evidence recall@5 (categories 1-4, partial data) | 100 % | >= 75 % | yes |" in markdown
    assert "| multi-hop evidence recall@10 (category 1) | 100 % | >= 60 % | yes |" in markdown
    assert "| replay + scoring wall time (1 conversations) | 380.7 s | <= 900 s | yes |" in markdown
    assert "| this project (POST /v1/search) | 100.0 | 100.0 | 100.0 |" in markdown
    assert "| BM25 over raw turns | 0.0 | 0.0 | 0.0 |" in markdown
    assert "| 1 multi-hop | 1 | 100.0 / 100.0 / 100.0 | 100.0 / 100.0 / n/a | 100.0 / 100.0 / n/a | " in markdown
    assert "| this project, time frames off | 100.0 | 100.0 | n/a |" in markdown
    assert "| conv-26 | 19 | 419 | 4 | 9 | 97 | 3.0 % | 1.3 % | 100.0 % | 85.7 |" in markdown
    assert "Timing: ingest (first emit -> drained, one `celery worker -c 2`) 100.59 s" in markdown


@pytest.mark.parametrize("name", ["extraction", "locomo"])
def test_a_benchmark_on_the_locomo_data_skips_with_a_message_when_the_file_is_absent(
    name: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import extraction
    from bench.lib import locomo_data

    missing = tmp_path / "locomo-dev.json"
    monkeypatch.setattr(locomo_data, "DATA_FILE", missing)
    monkeypatch.setattr(extraction, "DATA_FILE", missing)
    result = importlib.import_module(f"bench.{name}").run(60.0, True)  # returns before starting any service
    assert result["figures"] == {} and result["targets"] == []
    assert result["markdown"].startswith("Skipped: ") and str(missing) in result["markdown"]


def test_the_extraction_section_sets_a_failing_model_next_to_the_cooperative_one() -> None:
    from bench import extraction

    figures = json.loads(json.dumps(FIXTURES["extraction"]["figures"]))
    cooperative = figures["worker"]
    failing = {
        **cooperative,
        "llm_calls": 15,
        "calls_by_kind": {"extract": 10, "reconcile (judge)": 5},
        "llm_calls_per_1000_turns": round(cooperative["llm_calls_per_1000_turns"] * 2, 1),
        "prompt_tokens_per_turn": round(cooperative["prompt_tokens_per_turn"] / 2, 1),
        "turn_status": {"llm_pending": 419},
        "llm_failures": {"circuit_open (llm_pending)": 327, "invalid_output (llm_pending)": 92},
    }
    figures["failing"] = {**failing, **extraction._ratios(failing, cooperative)}

    markdown = _render("extraction", figures)

    assert figures["failing"]["calls_ratio"] == 2.0 and figures["failing"]["prompt_tokens_ratio"] == 0.5
    calls_row = next(line for line in markdown.splitlines() if "always fails: LLM calls" in line)
    assert calls_row.endswith("| 2 x | <= 1.5 x | **no** |")
    tokens_row = next(line for line in markdown.splitlines() if "always fails: prompt tokens" in line)
    assert tokens_row.endswith("| 0.5 x | <= 1.5 x | yes |")
    assert "circuit_open (llm_pending) 327, invalid_output (llm_pending) 92" in markdown
    assert extraction.failing_responder(
        {"messages": [{"role": "user", "content": "## Conversation window\n[e1] user: hi"}]}
    ).startswith('{"facts"')
