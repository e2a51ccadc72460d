"""Prometheus metrics of the worker processes (exposed by the API's /metrics in multiprocess setups)."""

from __future__ import annotations

from prometheus_client import Counter

LLM_CALLS = Counter("memory_llm_calls_total", "LLM calls", ["tenant", "stage", "outcome"])
LLM_TOKENS = Counter("memory_llm_tokens_total", "LLM tokens", ["tenant", "stage", "direction"])
LLM_BUDGET_EXHAUSTED = Counter(
    "memory_llm_budget_exhausted_total",
    "extraction windows run rules-only because the tenant's daily budget is spent",
    ["tenant"],
)
CANDIDATES = Counter("memory_candidates_total", "memory candidates extracted", ["origin"])
