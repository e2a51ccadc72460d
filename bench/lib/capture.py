"""Where the time goes: the statements an engine runs (captured and timed), their plans, and cProfile's top.

Contract:
- `capture_statements(engine)` records every statement the engine runs inside the block, with its
  parameters and client wall time;
- `explain_statements(engine, captured)` replays them under EXPLAIN (ANALYZE, BUFFERS) in one transaction
  that is rolled back (SET / set_config statements are replayed as they are, so the plans see the same
  settings); vector literals are elided from the plans (`shorten`);
- `top_own_time(profiler)` lists the functions with the most own time of a cProfile run.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Captured:
    statement: str
    parameters: Any
    duration_ms: float = 0.0


@contextlib.contextmanager
def capture_statements(engine: Any) -> Iterator[list[Captured]]:
    """Every statement `engine` runs inside the block, with its parameters and wall time."""
    from sqlalchemy import event

    seen: list[Captured] = []

    def before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        conn.info.setdefault("bench_t0", []).append(time.perf_counter())

    def after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        t0 = conn.info["bench_t0"].pop()
        seen.append(Captured(statement, parameters, (time.perf_counter() - t0) * 1000))

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)


def explain_statements(
    engine: Any, statements: Sequence[Captured], *, tenant: str | None = None, settings: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """EXPLAIN (ANALYZE, BUFFERS) each data statement in one transaction that is rolled back; SET / set_config
    statements are replayed as they are, so the plans see the same settings."""
    from sqlalchemy import text

    out = []
    with engine.connect() as conn:
        trans = conn.begin()
        try:
            if tenant is not None:
                conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": tenant})
            for s in settings:
                conn.exec_driver_sql(s)
            for c in statements:
                head = c.statement.lstrip().split(None, 1)[0].upper()
                if head == "SET" or "set_config(" in c.statement:
                    conn.exec_driver_sql(c.statement, c.parameters or {})
                    continue
                rows = conn.exec_driver_sql(
                    "EXPLAIN (ANALYZE, BUFFERS) " + c.statement, c.parameters or {}
                ).all()
                out.append(
                    {"statement": " ".join(c.statement.split())[:400], "plan": [shorten(r[0]) for r in rows]}
                )
        finally:
            trans.rollback()
    return out


_VECTOR_LITERAL = re.compile(r"'\[[-0-9.,e ]{40,}\]'")


def shorten(line: str) -> str:
    """A plan or statement line with its 384-float vector literal elided."""
    return _VECTOR_LITERAL.sub("'[384 floats]'", line)


def top_own_time(profiler: Any, n: int = 8) -> list[tuple[str, float, int]]:
    """(`file:line(function)`, own seconds, calls) of the `n` functions with the most own time."""
    import pstats

    st = pstats.Stats(profiler)
    rows = sorted(st.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:n]  # type: ignore[attr-defined]
    return [(f"{Path(f).name}:{line}({fn})", float(v[2]), int(v[1])) for (f, line, fn), v in rows]
