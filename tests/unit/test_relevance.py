"""The relevance floor's pure parts: what counts as a query without a topic, how the two signals combine,
and the keyword coverage the search computes."""

from __future__ import annotations

import pytest

from core.relevance import DEFAULT_FLOORS, NO_FLOOR, RelevanceFloor, floor_for, has_topic, topical_text
from store.search import idf_weights, keyword_coverage


@pytest.mark.parametrize(
    "query",
    ["hi", "Hello there!", "hey, good morning", "thanks, got it", "ok cool", "sounds good", "👍", "", "你好",
     "谢谢，明白了", "好的", "早上好呀", "辛苦了，再见", "ok 好的 thanks!"],
)
def test_greetings_thanks_and_assent_have_no_topic(query: str) -> None:
    assert not has_topic(query), topical_text(query)


@pytest.mark.parametrize(
    "query",
    ["hi, which region do we deploy to?", "thanks! now fix the CI", "what should I feed my cat?", "go 1.22",
     "你好，帮我看下 Redis 内存", "今天天气怎么样", "好的，那数据库用什么", "k8s", "v2"],
)
def test_anything_beyond_that_is_a_topic(query: str) -> None:
    assert has_topic(query)


def test_the_topical_text_drops_the_social_words_only() -> None:
    assert topical_text("Thanks! which region do we deploy to?").split() == ["!", "which", "region", "do", "deploy", "to?"]
    assert "数据库" in topical_text("好的，谢谢。数据库用什么？")


def test_a_hit_is_kept_on_either_signal_and_no_floor_keeps_everything() -> None:
    floor = RelevanceFloor(min_similarity=0.35, min_keyword_coverage=0.1)
    assert floor.keeps(0.35, None) and floor.keeps(None, 0.1) and floor.keeps(0.1, 0.5)
    assert not floor.keeps(0.34, 0.09) and not floor.keeps(None, None)
    assert NO_FLOOR.keeps(None, None) and RelevanceFloor(0, 0.5).disabled


def test_the_floor_follows_the_embedder_and_its_overrides() -> None:
    assert floor_for("hashing", min_similarity=None, min_keyword_coverage=None) == DEFAULT_FLOORS["hashing"]
    assert floor_for("local", min_similarity=0.6, min_keyword_coverage=None).min_similarity == 0.6
    assert floor_for("unknown", min_similarity=None, min_keyword_coverage=0.0).disabled


def test_keyword_coverage_weighs_rare_words_over_common_ones() -> None:
    # "caroline" is in every document, "adoption" in one: a document holding only the common word stays low
    idf = idf_weights(["caroline", "adoption"], df={"caroline": 3, "adoption": 1}, n_docs=3)
    common, both, rare = keyword_coverage([{"caroline"}, {"caroline", "adoption"}, {"adoption"}], idf)
    assert both == pytest.approx(1.0) and common < 0.25 < rare < 1.0
    assert keyword_coverage([{"x"}], {}) == [0.0]
