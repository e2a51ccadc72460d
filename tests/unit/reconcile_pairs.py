"""The check behind CALIBRATION.md's reconciliation thresholds, for any embedder: on
`tests/data/reconcile_pairs.jsonl`, REINFORCE never merges a related or unrelated pair and catches at least
80 % of the duplicates; a forget request at the embedder's `forget_cosine` reaches every duplicate and no
unrelated statement."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from core.distill import cosine
from core.reconcile import Existing, Op, PendingCandidate, calibrated_policy, decide
from store.embeddings import Embedder

PAIRS = [
    json.loads(line)
    for line in (Path(__file__).parent.parent / "data" / "reconcile_pairs.jsonl").read_text().splitlines()
    if line
]
T = datetime(2026, 1, 1, tzinfo=UTC)


def assert_policy_separates_pairs(embedder: Embedder, name: str) -> None:
    policy = calibrated_policy(name)
    assert policy != calibrated_policy("no such embedder"), f"{name} has no calibrated policy"
    wrong, caught, duplicates = [], 0, 0
    for pair in PAIRS:
        if pair["label"] == "crosslingual":
            continue
        sim = cosine(*embedder.embed([pair["a"], pair["b"]]))
        old = Existing("m", pair["a"], "semantic", "active", T, similarity=sim)
        new = PendingCandidate(pair["b"], "semantic", "remember", T, ("e-new",))
        op = decide(new, neighbours=[old], policy=policy).op
        if pair["label"] == "duplicate":
            duplicates += 1
            caught += op == Op.REINFORCE
            assert sim >= policy.forget_cosine, f"a forget would miss a duplicate: {pair}"
        else:
            if op == Op.REINFORCE:
                wrong.append(pair)
            if pair["label"] == "unrelated":
                assert sim < policy.forget_cosine, f"a forget would reach an unrelated memory: {pair}"
    assert wrong == []
    assert caught / duplicates >= 0.8
