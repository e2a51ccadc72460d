"""The OpenAI SDK as this project uses it, for chat (worker.llm) and embeddings (store.embeddings): one
client factory with our timeout and no SDK retries, and the bounded, jittered backoff both retry with."""

from __future__ import annotations

import random
from typing import Any

import openai

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def sdk_client(
    client: openai.OpenAI | None, *, api_key: str | None, base_url: str | None, timeout_s: float
) -> openai.OpenAI:
    """The SDK client for our calls (chat and embeddings): our timeout, and no SDK retries, because retries
    are ours (bounded, jittered, counted) and the SDK must not add its own on top. A given client (tests,
    callers with their own HTTP settings) gets the same options."""
    if client is not None:
        return client.with_options(timeout=timeout_s, max_retries=0)
    return openai.OpenAI(
        api_key=api_key, base_url=base_url or DEFAULT_BASE_URL, timeout=timeout_s, max_retries=0
    )


RETRYABLE_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """A status worth another attempt: timeouts, conflicts, rate limits and server errors."""
    return status in RETRYABLE_STATUSES or status >= 500


MAX_BACKOFF_EXPONENT = 32  # 2**32 x any sane base is far past any cap; avoids float overflow


def compute_backoff(
    attempt: int, *, base_s: float, max_s: float, rng: random.Random, retry_after_s: float | None = None
) -> float:
    """Seconds to wait before retry number `attempt` (0 for the first retry).

    A server's Retry-After wins when present (capped by `max_s`); otherwise "full jitter", uniform in
    [0, min(max_s, base_s * 2^attempt)], which spreads the retries of many workers instead of having them hit
    a recovering endpoint in lockstep.
    """
    if retry_after_s is not None and retry_after_s >= 0:
        return min(retry_after_s, max_s)
    ceiling = min(max_s, base_s * 2.0 ** min(max(attempt, 0), MAX_BACKOFF_EXPONENT))
    return rng.uniform(0.0, max(ceiling, 0.0))


def retry_after_seconds(headers: Any) -> float | None:
    """The delay a response asks for, from `retry-after-ms` or `retry-after` (seconds); None when absent.

    The HTTP-date form of Retry-After is not honoured (it would need the clock); the jittered backoff applies.
    """
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            seconds = float(raw) / divisor
        except ValueError:
            continue
        if seconds >= 0 and seconds != float("inf"):
            return seconds
    return None
