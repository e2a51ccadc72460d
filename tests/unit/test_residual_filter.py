"""The residual sentence filter (core/extraction/residual.py): what the rules left of a turn, kept without an
LLM. Its features, its guard, its candidates, where the window plan uses it, and the training labels.

The model's own quality is measured by `python -m bench.train_residual --check` (leave one blind round out)
and end to end by `bench.extraction_quality`; the behaviour checks here use sentences written for this file
(none of them is in the corpus) and ask for a clear majority, so that a retrained model that still works
passes and one that keeps everything or nothing fails.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.train_residual import sentence_rows
from core.extraction import residual_weights
from core.extraction.candidates import Kind, Tier, Turn
from core.extraction.residual import (
    CONFIDENCE_CEIL,
    MAX_PER_TURN,
    features,
    keep_probability,
    must_probability,
    residual_candidates,
    untouched_sentences,
)
from worker.services.window import PendingEvent, plan_window

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

WORTH_KEEPING = [
    "Our staging cluster runs on Hetzner and the database is Postgres 16.",
    "I'm a nurse on night shifts, so I usually write to you around 3am.",
    "My daughter is lactose intolerant, keep that in mind for recipes.",
    "The monorepo is built with Bazel and deployed with Argo CD.",
    "我们组的后端全是 Kotlin，数据库用的 TiDB。",
    "我在杭州上班，平时通勤骑电动车。",
    "以后生成的 SQL 一律加上 schema 前缀。",
    "我对海鲜过敏，推荐菜的时候注意一下。",
]
NOTHING_TO_KEEP = [
    "What's the difference between a mutex and a semaphore?",
    "Can you translate this paragraph into French?",
    "lol that's hilarious",
    "How many tablespoons are in a cup?",
    "帮我把这段话翻译成英文。",
    "今天天气怎么样？",
    "哈哈哈好的",
    "这个报错是什么意思？",
]


def test_features_are_pure_and_read_both_scripts() -> None:
    text = "We deploy on Fridays. 我们用 Go 写服务"
    assert features(text) == features(text)
    f = features(text)
    assert {"w:we", "w:deploy", "b:we_deploy", "w:go", "w:我", "w:我们", "w:服务"} <= set(f)
    assert features("is it on k8s?")["q"] == 1.0 and features("it is on k8s")["q"] == 0.0
    assert 0 < f["len"] <= 1.0


def test_the_weights_module_is_a_trained_model() -> None:
    assert 0.5 <= residual_weights.THRESHOLD < 1.0
    assert len(residual_weights.KEEP) > 1000 and len(residual_weights.MUST) > 500
    assert all(isinstance(v, float) and v != 0.0 for v in residual_weights.KEEP.values())


def test_the_model_keeps_statements_and_drops_requests_and_chatter_in_both_languages() -> None:
    kept = [s for s in WORTH_KEEPING if keep_probability(s) >= residual_weights.THRESHOLD]
    dropped = [s for s in NOTHING_TO_KEEP if keep_probability(s) < residual_weights.THRESHOLD]
    assert len(kept) >= 5, kept  # of 8
    assert len(dropped) == len(NOTHING_TO_KEEP), set(NOTHING_TO_KEEP) - set(dropped)


UNTOUCHED = "The family reunion is every August at my uncle's farm in Ohio. Any packing tips?"


def test_candidates_are_the_users_sentences_verbatim_without_a_slot_and_below_the_rules_confidence() -> None:
    turn = Turn(event_id="e1", role="user", content=UNTOUCHED, source_turn_id="t1")
    cands = residual_candidates(turn, UNTOUCHED, lang="en")
    assert [c.content for c in cands] == ["The family reunion is every August at my uncle's farm in Ohio."]
    (c,) = cands
    assert c.slot is None and c.value is None
    assert c.origin == "residual" and c.rule == "residual_model"
    assert c.source_event_ids == ("e1",) and c.source_turn_ids == ("t1",)
    assert 0 < c.confidence <= CONFIDENCE_CEIL < 0.7
    assert c.tier in (Tier.MUST, Tier.WORTH) and c.kind in (Kind.SEMANTIC, Kind.PROCEDURAL)


def test_only_sentences_no_rule_touched_are_read() -> None:
    text = "我在杭州上班，平时通勤骑电动车。家里有两只猫，一只叫豆豆。帮我看看这个路线。"
    # the rules matched the first sentence in part: its remnant is not a sentence of its own
    residual = "上班,平时通勤骑电动车. | 家里有两只猫,一只叫豆豆. | 帮我看看这个路线."
    assert untouched_sentences(text, residual) == ["家里有两只猫,一只叫豆豆.", "帮我看看这个路线."]
    assert untouched_sentences(UNTOUCHED, UNTOUCHED) == [
        "The family reunion is every August at my uncle's farm in Ohio.",
        "Any packing tips?",
    ]


def test_an_assistant_turn_or_an_empty_residual_gives_nothing() -> None:
    text = WORTH_KEEPING[0]
    assert residual_candidates(Turn(event_id="e1", role="assistant", content=text), text, lang="en") == []
    assert residual_candidates(Turn(event_id="e1", role="user", content=text), "  ", lang="en") == []


def test_a_sentence_that_weighs_or_has_not_decided_is_never_kept() -> None:
    for text, lang in [
        ("We're debating Bun versus staying on Node, nothing decided yet.", "en"),
        ("I haven't decided whether to move to Lisbon or Porto.", "en"),
        ("What if we ran everything on Fly.io instead?", "en"),
        ("我们在考虑要不要把监控换成 Prometheus，还没拍板。", "zh"),
        ("假如明年搬去成都，房租大概多少？", "zh"),
    ]:
        assert residual_candidates(Turn(event_id="e", role="user", content=text), text, lang=lang) == [], text


def test_a_sentence_naming_a_value_the_rules_know_is_left_to_the_rules() -> None:
    # the rules read it and refused it (practice work, someone else's setup), or a copy without a slot could
    # never be replaced when the value changes
    text = "我们的对象存储用的是七牛，上传的文件都在那。"  # the model alone would keep it
    assert keep_probability(text) >= residual_weights.THRESHOLD
    assert residual_candidates(Turn(event_id="e", role="user", content=text), text, lang="zh") == []
    other = "Our on-call handbook lives in the team wiki, under Runbooks."  # no value the vocabulary knows
    assert keep_probability(other) < residual_weights.THRESHOLD or residual_candidates(
        Turn(event_id="e", role="user", content=other), other, lang="en"
    )


def test_a_must_needs_a_directive_as_well_as_the_models_word() -> None:
    # a MUST memory is put before the agent as a rule in every context block
    boast = "I'm not gonna let anything or anyone stop me."
    assert must_probability(boast) >= 0.5  # the negation is what the MUST model weighs
    for cand in residual_candidates(Turn(event_id="e", role="user", content=boast), boast, lang="en"):
        assert cand.tier is Tier.WORTH and cand.kind is Kind.SEMANTIC
    rule = "以后回复都用中文"
    (cand,) = residual_candidates(Turn(event_id="e", role="user", content=rule), rule, lang="zh")
    assert cand.tier is Tier.MUST and cand.kind is Kind.PROCEDURAL


def test_a_long_turn_keeps_at_most_its_best_few_sentences_once_each_in_turn_order() -> None:
    english = [s for s in WORTH_KEEPING if s.isascii()]
    # a turn no rule touched: the whole of it is residual
    text = " ".join([*english, *english, *NOTHING_TO_KEEP[:2]])
    cands = residual_candidates(Turn(event_id="e", role="user", content=text), text, lang="en")
    assert 1 <= len(cands) <= MAX_PER_TURN
    contents = [c.content for c in cands]
    assert len(set(contents)) == len(contents)  # a sentence said twice is kept once
    positions = [text.index(c) for c in contents]
    assert positions == sorted(positions)


def _event(i: int, content: str, *, status: str = "pending") -> PendingEvent:
    return PendingEvent(
        event_id=f"e{i}",
        type="turn",
        role="user",
        content=content,
        source_turn_id=f"t{i}",
        event_time=NOW - timedelta(days=3) + timedelta(seconds=i),
        status=status,
        agent_id=None,
        received_at=NOW,
    )


def test_the_plan_uses_the_filter_only_when_asked_and_only_for_new_turns() -> None:
    text = UNTOUCHED
    events = [
        _event(1, text),
        _event(2, "我在杭州上班，平时通勤骑电动车。家里有两只猫，一只叫豆豆。帮我看看这个路线。"),
    ]
    with_filter = plan_window(events, llm_available=False, residual=True)
    without = plan_window(events, llm_available=False)
    residual = [c for c in with_filter.rule_candidates if c.origin == "residual"]
    assert residual and all(c.origin != "residual" for c in without.rule_candidates)
    assert {c.source_event_ids[0] for c in residual} <= {"e1", "e2"}
    # a turn already waiting for the LLM had its rule pass in an earlier run: nothing is added for it now
    pending = plan_window([_event(1, text, status="llm_pending")], llm_available=False, residual=True)
    assert not any(c.origin == "residual" for c in [*pending.rule_candidates, *pending.earlier_candidates])


def test_training_labels_come_from_the_cases_sentence_by_sentence(tmp_path: Path) -> None:
    cases = [
        {"id": "x-1", "type": "single", "lang": "en", "form": "in_passing",
         "turns": [{"role": "user", "text": "We deploy with Nomad. Can you check this job file?"}],
         "expect": [{"tier": "worth", "terms": [["nomad"]]}], "forbid": [], "allow": []},
        {"id": "x-2", "type": "single", "lang": "en", "form": "question",
         "turns": [{"role": "user", "text": "How does Nomad compare to Kubernetes?"}],
         "expect": [], "forbid": [[["kubernetes"]]], "allow": []},
        {"id": "x-3", "type": "single", "lang": "en", "form": "rule",
         "turns": [{"role": "user", "text": "Never log tokens. My cat is called Miso."}],
         "expect": [{"tier": "must", "terms": [["log"], ["token", "tokens"]]}], "forbid": [],
         "allow": [[["miso"]]]},
    ]  # fmt: skip
    (tmp_path / "dev_en.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    (tmp_path / "test_en.jsonl").write_text(json.dumps({**cases[0], "id": "t-1"}) + "\n")  # never read
    rows = {r.text: (r.keep, r.must, r.nothing) for r in sentence_rows(tmp_path)}
    assert rows == {
        "We deploy with Nomad.": (1, 0, False),
        "Can you check this job file?": (0, 0, False),
        "How does Nomad compare to Kubernetes?": (0, 0, True),
        "Never log tokens.": (1, 1, False),
        # "My cat is called Miso." matches only an allowed memory: left out of training
    }
