"""The vectorized `cluster` links exactly the pairs the pure-Python definition (`similarity` for every pair
of one kind, union-find) links: same clusters, same order, on random fragments built to sit on and around
the thresholds (near-duplicate vectors, shared words, zero and shorter vectors, several kinds, slots)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from core import distill
from core.distill import THRESHOLDS, Fragment, cluster, cosine, similarity

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WORDS = (
    "billing deploy pool postgres redis timeout 账单 部署 连接池 user project alpha beta gamma delta".split()
)


def reference_cluster(
    fragments: Sequence[Fragment],
    *,
    new_since: datetime | None = None,
    thresholds: dict[str, float] | None = None,
) -> list[list[Fragment]]:
    """The pure-Python definition `cluster` had before it was vectorized (kept here verbatim)."""
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


def _unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v] if n else v


def _at_cosine(rng: random.Random, base: list[float], target: float) -> list[float]:
    """A vector whose cosine with `base` is `target` (up to rounding)."""
    u = _unit(base)
    r = [rng.gauss(0, 1) for _ in base]
    d = sum(x * y for x, y in zip(r, u, strict=True))
    w = _unit([x - d * y for x, y in zip(r, u, strict=True)])
    s = math.sqrt(max(0.0, 1 - target * target))
    scale = rng.choice((1.0, 0.37, 12.5))
    return [scale * (target * x + s * y) for x, y in zip(u, w, strict=True)]


def _fragments(rng: random.Random, n: int, dim: int) -> list[Fragment]:
    kinds = ("episodic", "semantic", "procedural", "other")
    bases = [[rng.gauss(0, 1) for _ in range(dim)] for _ in range(3)]
    out = []
    for k in range(n):
        kind = rng.choice(kinds)
        roll = rng.random()
        if roll < 0.05:
            emb: tuple[float, ...] = ()
        elif roll < 0.1:
            emb = (0.0,) * dim
        elif roll < 0.15:
            emb = tuple(rng.gauss(0, 1) for _ in range(dim // 2))  # shorter vector
        else:
            # on, just above or just below the kind's threshold from an earlier fragment, or anywhere
            limit = THRESHOLDS.get(kind, 0.6)
            target = rng.choice((limit, limit, limit + 1e-12, limit - 1e-12, rng.uniform(-0.2, 1.0)))
            earlier = [f.embedding for f in out if len(f.embedding) == dim and any(f.embedding)]
            base = rng.choice(earlier) if earlier and rng.random() < 0.7 else rng.choice(bases)
            emb = tuple(_at_cosine(rng, list(base), min(1.0, target)))
        words = rng.sample(WORDS, rng.randint(0, 5))
        out.append(
            Fragment(
                id=f"f{k:03d}",
                kind=kind,
                category="fact",
                content=" ".join(words) or "the",
                evidence_count=1,
                importance=0.5,
                last_confirmed_at=T0,
                recorded_at=T0 + timedelta(minutes=rng.randint(0, 30)),
                embedding=emb,
                slot="s" if rng.random() < 0.05 else None,
            )
        )
    return out


@pytest.mark.parametrize("seed", range(40))
def test_vectorized_cluster_equals_the_pure_definition(seed: int) -> None:
    rng = random.Random(seed)
    frags = _fragments(rng, rng.randint(0, 70), rng.choice((3, 8, 48)))
    since = T0 + timedelta(minutes=rng.randint(0, 30)) if seed % 3 == 0 else None
    thresholds = {"episodic": 0.3, "semantic": 0.9} if seed % 5 == 0 else None
    got = cluster(frags, new_since=since, thresholds=thresholds)
    want = reference_cluster(frags, new_since=since, thresholds=thresholds)
    assert [[f.id for f in c] for c in got] == [[f.id for f in c] for c in want]


def test_blocks_and_pairs_on_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small row blocks (the pairwise matrices in pieces) and many pairs exactly on a threshold."""
    monkeypatch.setattr(distill, "_BLOCK", 7)
    decided_exactly = []

    def exact(a: Sequence[float], b: Sequence[float]) -> float:
        decided_exactly.append(1)
        return cosine(a, b)

    monkeypatch.setattr(distill, "cosine", exact)
    rng = random.Random(7)
    vectors = [[rng.gauss(0, 1) for _ in range(16)]]
    for k in range(1, 40):  # a chain: each one on the threshold from the one before, or from the first
        vectors.append(_at_cosine(rng, vectors[k - 1] if k % 3 else vectors[0], 0.6))
    frags = [
        Fragment(
            id=f"f{k:03d}",
            kind="semantic",
            category="fact",
            content=f"note{k:03d}",
            evidence_count=1,
            importance=0.5,
            last_confirmed_at=T0,
            recorded_at=T0 + timedelta(seconds=k),
            embedding=tuple(v),
        )
        for k, v in enumerate(vectors)
    ]
    got = cluster(frags)
    assert decided_exactly  # some pairs were within rounding distance of the threshold
    want = reference_cluster(frags)
    assert [[f.id for f in c] for c in got] == [[f.id for f in c] for c in want]
    assert 0 < sum(len(c) for c in want) < len(frags)  # on the threshold both ways: some link, some not


def test_cosine_is_still_the_plain_definition() -> None:
    assert cosine((1.0, 0.0), (1.0, 0.0)) == 1.0
    assert cosine((1.0, 0.0), (0.0, 0.0)) == 0.0
    assert cosine((), ()) == 0.0
