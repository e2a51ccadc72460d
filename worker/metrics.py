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
CANDIDATES = Counter("memory_candidates_total", "memory candidates extracted", ["origin"])

TASKS = Counter("memory_tasks_total", "task runs by name and outcome", ["task", "outcome"])
TASK_SECONDS = Histogram(
    "memory_task_duration_seconds",
    "task run time by name",
    ["task"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120),
)
