"""Run records around scheduled and manual maintenance work (`store.runs`): a scheduled slot runs once.

A scheduled task receives its fire time (ISO); the slot key `kind:fire_time` makes a slot whose message
arrives twice run once. Manual runs have no fire time, hence no slot key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from shared.contract import utcnow
from store.runs import finish_run, start_run


def slot_key(kind: str, fire_time: str | None, suffix: str = "") -> str | None:
    """The run record's slot key of a scheduled run (None for a manual one)."""
    return f"{kind}:{fire_time}{suffix}" if fire_time else None


def recorded_run(
    engine: Engine,
    *,
    kind: str,
    actor: str,
    fire_time: str | None,
    body: Callable[[datetime], Mapping[str, Any]],
) -> dict[str, Any]:
    """Record a run (scope `all`) around `body(now) -> counts`; `duplicate_slot` when the slot already ran.
    A body that raises leaves an `error` run behind, and the error goes on."""
    now = utcnow()
    run_id = start_run(
        engine, kind=kind, scope="all", actor=actor, now=now, slot_key=slot_key(kind, fire_time)
    )
    if run_id is None:
        return {"outcome": "duplicate_slot"}
    try:
        counts = dict(body(now))
    except Exception as exc:
        finish_run(
            engine, run_id, outcome="error", counts={"errors": 1}, now=utcnow(), detail=type(exc).__name__
        )
        raise
    finish_run(engine, run_id, outcome="ok", counts=counts, now=utcnow())
    return {"outcome": "ok", "run_id": run_id, **counts}
