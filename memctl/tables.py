"""memctl's tables, read in terminals of 80 columns (issue 17, item 3).

Every table memctl prints goes through `print_table`. Without `--wide`: the content column comes first and
gets the room (never squeezed under `MIN_CONTENT` while other columns can give way), ids are shortened to
their first `SHORT_ID` characters, times to the minute, columns empty in every row are dropped, and the
columns marked `wide_only` (or, when the terminal is still too narrow, the last ones) are left out with a
note on stderr naming them. With `--wide`: every column, full values, as wide as it takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

SHORT_ID = 8
MIN_CONTENT = 30
MAX_OTHER = 24  # a column other than the content one is cut (with an ellipsis) past this
GAP = 3  # what rich puts between two columns of these tables: padding 1 each side and a separator

Kind = Literal["text", "content", "id", "time", "number"]


@dataclass(frozen=True)
class Col:
    header: str
    kind: Kind = "text"
    wide_only: bool = False


def _cell(value: Any, kind: Kind, *, wide: bool) -> str:
    if value is None:
        return ""
    text = str(value)
    if wide:
        return text[:19] if kind == "time" else text
    if kind == "id":
        return text[:SHORT_ID]
    if kind == "time":
        return text[:16]
    if kind == "content":
        return " ".join(text.split())
    return text


@dataclass
class Layout:
    """What `layout` decided: the columns shown (in order), their cells, the content column's width, and the
    columns left out."""

    cols: list[Col]
    rows: list[list[str]]
    content_width: int | None
    hidden: list[str]
    total_width: int


def layout(cols: Sequence[Col], rows: Sequence[Sequence[Any]], *, wide: bool, width: int) -> Layout:
    cells = [[_cell(v, c.kind, wide=wide) for c, v in zip(cols, row, strict=True)] for row in rows]
    keep = list(range(len(cols)))
    hidden: list[str] = []
    if not wide:
        hidden = [cols[i].header for i in keep if cols[i].wide_only]
        keep = [i for i in keep if not cols[i].wide_only]
        keep = [i for i in keep if any(r[i] for r in cells)] if cells else keep
        # content first
        keep.sort(key=lambda i: cols[i].kind != "content")

    def natural(i: int) -> int:
        longest = max((len(r[i]) for r in cells), default=0)
        size = max(len(cols[i].header), longest)
        return size if wide or cols[i].kind == "content" else min(size, MAX_OTHER)

    content = next((i for i in keep if cols[i].kind == "content"), None)
    content_width: int | None = None
    if not wide:
        while True:
            others = sum(natural(i) + GAP for i in keep if i != content)
            room = width - others
            if content is None:
                if others - GAP <= width or len(keep) <= 1:
                    break
            else:
                content_width = min(natural(content), room)
                if content_width >= min(MIN_CONTENT, natural(content)) or len(keep) <= 2:
                    content_width = max(content_width, 8)
                    break
            hidden.append(cols[keep[-1]].header)
            keep.pop()
    order = {c.header: n for n, c in enumerate(cols)}
    hidden.sort(key=lambda h: order[h])
    total = sum(natural(i) + GAP for i in keep) - GAP
    return Layout(
        cols=[cols[i] for i in keep],
        rows=[[r[i] for i in keep] for r in cells],
        content_width=content_width,
        hidden=hidden,
        total_width=total,
    )


def build(
    cols: Sequence[Col], rows: Sequence[Sequence[Any]], *, wide: bool, width: int
) -> tuple[Table, Layout]:
    plan = layout(cols, rows, wide=wide, width=width)
    table = Table(box=box.SIMPLE_HEAD, highlight=False, show_edge=False, pad_edge=False, padding=(0, 1))
    for c in plan.cols:
        if c.kind == "content":
            table.add_column(c.header, overflow="fold", width=plan.content_width if not wide else None)
        else:
            table.add_column(
                c.header,
                no_wrap=True,
                overflow="ellipsis",
                max_width=None if wide else MAX_OTHER,
                justify="right" if c.kind == "number" else "left",
            )
    for r in plan.rows:
        table.add_row(*(escape(v) for v in r))  # a cell is text, never markup ("[purged]", "[1, 2]")
    return table, plan


def print_table(
    out: Console,
    cols: Sequence[Col],
    rows: Sequence[Sequence[Any]],
    *,
    wide: bool = False,
    err: Console | None = None,
) -> None:
    """Print one table on `out` (see the module docstring); the columns left out are named on `err`."""
    table, plan = build(cols, rows, wide=wide, width=out.width)
    if wide and plan.total_width > out.width:
        Console(file=out.file, width=plan.total_width + 2, force_terminal=out.is_terminal).print(table)
    else:
        out.print(table)
    if plan.hidden and err is not None:
        err.print(
            f"[dim]({len(plan.hidden)} column(s) left out: {', '.join(plan.hidden)}; --wide shows all)[/]"
        )
