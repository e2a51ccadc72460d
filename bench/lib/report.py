"""The section a benchmark writes into BENCHMARKS.md, rendered from what the benchmark declares as data.

A benchmark declares
- its targets: `Target(name, figure, op, goal, unit, note)`, where `figure` is a dotted path into the
  figures ("worker.prompt_tokens_per_turn") or a function of them. `evaluate` measures them into the rows
  kept with the result (`name, measured, target, unit, met, note, reference`): a target is met only when
  a figure was measured and meets the goal; a `reference` row shows a figure that has no goal of its own;
- its section: blocks over the figures. `Text` (one paragraph), `Table` (declared `Column`s over a list of
  rows), `Facts` (a two-column table of named figures), `Code`, `Bullets`, `Lines` (anything else),
  `Section` (a `###` heading over part of the figures) and `Each` (blocks repeated over a list). A block
  with nothing to show renders nothing.
`render(result, blocks)` writes the section body: the targets table, the blocks one blank line apart, then
what was skipped; a missing figure reads "n/a". `result(...)` is the dict every benchmark's `run` returns:
`{"name", "quick", "figures", "targets", "skipped", "markdown"}`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

# a dotted path into nested dicts ("" is the data itself), or a function of the data
Value = str | Callable[[Any], Any]
Blocks = Sequence["Block"]


def get(data: Any, value: Value) -> Any:
    """What `value` names in `data`: a path's value (None where a key is missing), or `value(data)`."""
    if callable(value):
        return value(data)
    for key in value.split(".") if value else ():
        if not isinstance(data, Mapping) or key not in data:
            return None
        data = data[key]
    return data


def fmt(v: Any, spec: str = "") -> str:
    """One figure as text: "n/a" when it was not measured."""
    return "n/a" if v is None else format(v, spec)


def paragraph(text: str) -> str:
    """A paragraph written across source lines, as one markdown line."""
    return " ".join(text.split())


# --- targets ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One target: `figure` (a path or a function of the figures) compared with `goal` by `op`."""

    name: str
    figure: Value
    op: Literal["<=", ">="]
    goal: float
    unit: str
    note: str | Callable[[Any], str] = ""
    reference: bool = False  # shown for comparison only: no goal of its own at this size

    def row(self, figures: Any) -> dict[str, Any]:
        measured = get(figures, self.figure)
        met = measured is not None and (measured <= self.goal if self.op == "<=" else measured >= self.goal)
        return {
            "name": self.name,
            "measured": measured,
            "target": f"{self.op} {self.goal:g} {self.unit}".strip(),
            "unit": self.unit,
            "met": met,
            "note": self.note(figures) if callable(self.note) else self.note,
            "reference": self.reference,
        }


def evaluate(targets: Iterable[Target], figures: Any) -> list[dict[str, Any]]:
    """The target rows of a finished run."""
    return [t.row(figures) for t in targets]


def targets_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The markdown table of target rows; a reference row has no goal of its own (met: -)."""
    lines = ["| target | measured | goal | met |", "| --- | --- | --- | --- |"]
    for t in rows:
        measured = "n/a" if t["measured"] is None else f"{t['measured']:g} {t['unit']}"
        note = f" ({t['note']})" if t["note"] else ""
        met = "yes" if t["met"] else "**no**"
        if t.get("reference"):
            met, note = "-", ""
        lines.append(f"| {t['name']}{note} | {measured} | {t['target']} | {met} |")
    return lines


# --- blocks -----------------------------------------------------------------------------------------------


class Block(Protocol):
    def lines(self, data: Any) -> list[str]:
        """The block's markdown lines over `data`; [] when it has nothing to show."""
        ...


def _text(text: str | Callable[[Any], str | None], data: Any) -> str | None:
    return text(data) if callable(text) else text


def join(blocks: Blocks, data: Any) -> list[str]:
    """The blocks' lines over `data`, one blank line between blocks that show something."""
    out: list[str] = []
    for block in blocks:
        part = block.lines(data)
        if part:
            out += [*([""] if out else []), *part]
    return out


@dataclass(frozen=True)
class Text:
    """One paragraph (written across source lines): a string, or a function of the data (None: nothing)."""

    text: str | Callable[[Any], str | None]

    def lines(self, data: Any) -> list[str]:
        text = _text(self.text, data)
        return [paragraph(text)] if text else []


