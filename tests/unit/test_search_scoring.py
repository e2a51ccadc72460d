"""Search scoring (pure): BM25 with the user's document frequencies, and reciprocal rank fusion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.scoring import Ranked, decay, rank
from store.search import bm25_scores

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def test_a_rare_shared_token_outranks_a_token_every_document_has():
    docs = [
        {"caroline", "adoption", "agency"},
        {"caroline", "painting", "lake"},
        {"caroline", "melanie", "camping"},
    ]
    scores = bm25_scores(docs, ["caroline", "adoption"], df={"caroline": 3, "adoption": 1}, n_docs=3, avgdl=3)
    assert scores[0] > scores[1] == scores[2]


def test_shorter_documents_win_at_equal_matches():
    docs = [{"pnpm", "a", "b"}, {"pnpm", "a", "b", "c", "d", "e", "f", "g"}]
    scores = bm25_scores(docs, ["pnpm"], df={"pnpm": 2}, n_docs=10, avgdl=5)
    assert scores[0] > scores[1] > 0


def test_fusion_rewards_agreement_and_half_lives_fade_episodic_items():
    both = Ranked("m:1", 0.6, None, NOW, vector_rank=2, keyword_rank=2)
    one = Ranked("m:2", 0.6, None, NOW, vector_rank=1)
    old = Ranked("m:3", 0.6, 30.0, NOW - timedelta(days=90), vector_rank=1, keyword_rank=1)
    ordered = [item.key for item, _ in rank([one, old, both], now=NOW, k=3)]
    assert ordered.index("m:1") < ordered.index("m:2")
    assert decay(half_life_days=30, age_days=30) == 0.5 and decay(half_life_days=None, age_days=999) == 1.0


def test_ties_go_to_the_most_recent_item():
    a = Ranked("m:a", 0.5, None, NOW - timedelta(days=2), vector_rank=1)
    b = Ranked("m:b", 0.5, None, NOW - timedelta(days=1), vector_rank=1)
    assert [i.key for i, _ in rank([a, b], now=NOW, k=2)] == ["m:b", "m:a"]
