"""Prometheus metrics of the worker processes.

With `PROMETHEUS_MULTIPROC_DIR` set (as `memctl up` does for the worker and the API), every pool process
writes its samples there and the API's `/metrics` aggregates them."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

LLM_CALLS = Counter("memory_llm_calls_total", "LLM calls", ["tenant", "stage", "outcome"])
LLM_TOKENS = Counter("memory_llm_tokens_total", "LLM tokens", ["tenant", "stage", "direction"])
LLM_BUDGET_EXHAUSTED = Counter(
    "memory_llm_budget_exhausted_total",
    "extraction windows run rules-only because the tenant's daily budget is spent",
    ["tenant"],
)
LLM_FAILURES = Counter(
    "memory_llm_failures_total",
    "LLM calls (after retries and the repair) that gave no usable answer, by stage and reason",
    ["stage", "reason"],
)
LLM_TURNS_GIVEN_UP = Counter(
    "memory_llm_turns_given_up_total",
    "turns made final with their rule candidates after the cap on failed LLM attempts, by reason",
    ["reason"],
)
LLM_SILENT_LOSSES = Counter(
    "memory_llm_silent_losses_total",
    "turns the LLM owed that ended final with neither a parsed answer nor a recorded reason (must stay 0)",
)
LLM_FALLBACKS = Counter(
    "memory_llm_fallbacks_total",
    "stage runs that did without the LLM (a failed call, or none behind an open breaker), by stage, reason "
    "and what they did instead (deterministic: the stage's no-LLM path; deferred: turns kept llm_pending)",
    ["stage", "reason", "action"],
)
LLM_BREAKER_OPENED = Counter(
    "memory_llm_breaker_opened_total", "times an endpoint's circuit breaker opened, by stage", ["stage"]
)
CANDIDATES = Counter("memory_candidates_total", "memory candidates extracted", ["origin"])

TASKS = Counter("memory_tasks_total", "task runs by name and outcome", ["task", "outcome"])
TASK_SECONDS = Histogram(
    "memory_task_duration_seconds",
    "task run time by name",
    ["task"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120),
)

INGEST_ENTRIES = Counter("memory_ingest_entries_total", "ingest stream entries handled by the consumers")
INGEST_EVENTS = Counter(
    "memory_ingest_events_total", "events handled by the ingest consumers, by outcome", ["outcome"]
)
INGEST_CLAIMED = Counter(
    "memory_ingest_claimed_total", "ingest entries taken over from a consumer that stopped touching them"
)
INGEST_RETRIES = Counter(
    "memory_ingest_retries_total", "ingest batches retried after an error that was not the payload's"
)
INGEST_BATCH_SECONDS = Histogram(
    "memory_ingest_batch_seconds",
    "time to store, acknowledge and trigger one ingest batch",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
)
