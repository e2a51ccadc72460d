"""Forgetting policy (pure): TTL, half-life decay, and purge after retention.

- TTL: `expires_at` passed -> archived.
- decay: score = importance x 2^(-age / half_life), age from the last access or confirmation; a memory older
  than `archive_after_half_lives` half-lives with fewer than `min_accesses` accesses is archived.
  Semantic facts have no half-life and never decay; pinned memories are never archived or purged.
- purge: archived (or forgotten) rows older than `retention_days` are deleted, leaving a history tombstone.
The SQL in `store/pruning.py` implements exactly this; a test checks the two agree row by row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

Action = Literal["keep", "archive_ttl", "archive_decay", "purge"]

DEFAULT_HALF_LIVES: dict[str, float | None] = {"semantic": None, "episodic": 30.0, "procedural": 90.0}


@dataclass(frozen=True)
class ForgettingPolicy:
    half_life_days: dict[str, float | None] = field(default_factory=lambda: dict(DEFAULT_HALF_LIVES))
    archive_after_half_lives: float = 3.0
    min_accesses: int = 2
    retention_days: float = 30.0


def tenant_half_lives(
    overrides: object, defaults: Mapping[str, float | None] = DEFAULT_HALF_LIVES
) -> dict[str, float | None]:
    """Each kind's half-life (days) for one tenant: `tenants.settings->'half_life_days'` (e.g.
    {"episodic": 14}) over the defaults. Only a number overrides a kind; anything else (a string, null, a
    list) leaves the default. Pruning (`store.pruning`) and search ranking (`store.search`) both apply this
    rule, so an override changes what decays and how results rank alike."""
    half = dict(defaults)
    if isinstance(overrides, Mapping):
        for kind, value in overrides.items():
            if kind in half and isinstance(value, int | float) and not isinstance(value, bool):
                half[kind] = float(value)
    return half


@dataclass(frozen=True)
class MemoryFacts:
    kind: str
    status: str
    pinned: bool
    access_count: int
    last_confirmed_at: datetime
    last_accessed_at: datetime | None = None
    expires_at: datetime | None = None
    archived_at: datetime | None = None


def last_touch(m: MemoryFacts) -> datetime:
    return max(m.last_confirmed_at, m.last_accessed_at) if m.last_accessed_at else m.last_confirmed_at


def prune_action(m: MemoryFacts, *, now: datetime, policy: ForgettingPolicy) -> Action:
    if m.pinned:
        return "keep"
    if m.status in ("archived", "deleted"):
        if m.archived_at is not None and m.archived_at <= now - timedelta(days=policy.retention_days):
            return "purge"
        return "keep"
    if m.status != "active":
        return "keep"
    if m.expires_at is not None and m.expires_at <= now:
        return "archive_ttl"
    half_life = policy.half_life_days.get(m.kind)
    old = half_life and now - last_touch(m) > timedelta(days=half_life * policy.archive_after_half_lives)
    if old and m.access_count < policy.min_accesses:
        return "archive_decay"
    return "keep"
