"""The LoCoMo scorer on hand-made cases: recall, recall-all, NDCG, MRR, the token budget cut, aggregation."""

from __future__ import annotations

import math

import pytest

from bench.lib.scorer import (
    Result,
    aggregate,
    hit_at,
    ndcg_at,
    parse_evidence,
    recall_all_at,
    recall_at,
    recall_within_budget,
    reciprocal_rank,
    score_question,
    within_budget,
)


def r(*turns: str, tokens: int = 10) -> Result:
    return Result(tuple(turns), tokens)


EVIDENCE = {"D1:3", "D2:5"}


def test_recall_at_k_is_the_share_of_evidence_turns_cited_by_the_union_of_the_top_k():
    results = [r("D9:9"), r("D1:3"), r("D4:4"), r("D2:5", "D1:3")]
    assert recall_at(EVIDENCE, results, 1) == 0.0
    assert recall_at(EVIDENCE, results, 2) == 0.5
    assert recall_at(EVIDENCE, results, 3) == 0.5
    assert recall_at(EVIDENCE, results, 4) == 1.0
    assert recall_at(EVIDENCE, results, 25) == 1.0  # k past the end counts what was returned


def test_one_memory_citing_several_evidence_turns_covers_them_all():
    assert recall_at(EVIDENCE, [r("D1:3", "D2:5", "D7:1")], 1) == 1.0


def test_citing_the_same_evidence_turn_twice_does_not_count_it_twice():
    assert recall_at(EVIDENCE, [r("D1:3"), r("D1:3")], 2) == 0.5


def test_recall_all_is_one_only_when_every_evidence_turn_is_in_the_top_k():
    results = [r("D1:3"), r("D8:1"), r("D2:5")]
    assert recall_all_at(EVIDENCE, results, 2) == 0.0
    assert recall_all_at(EVIDENCE, results, 3) == 1.0
    assert hit_at(EVIDENCE, results, 1) == 1.0
    assert hit_at(EVIDENCE, [r("D8:1")], 10) == 0.0


def test_ndcg_is_one_when_the_relevant_results_come_first():
    assert ndcg_at(EVIDENCE, [r("D1:3"), r("D2:5"), r("D8:1")], 10) == pytest.approx(1.0)


def test_ndcg_discounts_a_relevant_result_by_the_log_of_its_rank():
    # one relevant result at rank 3 out of an ideal of two (two evidence turns): (1/log2 4) / (1 + 1/log2 3)
    got = ndcg_at(EVIDENCE, [r("D8:1"), r("D8:2"), r("D1:3")], 10)
    assert got == pytest.approx((1 / math.log2(4)) / (1 + 1 / math.log2(3)))


def test_ndcg_never_exceeds_one_when_a_memory_and_a_turn_cite_the_same_single_evidence_turn():
    results = [r("D1:3", "D1:4"), r("D1:3")]
    assert ndcg_at({"D1:3"}, results, 10) == pytest.approx(1.0)
    assert ndcg_at({"D1:3"}, [r("D8:1"), *results], 10) < 1.0


def test_ndcg_only_looks_at_the_top_k():
    assert ndcg_at({"D1:3"}, [r("D8:1"), r("D1:3")], 1) == 0.0


def test_mrr_is_the_inverse_rank_of_the_first_result_citing_any_evidence_turn():
    assert reciprocal_rank(EVIDENCE, [r("D8:1"), r("D8:2"), r("D2:5"), r("D1:3")]) == pytest.approx(1 / 3)
    assert reciprocal_rank(EVIDENCE, [r("D1:3")]) == 1.0
    assert reciprocal_rank(EVIDENCE, [r("D8:1")]) == 0.0
    assert reciprocal_rank(EVIDENCE, []) == 0.0


def test_the_token_budget_takes_results_in_rank_order_while_they_fit_and_never_cuts_one():
    results = [r("D8:1", tokens=300), r("D1:3", tokens=200), r("D2:5", tokens=100)]
    assert within_budget(results, 512) == results[:2]  # 300 + 200 fit; + 100 would be 600
    assert recall_within_budget(EVIDENCE, results, 512) == 0.5
    assert recall_within_budget(EVIDENCE, results, 600) == 1.0  # exactly full counts as fitting


def test_the_token_budget_stops_at_the_first_result_that_does_not_fit_even_if_a_later_one_would():
    results = [r("D8:1", tokens=100), r("D1:3", tokens=3000), r("D2:5", tokens=10)]
    assert within_budget(results, 512) == results[:1]
    assert recall_within_budget(EVIDENCE, results, 512) == 0.0


def test_a_first_result_larger_than_the_budget_leaves_nothing():
    assert recall_within_budget(EVIDENCE, [r("D1:3", tokens=2049)], 2048) == 0.0


def test_result_of_counts_tokens_with_the_project_estimate():
    assert Result.of("abcd" * 10, ["D1:1"]) == Result(("D1:1",), 10)


def test_evidence_ids_are_normalised_and_irregular_entries_kept_where_they_hold_an_id():
    assert parse_evidence(["D1:3", "D8:6; D9:17", "D:11:26", "D", ""]) == {"D1:3", "D8:6", "D9:17", "D11:26"}


def test_a_question_score_carries_every_metric_and_the_tokens_of_each_prefix():
    results = [r("D8:1", tokens=50), r("D1:3", "D1:4", tokens=20), r("D2:5", tokens=30)]
    s = score_question(EVIDENCE, results, category=1, ks=(1, 2, 3), budgets=(60, 100))
    assert s.recall_at == {1: 0.0, 2: 0.5, 3: 1.0}
    assert s.tokens == 100
    assert s.tokens_at == {1: 50, 2: 70, 3: 100}
    assert s.source_turns_per_item == pytest.approx(4 / 3)
    assert s.recall_within == {60: 0.0, 100: 1.0}
    assert s.mrr == 0.5
    assert s.recall_all_at_10 == 1.0


def test_questions_without_evidence_are_counted_but_left_out_of_the_recall_means():
    scores = [
        score_question({"D1:1"}, [r("D1:1")], category=4, ks=(1,)),
        score_question(set(), [r("D1:1", tokens=30)], category=4, ks=(1,)),
        score_question({"D1:1"}, [r("D2:2")], category=2, ks=(1,)),
    ]
    agg = aggregate(scores)
    single_hop = agg["by_category"]["4"]
    assert single_hop["questions"] == 2
    assert single_hop["no_evidence"] == 1
    assert single_hop["recall_at"][1] == 1.0
    assert single_hop["tokens_per_query"] == 20.0  # tokens cover every question
    assert agg["overall"]["recall_at"][1] == 0.5


def test_the_adversarial_category_is_only_in_the_overall_figure_that_names_it():
    scores = [
        score_question({"D1:1"}, [r("D1:1")], category=4, ks=(1,)),
        score_question({"D1:1"}, [r("D2:2")], category=5, ks=(1,)),
    ]
    agg = aggregate(scores)
    assert agg["overall"]["recall_at"][1] == 1.0
    assert agg["overall_with_adversarial"]["recall_at"][1] == 0.5
    assert agg["by_category"]["5"]["name"] == "adversarial"
