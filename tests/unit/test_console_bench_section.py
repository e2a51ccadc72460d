"""bench/console.py's section of BENCHMARKS.md: the targets from the slowest page, one row per page, and a
note when the machine was loaded."""

from __future__ import annotations

from typing import Any

from bench import console


def _figures(load: float) -> dict[str, Any]:
    page = {"n": 3, "p50_ms": 10.0, "p95_ms": 12.5, "max_ms": 13.0, "path": "/console/", "kb": 1.2}
    return {
        "memories": 10_000,
        "events": 2_000,
        "samples": 3,
        "cpu_count": 2,
        "services": "DATABASE_URL",
        "load_s": 1.0,
        "load_avg_1m_at_end": load,
        "pages": {"index": page, "operations": {**page, "p50_ms": 150.0, "p95_ms": 250.0}},
        "slowest_p50_ms": 150.0,
        "slowest_p95_ms": 250.0,
    }


def _render(figures: dict[str, Any]) -> str:
    result = {"name": "console", "quick": False, "figures": figures, "skipped": []}
    result["targets"] = console.targets(figures)
    return console.render_markdown(result)


def test_the_section_names_each_page_and_judges_the_slowest() -> None:
    markdown = _render(_figures(load=0.5))
    assert "| slowest page, median (user with 10,000 memories) | 150 ms | <= 200 ms | yes |" in markdown
    assert "| slowest page, p95 (user with 10,000 memories) | 250 ms | <= 200 ms | **no** |" in markdown
    assert "| operations | `/console/` | 150.0 | 250.0 | 13.0 | 1.2 |" in markdown
    assert "The machine was shared" not in markdown


def test_a_loaded_machine_is_said_so() -> None:
    assert "The machine was shared: a load average of 6.5 on 2 cores" in _render(_figures(load=6.5))
