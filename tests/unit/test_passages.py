"""Passages: adjacent turn hits of one session merged into one result (pure)."""

from __future__ import annotations

import itertools
import random

from core.passages import MAX_PASSAGE_TURNS, merge_passages

# one session of turns t0..t9, another of u0..u4, and two memories
SESSIONS = [[f"t{i}" for i in range(10)], [f"u{i}" for i in range(5)]]
PREV = {turn: (s[i - 1] if i else None) for s in SESSIONS for i, turn in enumerate(s)}
NEXT = {turn: (s[i + 1] if i + 1 < len(s) else None) for s in SESSIONS for i, turn in enumerate(s)}


def _merge(ranked, k, **kw):
    return merge_passages(
        ranked,
        is_turn={key: not key.startswith("m") for key in ranked},
        previous={key: PREV.get(key) for key in ranked},
        following={key: NEXT.get(key) for key in ranked},
        k=k,
        **kw,
    )


def test_adjacent_hits_join_in_conversation_order_and_keep_the_best_ones_rank():
    assert _merge(["t5", "m1", "t4", "t6", "u0"], k=3) == [["t4", "t5", "t6"], ["m1"], ["u0"]]


def test_turns_of_different_sessions_or_with_a_gap_stay_apart():
    # t9 and u0 are consecutive in the lists but belong to different sessions; t1 and t3 have a gap
    assert _merge(["t9", "u0", "t1", "t3"], k=10) == [["t9"], ["u0"], ["t1"], ["t3"]]


def test_a_passage_stops_at_its_maximum_length():
    assert _merge(["t3", "t4", "t5", "t6", "t2"], k=5, max_turns=3) == [["t3", "t4", "t5"], ["t6"], ["t2"]]


def test_memories_never_join_and_k_bounds_the_results_not_the_turns():
    groups = _merge(["m1", "t1", "m2", "t2", "t0", "m3", "u3"], k=3)
    assert groups == [["m1"], ["t0", "t1", "t2"], ["m2"]]
    # a lower-ranked hit still joins a passage above it after k results exist
    assert _merge(["t1", "u1", "t7", "u2"], k=2) == [["t1"], ["u1", "u2"]]


def test_properties_on_random_rankings():
    rng = random.Random(7)
    everything = [t for s in SESSIONS for t in s] + ["m1", "m2", "m3"]
    for _ in range(500):
        ranked = rng.sample(everything, rng.randint(0, len(everything)))
        k = rng.randint(1, 8)
        groups = _merge(ranked, k=k)
        flat = [key for g in groups for key in g]
        assert len(groups) <= k
        assert len(flat) == len(set(flat)) and set(flat) <= set(ranked)
        for g in groups:
            assert 1 <= len(g) <= MAX_PASSAGE_TURNS
            if len(g) > 1:  # consecutive turns of one session, in order
                assert all(NEXT[a] == b for a, b in itertools.pairwise(g))
        # results come in the order of their best-ranked member
        firsts = [min(ranked.index(key) for key in g) for g in groups]
        assert firsts == sorted(firsts)
        # nothing better-ranked than the last result's best member was dropped
        if groups:
            cutoff = firsts[-1]
            assert set(ranked[: cutoff + 1]) <= set(flat)
