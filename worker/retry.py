"""Backoff for task retries (pure)."""

from __future__ import annotations

import random


def retry_countdown(retries: int, *, max_s: int, rng: random.Random | None = None) -> float:
    """Capped exponential backoff with full jitter, plus a small floor."""
    rng = rng or random.Random()
    return rng.uniform(0, min(max_s, 0.5 * 2**retries)) + 0.2
