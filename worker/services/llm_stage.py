"""What every LLM stage shares: its circuit breaker, its failure accounting, and saying what it did instead.

The stages: `extract` (turns -> memories), `summarize` (the session's rolling summary), `reconcile` (the
judge of similar-but-unclear pairs), `episode` (a closed session's episode), `distill` (fragments rewritten)
and `working_memory` (the user's document). Each has its own breaker (`worker.runtime.breaker(stage)`): a
model may fail one prompt and answer another well. A stage with a configured LLM:

- asks `gate(stage, breaker)` before a call: None means call; `"circuit_open"` means the breaker is open
  (no call is made; counted as a failure of that reason);
- after the call, `succeeded(breaker)`, or `failed(stage, breaker, error)`, which counts the failure by stage
  and reason (`memory_llm_failures_total`), logs it and tells the breaker (counting its opening);
- when it did without the LLM for either reason, `fell_back(db, ...)`: one `llm.fallback` log line, one
  count of `memory_llm_fallbacks_total{stage, reason, action}`, and one row in `llm_failures` (what
  `memctl stats` shows), written in the stage's own transaction. `action` is what it did instead:
  `deterministic` (its no-LLM path: extractive summary, the rule decision, a deterministic episode,
  distillation or document) or `deferred` (turns kept `llm_pending` and sent again later). Nothing is lost
  either way: every no-LLM path writes what the stage writes, from the same inputs.

With no LLM configured at all, stages take their no-LLM path without any of this (said once at start-up).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog
from sqlmodel import Session

from store.usage import record_failure
from worker import metrics
from worker.llm import CircuitBreaker, failure_reason

log = structlog.get_logger("worker.llm")

EXTRACT = "extract"
SUMMARIZE = "summarize"
RECONCILE = "reconcile"
EPISODE = "episode"
DISTILL = "distill"
WORKING_MEMORY = "working_memory"
STAGES = (EXTRACT, SUMMARIZE, RECONCILE, EPISODE, DISTILL, WORKING_MEMORY)

DETERMINISTIC = "deterministic"
DEFERRED = "deferred"
CIRCUIT_OPEN = "circuit_open"


def gate(stage: str, breaker: CircuitBreaker | None) -> str | None:
    """None when `stage` may call the LLM now (the breaker is closed, or this call is its half-open probe);
    else the reason it may not (`circuit_open`, counted)."""
    if breaker is None or breaker.allow().allowed:
        return None
    metrics.LLM_FAILURES.labels(stage, CIRCUIT_OPEN).inc()
    return CIRCUIT_OPEN


def succeeded(breaker: CircuitBreaker | None) -> None:
    if breaker is not None:
        breaker.success()


def failed(stage: str, breaker: CircuitBreaker | None, error: str, **fields: Any) -> str:
    """Count and log a call of `stage` that gave no usable answer; returns its reason (a category of
    `worker.llm.FAILURE_REASONS`). The breaker is told, and its opening counted."""
    reason = failure_reason(error)
    metrics.LLM_FAILURES.labels(stage, reason).inc()
    log.warning("llm.failed", stage=stage, reason=reason, error=error[:200], **fields)
    if breaker is not None and breaker.failure() is not None:
        metrics.LLM_BREAKER_OPENED.labels(stage).inc()
    return reason


def fell_back(
    db: Session,
    stage: str,
    tenant_id: str,
    *,
    reason: str,
    action: str,
    now: datetime,
    **fields: Any,
) -> None:
    """Say that `stage` did without the LLM for `reason` and did `action` instead: a log line, a metric and
    a row of `llm_failures` in the caller's transaction."""
    metrics.LLM_FALLBACKS.labels(stage, reason, action).inc()
    log.warning("llm.fallback", stage=stage, reason=reason, action=action, tenant_id=tenant_id, **fields)
    record_failure(db, tenant_id, day=now.date().isoformat(), stage=stage, reason=reason, action=action)
