"""The benchmarks' report renderer (bench/lib/report.py): targets and sections declared as data, rendered as
the markdown of a BENCHMARKS.md section."""

from __future__ import annotations

from bench.lib import report
from bench.lib.report import Bullets, Code, Column, Each, Facts, Section, Table, Target, Text


def _result(figures: dict, targets: list[Target], skipped: list[str] | None = None) -> dict:
    return {
        "name": "x",
        "quick": False,
        "figures": figures,
        "targets": report.evaluate(targets, figures),
        "skipped": skipped or [],
    }


def test_a_path_reads_nested_figures_and_a_missing_key_reads_none() -> None:
    figures = {"a": {"b": {"c": 3}}, "d": 0}
    assert report.get(figures, "a.b.c") == 3
    assert report.get(figures, "d") == 0
    assert report.get(figures, "a.x.c") is None
    assert report.get(figures, "") is figures
    assert report.get(figures, lambda f: f["d"] + 1) == 1


def test_a_figure_that_was_not_measured_reads_n_a() -> None:
    assert report.fmt(None) == "n/a"
    assert report.fmt(1234.5, ",.1f") == "1,234.5"


def test_a_target_is_met_only_when_its_figure_was_measured_and_meets_the_goal() -> None:
    rows = report.evaluate(
        [
            Target("fast", "p95", "<=", 15, "ms"),
            Target("busy", "rps", ">=", 300, "req/s"),
            Target("absent", "nothing", "<=", 1, "s", "not measured"),
        ],
        {"p95": 15.0, "rps": 299.9},
    )
    assert [r["met"] for r in rows] == [True, False, False]
    assert rows[0]["target"] == "<= 15 ms" and rows[1]["target"] == ">= 300 req/s"
    assert rows[2]["measured"] is None and rows[2]["note"] == "not measured"


def test_the_targets_table_says_no_in_bold_and_shows_a_reference_row_without_a_verdict() -> None:
    figures = {"small": 2.497, "big": 10.414, "slow": 1200.0}
    rows = report.evaluate(
        [
            Target("p95 at 100,000 (no target at this size)", "small", "<=", 15, "ms", reference=True),
            Target("p95 at 1,000,000", "big", "<=", 15, "ms", lambda f: "query embedding included"),
            Target("wall time", "slow", "<=", 900, "s"),
        ],
        figures,
    )
    assert report.targets_table(rows) == [
        "| target | measured | goal | met |",
        "| --- | --- | --- | --- |",
        "| p95 at 100,000 (no target at this size) | 2.497 ms | <= 15 ms | - |",
        "| p95 at 1,000,000 (query embedding included) | 10.414 ms | <= 15 ms | yes |",
        "| wall time | 1200 s | <= 900 s | **no** |",
    ]


def test_a_table_declares_its_columns_and_renders_one_row_per_item() -> None:
    table = Table(
        (
            Column("run", "label"),
            Column("events", "rows", ","),
            Column("events/s", "rate", ",.0f"),
            Column("cpu", lambda r: " / ".join(report.fmt(v) for v in r["cpu"])),
        ),
        "runs",
    )
    figures = {
        "runs": [
            {"label": "c1", "rows": 5000, "rate": 200.4, "cpu": [1.47, None]},
            {"label": "c2", "rows": 14000, "rate": None, "cpu": [1.5, 3.3]},
        ]
    }
    assert table.lines(figures) == [
        "| run | events | events/s | cpu |",
        "| --- | --- | --- | --- |",
        "| c1 | 5,000 | 200 | 1.47 / n/a |",
        "| c2 | 14,000 | n/a | 1.5 / 3.3 |",
    ]
    assert table.lines({"runs": []}) == []


def test_facts_are_a_two_column_table_of_named_figures() -> None:
    facts = Facts((Column("LLM calls per 1,000 turns", "w.calls"), Column("prompt tokens", "w.tokens", ",")))
    assert facts.lines({"w": {"calls": 70.3, "tokens": 251883}}) == [
        "| figure | value |",
        "| --- | --- |",
        "| LLM calls per 1,000 turns | 70.3 |",
        "| prompt tokens | 251,883 |",
    ]


def test_a_section_over_missing_figures_renders_nothing_and_blocks_are_one_blank_line_apart() -> None:
    section = Section(
        lambda r: f"Reconciliation at {r['size']:,}",
        (
            Text("""A paragraph written
                across source lines."""),
            Text(lambda r: None),  # nothing to say: no block, no blank line
            Code("plan"),
            Bullets(("one", lambda r: f"two: {r['size']}", lambda r: None)),
        ),
        data="reconcile",
    )
    assert section.lines({}) == []
    assert section.lines({"reconcile": {"size": 1000, "plan": ["Limit", "  -> Sort"]}}) == [
        "### Reconciliation at 1,000",
        "",
        "A paragraph written across source lines.",
        "",
        "```",
        "Limit",
        "  -> Sort",
        "```",
        "",
        "- one",
        "- two: 1000",
    ]


def test_each_repeats_its_blocks_over_a_list() -> None:
    each = Each("plans", (Text(lambda p: f"Plan, {p['name']}:"), Code("lines")))
    assert each.lines({"plans": [{"name": "a", "lines": ["x"]}, {"name": "b", "lines": ["y"]}]}) == [
        "Plan, a:",
        "",
        "```",
        "x",
        "```",
        "",
        "Plan, b:",
        "",
        "```",
        "y",
        "```",
    ]


def test_a_rendered_section_is_the_targets_table_the_blocks_and_what_was_skipped() -> None:
    result = _result({"p95": 3.0}, [Target("p95", "p95", "<=", 15, "ms")], ["recall: budget"])
    markdown = report.render(result, (Text(lambda f: f"Measured {f['p95']} ms."),))
    assert markdown == (
        "| target | measured | goal | met |\n"
        "| --- | --- | --- | --- |\n"
        "| p95 | 3 ms | <= 15 ms | yes |\n"
        "\n"
        "Measured 3.0 ms.\n"
        "\n"
        "Skipped: recall: budget\n"
    )


def test_a_finished_run_carries_its_duration_its_target_rows_and_its_markdown() -> None:
    import time

    figures: dict = {"rps": 540.2}
    out = report.result(
        "api_load",
        True,
        figures,
        [],
        started=time.monotonic() - 2.0,
        targets=lambda f: [Target("rps", "rps", ">=", 300, "req/s")],
        blocks=(),
    )
    assert set(out) == {"name", "quick", "figures", "targets", "skipped", "markdown"}
    assert out["figures"]["duration_s"] >= 2.0 and "load_avg_1m_at_end" in out["figures"]
    assert out["targets"][0]["met"] and "| rps | 540.2 req/s | >= 300 req/s | yes |" in out["markdown"]


def test_a_benchmark_that_could_not_run_says_why() -> None:
    out = report.skipped_result("locomo", False, "the LoCoMo data file is not at /x")
    assert out["markdown"] == "Skipped: the LoCoMo data file is not at /x\n"
    assert out["figures"] == {} and out["targets"] == []
