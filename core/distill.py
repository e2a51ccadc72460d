"""Sleep-time distillation (pure): cluster a user's active fragments and rewrite each cluster.

Clustering: within one kind, fragments whose topical similarity (the larger of embedding cosine and a
keyword overlap that ignores the generic subject words) reaches the kind's threshold are linked; linked
components of two or more form a cluster. Only clusters holding a fragment newer than the last run are
rewritten, which makes a second run with nothing new a no-op. `similarity` is the definition; `cluster`
computes it for all pairs at once (numpy: one matrix product of the normalized embeddings, keyword
intersections as a product of token incidence matrices, each fragment tokenized once), and decides the
pairs whose cosine lies within rounding distance of the threshold with `cosine` itself, so its links are
exactly those of `similarity`.

Deterministic rewrite (no LLM): the most confirmed, then most recent, statement becomes canonical; the
other distinct statements follow as bullet details (bounded), so nothing said is lost; sources, evidence
and lineage are merged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from core import keywords

# Calibrated on tests/data/distill_cases.json (see CALIBRATION.md): episodic notes about one piece of
# work share specific words (a service, a version, a place); facts and rules must be near-duplicates.
THRESHOLDS = {"episodic": 0.30, "semantic": 0.60, "procedural": 0.60}
# Per vector space (`Embedder.name`), where the cosines live on another scale: multilingual-e5-small puts
# unrelated sentences at 0.75 - 0.87, so the defaults would fold unrelated memories into one cluster
# (measured on the same cases: 3 of them join at 0.30; at 0.88 exactly the 20 fragments cluster).
CALIBRATED_THRESHOLDS: dict[str, dict[str, float]] = {
    "multilingual-e5-small-q4": {"episodic": 0.88, "semantic": 0.92, "procedural": 0.92},
}


def thresholds_for(vector_space: str) -> dict[str, float]:
    """The clustering thresholds for vectors of `vector_space` (an embedder's `name`)."""
    return CALIBRATED_THRESHOLDS.get(vector_space, THRESHOLDS)

_GENERIC = frozenset({"user", "用户", "project", "项目", "team", "团队", "we", "our"})
MAX_DETAILS = 8
MAX_DETAIL_CHARS = 160
_BLOCK = 512  # rows of the pairwise matrices computed at once (memory stays O(_BLOCK x fragments))
# a cosine computed by numpy differs from `cosine`'s by rounding only (~1e-14); pairs whose numpy cosine is
# this close to the threshold are decided by `cosine` itself
_EXACT_BAND = 1e-9


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


def _unit_rows(embeddings: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to unit length (zero rows stay zero) and which rows had a norm. Shorter vectors are
    padded with zeros, which leaves every dot product and norm as `cosine` computes it (zip stops at the
    shorter vector; the norms are over whole vectors)."""
    dim = max((len(e) for e in embeddings), default=0)
    if all(len(e) == dim for e in embeddings):
        emb = np.array(embeddings, dtype=np.float64).reshape(len(embeddings), dim)
    else:
        emb = np.zeros((len(embeddings), dim))
        for i, e in enumerate(embeddings):
            emb[i, : len(e)] = e
    norms = np.sqrt(np.einsum("ij,ij->i", emb, emb))
    has_norm = norms != 0
    return emb / np.where(has_norm, norms, 1.0)[:, None], has_norm


def _links(
    group: Sequence[Fragment], tokens: Sequence[frozenset[str]], limit: float
) -> list[tuple[int, int]]:
    """Pairs (i, j), i < j, of `group` (one kind) whose `similarity` reaches `limit`."""
    n = len(group)
    unit, has_norm = _unit_rows([f.embedding for f in group])
    # keyword overlap |a & b| / min(|a|, |b|): only tokens held by two or more fragments can be shared
    counts: dict[str, int] = {}
    for toks in tokens:
        for t in toks:
            counts[t] = counts.get(t, 0) + 1
    shared = {t: k for k, t in enumerate(t for t, c in counts.items() if c > 1)}
    incidence = np.zeros((n, len(shared)), dtype=np.float32)  # 0/1: counts stay exact integers
    for i, toks in enumerate(tokens):
        cols = [shared[t] for t in toks if t in shared]
        incidence[i, cols] = 1.0
    sizes = np.array([len(t) for t in tokens], dtype=np.float64)
    edges: list[tuple[int, int]] = []
    for start in range(0, n, _BLOCK):
        rows = slice(start, min(n, start + _BLOCK))
        cos = unit[rows] @ unit.T
        cos[~has_norm[rows], :] = 0.0
        cos[:, ~has_norm] = 0.0
        smaller = np.minimum.outer(sizes[rows], sizes)
        inter = (incidence[rows] @ incidence.T).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            words = np.where(smaller > 0, inter / smaller, 0.0) * 0.6
        upper = np.arange(n)[None, :] > np.arange(rows.start, rows.stop)[:, None]  # each pair once
        by_words = (words >= limit) & ~np.isnan(cos)  # max(nan, w) is nan in `similarity`: never linked
        linked = upper & ((cos >= limit) | by_words)
        near = upper & ~by_words & (np.abs(cos - limit) <= _EXACT_BAND)
        for i, j in zip(*np.nonzero(near), strict=True):
            a, b = group[start + int(i)], group[int(j)]
            linked[i, j] = max(cosine(a.embedding, b.embedding), float(words[i, j])) >= limit
        edges += [(start + int(i), int(j)) for i, j in zip(*np.nonzero(linked), strict=True)]
    return edges


def cluster(
    fragments: Sequence[Fragment],
    *,
    new_since: datetime | None = None,
    thresholds: dict[str, float] | None = None,
) -> list[list[Fragment]]:
    """Clusters of two or more fragments of one kind; slotted fragments are left alone (one value per slot
    is reconciliation's job). With `new_since`, only clusters holding a fragment recorded after it.

    Two fragments of one kind are linked when `similarity(a, b) >= thresholds[kind]` (0.6 for a kind
    without a threshold); clusters are the linked components."""
    limits = thresholds or THRESHOLDS
    eligible = [f for f in fragments if f.slot is None]
    parent = list(range(len(eligible)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_kind: dict[str, list[int]] = {}
    for i, f in enumerate(eligible):
        by_kind.setdefault(f.kind, []).append(i)
    for kind, idx in by_kind.items():
        if len(idx) < 2:
            continue
        group = [eligible[i] for i in idx]
        tokens = [topic_tokens(f.content) for f in group]
        for i, j in _links(group, tokens, limits.get(kind, 0.6)):
            parent[find(idx[i])] = find(idx[j])
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
