"""What a benchmark is doing now: `progress(...)` reports it, `bench.run` routes it to its progress bar.

Contract: without a sink (a benchmark run on its own) each report is one `[bench] ...` line on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

ProgressSink = Callable[[str, float | None, float | None], None]
_sink: ProgressSink | None = None


def set_progress_sink(sink: ProgressSink | None) -> None:
    global _sink
    _sink = sink


def progress(description: str, completed: float | None = None, total: float | None = None) -> None:
    """Tell the runner what is happening now (and, optionally, how far along it is)."""
    if _sink is not None:
        _sink(description, completed, total)
    else:
        print(f"[bench] {description}", file=sys.stderr, flush=True)
