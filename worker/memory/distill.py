"""Sleep-time distillation (pure): cluster a user's active fragments and rewrite each cluster.

Clustering: within one kind, fragments whose topical similarity (the larger of embedding cosine and a
keyword overlap that ignores the generic subject words) reaches the kind's threshold are linked; linked
components of two or more form a cluster. Only clusters holding a fragment newer than the last run are
rewritten, which makes a second run with nothing new a no-op.

Deterministic rewrite (no LLM): the most confirmed, then most recent, statement becomes canonical; the
other distinct statements follow as bullet details (bounded), so nothing said is lost; sources, evidence
and lineage are merged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from worker.memory import keywords

# Calibrated on tests/data/distill_cases.json (see CALIBRATION.md): episodic notes about one piece of
# work share specific words (a service, a version, a place); facts and rules must be near-duplicates.
THRESHOLDS = {"episodic": 0.30, "semantic": 0.60, "procedural": 0.60}
_GENERIC = frozenset({"user", "用户", "project", "项目", "team", "团队", "we", "our"})
MAX_DETAILS = 8
MAX_DETAIL_CHARS = 160


@dataclass(frozen=True)
class Fragment:
    id: str
    kind: str
    category: str
    content: str
    evidence_count: int
    importance: float
    last_confirmed_at: datetime
    recorded_at: datetime
    embedding: tuple[float, ...]
    source_event_ids: tuple[str, ...] = ()
    source_turn_ids: tuple[str, ...] = ()
    slot: str | None = None
    valid_from: datetime | None = None


@dataclass(frozen=True)
class Consolidated:
    content: str
    kind: str
    category: str
    importance: float
    evidence_count: int
    consolidated_from: tuple[str, ...]
    source_event_ids: tuple[str, ...]
    source_turn_ids: tuple[str, ...]
    valid_from: datetime


def topic_tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in keywords.tokens(text) if t not in _GENERIC)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Overlap coefficient |a ∩ b| / min(|a|, |b|): a short note fully inside a longer one scores 1."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def similarity(a: Fragment, b: Fragment) -> float:
    words = overlap(topic_tokens(a.content), topic_tokens(b.content))
    return max(cosine(a.embedding, b.embedding), words * 0.6)


def cluster(
    fragments: Sequence[Fragment],
    *,
    new_since: datetime | None = None,
    thresholds: dict[str, float] | None = None,
) -> list[list[Fragment]]:
    """Clusters of two or more fragments of one kind; slotted fragments are left alone (one value per slot
    is reconciliation's job). With `new_since`, only clusters holding a fragment recorded after it."""
    limits = thresholds or THRESHOLDS
    eligible = [f for f in fragments if f.slot is None]
    parent = list(range(len(eligible)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(eligible):
        for j in range(i + 1, len(eligible)):
            b = eligible[j]
            if a.kind == b.kind and similarity(a, b) >= limits.get(a.kind, 0.6):
                parent[find(i)] = find(j)
    groups: dict[int, list[Fragment]] = {}
    for i, f in enumerate(eligible):
        groups.setdefault(find(i), []).append(f)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        if new_since is not None and not any(m.recorded_at > new_since for m in members):
            continue
        out.append(sorted(members, key=lambda m: (m.recorded_at, m.id)))
    return sorted(out, key=lambda ms: ms[0].recorded_at)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 1] + "…"


def consolidate(members: Sequence[Fragment]) -> Consolidated:
    """The deterministic rewrite of one cluster."""
    canonical = max(members, key=lambda m: (m.evidence_count, m.last_confirmed_at, m.recorded_at))
    seen = {keywords.document(canonical.content)}
    details = []
    for m in sorted(members, key=lambda m: m.recorded_at, reverse=True):
        key = keywords.document(m.content)
        if key in seen:
            continue
        seen.add(key)
        details.append(_clip(m.content))
    content = canonical.content.strip()
    if details:
        content += "\n" + "\n".join(f"- {d}" for d in details[:MAX_DETAILS])
    return Consolidated(
        content=content,
        kind=canonical.kind,
        category=canonical.category,
        importance=max(m.importance for m in members),
        evidence_count=sum(m.evidence_count for m in members),
        consolidated_from=tuple(m.id for m in members),
        source_event_ids=tuple(dict.fromkeys(e for m in members for e in m.source_event_ids)),
        source_turn_ids=tuple(dict.fromkeys(t for m in members for t in m.source_turn_ids)),
        valid_from=min(m.valid_from or m.recorded_at for m in members),
    )
