"""The console's tiny SVG charts (`api.console.svg`): well-formed, escaped, scaled, with the budget line."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from api.console import svg

NS = "{http://www.w3.org/2000/svg}"


def test_a_line_chart_is_well_formed_svg_with_one_polyline_per_unbroken_run_and_escaped_text() -> None:
    out = svg.line_chart(
        "events <per> minute",
        ["10:00", "10:01", "10:02", "10:03"],
        [svg.Series("a&b", [1, 2, None, 4]), svg.Series("lag", [0, 0, 0, 0])],
    )
    root = ET.fromstring(out)  # raises on anything malformed (an unescaped '<' or '&')
    assert root.find(f"{NS}title").text == "events <per> minute"  # type: ignore[union-attr]
    # series a: a run of two points (a polyline) and a single point (a dot) around the gap; lag: one polyline
    assert len(root.findall(f"{NS}polyline")) == 2 and len(root.findall(f"{NS}circle")) == 1
    assert "a&b" in [t.text for t in root.iter(f"{NS}text")]


def test_bars_over_the_budget_are_red_and_the_budget_is_a_dashed_line_within_the_plot() -> None:
    out = svg.bar_chart("tokens", ["d1", "d2"], [50.0, 150.0], limit=100.0)
    root = ET.fromstring(out)
    bars = root.findall(f"{NS}rect")[:2]
    assert [b.get("fill") for b in bars] == [svg.PALETTE[0], svg.OVER]
    assert float(bars[1].get("height")) > float(bars[0].get("height")) > 0  # type: ignore[arg-type]
    dashed = [line for line in root.findall(f"{NS}line") if line.get("stroke-dasharray")]
    assert len(dashed) == 1
    y = float(dashed[0].get("y1"))  # type: ignore[arg-type]
    assert svg.PAD_T <= y <= svg.HEIGHT - svg.PAD_B


def test_an_empty_chart_still_renders() -> None:
    ET.fromstring(svg.line_chart("nothing", [], []))
    ET.fromstring(svg.bar_chart("nothing", [], []))