@dataclass(frozen=True)
class Bullets:
    """A list, one item per text (a string or a function of the data; None: no item), or the texts a
    function of the data returns."""

    items: Sequence[str | Callable[[Any], str | None]] | Callable[[Any], Sequence[str]]

    def lines(self, data: Any) -> list[str]:
        if callable(self.items):
            texts: Iterable[str | None] = self.items(data)
        else:
            texts = (_text(item, data) for item in self.items)
        return [f"- {paragraph(t)}" for t in texts if t]


@dataclass(frozen=True)
class Column:
    header: str
    value: Value  # over one row
    spec: str = ""  # format spec of a value that is not text already


@dataclass(frozen=True)
class Table:
    """One row per item of `rows` (a path or a function of the data); no rows: nothing."""

    columns: Sequence[Column] | Callable[[Any], Sequence[Column]]
    rows: Value = ""

    def lines(self, data: Any) -> list[str]:
        rows = get(data, self.rows)
        if not rows:
            return []
        columns = self.columns(data) if callable(self.columns) else self.columns
        out = ["| " + " | ".join(c.header for c in columns) + " |", "| --- " * len(columns) + "|"]
        for row in rows:
            out.append("| " + " | ".join(fmt(get(row, c.value), c.spec) for c in columns) + " |")
        return out


@dataclass(frozen=True)
class Facts:
    """A two-column table: one named figure per row, as `Column(name, value, spec)` over the data."""

    rows: Sequence[Column]
    header: tuple[str, str] = ("figure", "value")

    def lines(self, data: Any) -> list[str]:
        out = [f"| {self.header[0]} | {self.header[1]} |", "| --- | --- |"]
        return out + [f"| {c.header} | {fmt(get(data, c.value), c.spec)} |" for c in self.rows]


@dataclass(frozen=True)
class Code:
    """A preformatted block of the lines `value` names (a plan, a statement); none: nothing."""

    value: Value

    def lines(self, data: Any) -> list[str]:
        lines = get(data, self.value)
        return ["```", *lines, "```"] if lines else []


@dataclass(frozen=True)
class Lines:
    """Markdown lines made by a function of the data, for what the other blocks do not say."""

    make: Callable[[Any], list[str]]

    def lines(self, data: Any) -> list[str]:
        return self.make(data)


@dataclass(frozen=True)
class Section:
    """A `### title` over the part of the data `data` names, with blocks of its own; absent: nothing."""

    title: str | Callable[[Any], str]
    blocks: Blocks
    data: Value = ""

    def lines(self, data: Any) -> list[str]:
        part = get(data, self.data)
        if not part:
            return []
        title = self.title(part) if callable(self.title) else self.title
        body = join(self.blocks, part)
        return [f"### {title}", *(["", *body] if body else [])]


@dataclass(frozen=True)
class Each:
    """The same blocks once per item of `items` (a path or a function of the data)."""

    items: Value
    blocks: Blocks

    def lines(self, data: Any) -> list[str]:
        out: list[str] = []
        for item in get(data, self.items) or ():
            part = join(self.blocks, item)
            if part:
                out += [*([""] if out else []), *part]
        return out


# --- the result -------------------------------------------------------------------------------------------


def render(result: Mapping[str, Any], blocks: Blocks) -> str:
    """The section body: the targets table, the blocks over the figures, what was skipped."""
    lines = targets_table(result["targets"])
    body = join(blocks, result["figures"])
    if body:
        lines += ["", *body]
    if result["skipped"]:
        lines += ["", "Skipped: " + "; ".join(result["skipped"])]
    return "\n".join(lines) + "\n"


def result(
    name: str,
    quick: bool,
    figures: dict[str, Any],
    skipped: list[str],
    *,
    started: float,
    targets: Iterable[Target] | Callable[[dict[str, Any]], Iterable[Target]],
    blocks: Blocks,
) -> dict[str, Any]:
    """The result of a finished run (the duration and the load at the end added to its figures)."""
    figures["duration_s"] = round(time.monotonic() - started, 1)
    figures["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    declared = targets(figures) if callable(targets) else targets
    out: dict[str, Any] = {
        "name": name,
        "quick": quick,
        "figures": figures,
        "targets": evaluate(declared, figures),
        "skipped": skipped,
    }
    out["markdown"] = render(out, blocks)
    return out


def skipped_result(name: str, quick: bool, reason: str) -> dict[str, Any]:
    """The result of a benchmark that could not run at all (its data is missing, say)."""
    return {
        "name": name,
        "quick": quick,
        "figures": {},
        "targets": [],
        "skipped": [reason],
        "markdown": f"Skipped: {reason}\n",
    }
