"""A tiny server-side chart renderer: line and bar charts as inline SVG strings (no JavaScript, no library).

Values are numbers (None for a gap); labels are short strings shown under the first, middle and last point.
All text is escaped; the output goes into templates with `|safe`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 520, 180
PAD_L, PAD_R, PAD_T, PAD_B = 48, 12, 14, 34
PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2")
OVER = "#991b1b"  # a bar over the limit


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]


def _fmt(v: float) -> str:
    if abs(v) >= 1_000_000:
        return f"{v / 1_000_000:.1f}M"
    if abs(v) >= 1_000:
        return f"{v / 1_000:.1f}k"
    return f"{v:.0f}" if v == int(v) else f"{v:.2f}"


def _frame(title: str, top: float, labels: Sequence[str], body: list[str], legend: Sequence[str]) -> str:
    inner_h = HEIGHT - PAD_T - PAD_B
    out = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line x1="{PAD_L}" y1="{PAD_T + inner_h}" x2="{WIDTH - PAD_R}" y2="{PAD_T + inner_h}" stroke="#999"/>',
        f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{PAD_T + inner_h}" stroke="#999"/>',
    ]
    for frac in (0.0, 0.5, 1.0):
        y = PAD_T + inner_h * (1 - frac)
        out.append(
            f'<text x="{PAD_L - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{_fmt(top * frac)}</text>'
        )
        if frac:
            out.append(f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{WIDTH - PAD_R}" y2="{y:.1f}" stroke="#eee"/>')
    n = len(labels)
    if n:
        step = (WIDTH - PAD_L - PAD_R) / max(n, 1)
        for i in sorted({0, n // 2, n - 1}):
            x = PAD_L + step * (i + 0.5)
            out.append(
                f'<text x="{x:.1f}" y="{HEIGHT - PAD_B + 14}" text-anchor="middle" font-size="10">'
                f"{escape(labels[i])}</text>"
            )
    out.extend(body)
    x = PAD_L
    for i, name in enumerate(legend):
        colour = "#666" if name.startswith("budget") else PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{HEIGHT - 12}" width="10" height="8" fill="{colour}"/>')
        out.append(f'<text x="{x + 13}" y="{HEIGHT - 4}" font-size="10">{escape(name)}</text>')
        x += 20 + 6 * len(name)
    out.append("</svg>")
    return "".join(out)


def _top(values: Sequence[float]) -> float:
    top = max(values, default=0.0)
    return top * 1.1 if top > 0 else 1.0


def line_chart(title: str, labels: Sequence[str], series: Sequence[Series]) -> str:
    """One polyline per series over shared x labels; None values break the line."""
    top = _top([v for s in series for v in s.values if v is not None])
    inner_w, inner_h = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B
    step = inner_w / max(len(labels), 1)
    body = []
    for k, s in enumerate(series):
        colour = PALETTE[k % len(PALETTE)]
        runs: list[list[str]] = [[]]
        for i, v in enumerate(s.values):
            if v is None:
                runs.append([])
                continue
            x, y = PAD_L + step * (i + 0.5), PAD_T + inner_h * (1 - v / top)
            runs[-1].append(f"{x:.1f},{y:.1f}")
        for pts in runs:
            if len(pts) == 1:
                cx, cy = pts[0].split(",")
                body.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="{colour}"/>')
            elif pts:
                body.append(
                    f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{" ".join(pts)}"/>'
                )
    return _frame(title, top, labels, body, [s.name for s in series])


def bar_chart(
    title: str, labels: Sequence[str], values: Sequence[float], *, limit: float | None = None
) -> str:
    """One bar per label; `limit` (a budget) drawn as a dashed line, bars over it in dark red (`OVER`)."""
    top = _top([*values, *([limit] if limit else [])])
    inner_w, inner_h = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B
    step = inner_w / max(len(labels), 1)
    body = []
    for i, v in enumerate(values):
        h = inner_h * v / top
        colour = OVER if limit is not None and v > limit else PALETTE[0]
        body.append(
            f'<rect x="{PAD_L + step * i + step * 0.15:.1f}" y="{PAD_T + inner_h - h:.1f}" '
            f'width="{step * 0.7:.1f}" height="{h:.1f}" fill="{colour}"><title>{escape(labels[i])}: '
            f"{_fmt(v)}</title></rect>"
        )
    legend = ["tokens"]
    if limit is not None:
        y = PAD_T + inner_h * (1 - limit / top)
        body.append(
            f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{WIDTH - PAD_R}" y2="{y:.1f}" stroke="#666" '
            'stroke-dasharray="4 3"/>'
        )
        legend.append(f"budget {_fmt(limit)}")
    return _frame(title, top, labels, body, legend)
