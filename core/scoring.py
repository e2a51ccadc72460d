"""Hybrid search scoring (pure): reciprocal rank fusion of vector and keyword ranks, weighted by importance
and by each kind's half-life decay; recent items win ties."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

RRF_K = 60  # the constant from Cormack et al. (2009), "Reciprocal rank fusion outperforms Condorcet"
TURN_IMPORTANCE = 0.45  # raw turns rank a little below extracted memories of average importance


@dataclass(frozen=True)
class Ranked:
    key: str  # "m:<uuid>" or "t:<event id>"
    importance: float
    half_life_days: float | None
    last_touch: datetime  # last access or confirmation: age counts from here
    vector_rank: int | None = None  # 1-based
    keyword_rank: int | None = None
    # further ranked lists the item is on, as (weight, 1-based rank): the search's second step and the
    # query's time frame (store.search)
    extra: tuple[tuple[float, int], ...] = ()


def decay(*, half_life_days: float | None, age_days: float) -> float:
    """2^(-age / half_life); 1.0 for kinds without a half-life (semantic facts do not fade)."""
    if not half_life_days or half_life_days <= 0:
        return 1.0
    return float(2.0 ** (-max(0.0, age_days) / half_life_days))


def fused_score(
    item: Ranked, *, now: datetime, vector_weight: float = 1.0, keyword_weight: float = 1.0
) -> float:
    rrf = 0.0
    if item.vector_rank is not None:
        rrf += vector_weight / (RRF_K + item.vector_rank)
    if item.keyword_rank is not None:
        rrf += keyword_weight / (RRF_K + item.keyword_rank)
    for weight, position in item.extra:
        rrf += weight / (RRF_K + position)
    age_days = (now - item.last_touch).total_seconds() / 86400
    return rrf * (0.5 + 0.5 * item.importance) * decay(half_life_days=item.half_life_days, age_days=age_days)


def rank(
    items: Sequence[Ranked], *, now: datetime, k: int, vector_weight: float = 1.0, keyword_weight: float = 1.0
) -> list[tuple[Ranked, float]]:
    """Items by fused score, best first; ties broken by the most recent touch."""
    scored = [
        (item, fused_score(item, now=now, vector_weight=vector_weight, keyword_weight=keyword_weight))
        for item in items
    ]
    scored.sort(key=lambda pair: (-round(pair[1], 12), -pair[0].last_touch.timestamp()))
    return scored[:k]
