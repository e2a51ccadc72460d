"""The rule extractor against the labelled bilingual data set, and focused checks of its candidates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.extraction.candidates import Candidate, Category, Kind, Operation, Tier, Turn
from core.extraction.gate import GateDecision, gate_turn
from core.extraction.rules import extract_rules, extract_turn

CASES_PATH = Path(__file__).resolve().parents[1] / "data" / "extraction_cases.jsonl"
CASES: list[dict[str, Any]] = [
    json.loads(line) for line in CASES_PATH.read_text(encoding="utf-8").splitlines() if line.strip()
]


def _turn(text: str, *, event_id: str = "e1", role: str = "user", turn_id: str | None = None) -> Turn:
    return Turn(event_id=event_id, role=role, content=text, source_turn_id=turn_id)


def _case_turn(case: dict[str, Any]) -> Turn:
    return _turn(case["text"], event_id=case["id"], role=case["role"])


def _matches(cand: Candidate, expected: dict[str, Any]) -> bool:
    """By (op, slot, value) when the expectation names a slot, else by (op, kind, category)."""
    if cand.op.value != expected["op"]:
        return False
    if expected["slot"] is not None:
        if cand.slot != expected["slot"]:
            return False
        return expected["value"] is None or (cand.value or "").casefold() == str(expected["value"]).casefold()
    return bool(cand.kind.value == expected["kind"] and cand.category.value == expected["category"])


def _score() -> tuple[float, float, list[str]]:
    produced = correct = must_expected = must_found = 0
    problems: list[str] = []
    for case in CASES:
        candidates = extract_rules([_case_turn(case)])
        for cand in candidates:
            produced += 1
            if any(_matches(cand, expected) for expected in case["expect"]):
                correct += 1
            else:
                problems.append(f"{case['id']}: unexpected {cand.slot}={cand.value} {cand.content!r}")
        for expected in (e for e in case["expect"] if e["tier"] == "must"):
            must_expected += 1
            if any(_matches(c, expected) and c.tier is Tier.MUST for c in candidates):
                must_found += 1
            else:
                problems.append(f"{case['id']}: missed MUST {expected}")
    return correct / max(produced, 1), must_found / max(must_expected, 1), problems


# ---------------------------------------------------------------- the data set itself


def test_the_data_set_is_large_bilingual_and_has_enough_empty_cases() -> None:
    languages = [case["lang"] for case in CASES]
    assert len(CASES) >= 140
    assert abs(languages.count("en") - languages.count("zh")) <= len(CASES) // 10
    assert sum(1 for case in CASES if not case["expect"]) >= 35
    assert len({case["id"] for case in CASES}) == len(CASES)


def test_every_labelled_case_uses_known_values() -> None:
    for case in CASES:
        assert case["lang"] in ("en", "zh") and case["role"] == "user" and case["text"]
        assert case.get("gate") in (None, "skip", "rules_only", "needs_llm")
        for expected in case["expect"]:
            (
                Tier(expected["tier"]),
                Kind(expected["kind"]),
                Category(expected["category"]),
                Operation(expected["op"]),
            )
            assert expected["slot"] is None or "." in expected["slot"]


# ---------------------------------------------------------------- scores on the labelled set


def test_rule_extractor_precision_is_at_least_95_percent() -> None:
    precision, _, problems = _score()
    assert precision >= 0.95, "\n".join(problems)


def test_must_tier_recall_is_at_least_90_percent() -> None:
    _, must_recall, problems = _score()
    assert must_recall >= 0.90, "\n".join(problems)


def test_cases_expecting_nothing_produce_nothing() -> None:
    noisy = [(case["id"], extract_rules([_case_turn(case)])) for case in CASES if not case["expect"]]
    assert [(case_id, found) for case_id, found in noisy if found] == []


@pytest.mark.parametrize(
    "case", [c for c in CASES if any(e["tier"] == "must" for e in c["expect"])], ids=lambda case: case["id"]
)
def test_the_gate_never_skips_a_turn_with_a_must_expectation(case: dict[str, Any]) -> None:
    assert gate_turn(_case_turn(case)).decision is not GateDecision.SKIP


# ---------------------------------------------------------------- focused checks


def test_a_candidate_carries_its_sources_origin_rule_and_language() -> None:
    [cand] = extract_rules([_turn("I live in Berlin.", event_id="ev-7", turn_id="t-3")])
    assert cand.source_event_ids == ("ev-7",)
    assert cand.source_turn_ids == ("t-3",)
    assert cand.origin == "rules"
    assert cand.rule and cand.rule.startswith("en.")
    assert cand.lang == "en"
    assert 0.0 <= cand.confidence <= 1.0
    assert (cand.kind, cand.category, cand.tier) == (Kind.SEMANTIC, Category.PROFILE, Tier.WORTH)


def test_a_turn_without_a_source_turn_id_has_no_turn_ids() -> None:
    [cand] = extract_rules([_turn("我住在上海。")])
    assert cand.source_turn_ids == ()


def test_content_is_a_third_person_statement_in_the_users_language() -> None:
    [english] = extract_rules([_turn("My name is Alice.")])
    [chinese] = extract_rules([_turn("我叫小王。")])
    assert english.content == "The user's name is Alice."
    assert chinese.content == "用户叫小王。"
    assert chinese.lang == "zh"


def test_preferences_read_as_statements_about_the_user_in_both_languages() -> None:
    [english] = extract_rules([_turn("I prefer concise answers.")])
    [chinese] = extract_rules([_turn("我喜欢简洁的回复。")])
    assert english.content == "The user prefers concise answers."
    assert chinese.content == "用户喜欢简洁的回复。"
    assert (english.slot, english.value) == (chinese.slot, chinese.value) == ("user.reply_style", "concise")


def test_procedural_rules_are_imperatives_in_both_languages() -> None:
    [english] = extract_rules([_turn("don't use ORMs")])
    [chinese] = extract_rules([_turn("别用 ORM")])
    assert english.content == "Do not use ORMs."
    assert chinese.content == "不要使用 ORM。"
    for cand in (english, chinese):
        assert (cand.kind, cand.tier, cand.slot) == (Kind.PROCEDURAL, Tier.MUST, None)


@pytest.mark.parametrize("spelling", ["Postgres", "PG", "postgres", "PostgreSQL", "postgresql"])
def test_tool_names_are_canonicalised(spelling: str) -> None:
    [cand] = extract_rules([_turn(f"Our project uses {spelling}.")])
    assert (cand.slot, cand.value) == ("project.database", "postgresql")


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("I'm a backend developer at Acme.", "user.employer", "Acme"),
        ("Call me Al.", "user.address_as", "Al"),
        ("I moved to Paris last month.", "user.location", "Paris"),
        ("项目用 PostgreSQL", "project.database", "postgresql"),
        ("我们用的是 pnpm", "project.package_manager", "pnpm"),
        ("叫我小王就行", "user.address_as", "小王"),
        ("我搬到了深圳", "user.location", "深圳"),
        ("我在字节做产品经理", "user.job", "产品经理"),
        ("Always answer in English from now on.", "user.reply_language", "en"),
    ],
)
def test_single_valued_facts_get_a_slot_and_a_canonical_value(text: str, slot: str, value: str) -> None:
    assert (slot, value) in {(c.slot, c.value) for c in extract_rules([_turn(text)])}


def test_multi_valued_likes_have_no_slot() -> None:
    [cand] = extract_rules([_turn("I really like hiking and bouldering.")])
    assert (cand.slot, cand.category) == (None, Category.PREFERENCE)


@pytest.mark.parametrize("text", ["no, it's pnpm, not npm", "不是 npm，是 pnpm", "Actually I use pnpm."])
def test_corrections_are_must_and_keep_the_corrected_value(text: str) -> None:
    [cand] = extract_rules([_turn(text)])
    assert (cand.tier, cand.slot, cand.value) == (Tier.MUST, "project.package_manager", "pnpm")


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("Please forget my address.", "user.location"),
        ("忘掉我的地址", "user.location"),
        ("别记我的生日了", "user.birthday"),
        ("Forget that I live in Berlin.", "user.location"),
    ],
)
def test_forget_requests_produce_a_must_forget_candidate(text: str, slot: str) -> None:
    [cand] = extract_rules([_turn(text)])
    assert (cand.op, cand.tier, cand.slot) == (Operation.FORGET, Tier.MUST, slot)


def test_explicit_remember_requests_are_must_in_both_languages() -> None:
    found = extract_rules([_turn("thanks! and remember I'm vegetarian"), _turn("请记住，我对花生过敏。")])
    assert [c.tier for c in found] == [Tier.MUST, Tier.MUST]
    assert found[0].slot == "user.diet" and found[1].content == "用户对花生过敏。"


def test_assistant_turns_state_no_user_facts() -> None:
    assert extract_rules([_turn("I live in Berlin and my name is Alice.", role="assistant")]) == []


def test_assistant_turns_are_read_when_asked_for() -> None:
    turn = _turn("I live in Berlin.", role="assistant")
    assert [c.value for c in extract_turn(turn, roles=("user", "assistant"))] == ["Berlin"]


def test_code_blocks_and_quoted_lines_are_not_statements() -> None:
    text = "Here is the fixture:\n```\nmy name is Bob\nI live in Paris\n```\n> I live in Madrid\n"
    assert extract_rules([_turn(text)]) == []


def test_duplicates_in_a_window_fold_into_one_candidate_with_all_sources() -> None:
    turns = [
        _turn("We use pnpm.", event_id="a"),
        _turn("ok", event_id="b"),
        _turn("我们用的是 pnpm", event_id="c"),
    ]
    [cand] = extract_rules(turns)
    assert cand.source_event_ids == ("a", "c")


def test_a_repeated_value_moves_to_where_it_was_last_said() -> None:
    turns = [
        _turn("We use npm.", event_id="a"),
        _turn("We use pnpm.", event_id="b"),
        _turn("We use npm.", event_id="c"),
    ]
    assert [c.value for c in extract_rules(turns)] == ["pnpm", "npm"]


def test_a_repeated_statement_keeps_the_higher_tier() -> None:
    turns = [_turn("I live in Berlin.", event_id="a"), _turn("Remember that I live in Berlin.", event_id="b")]
    [cand] = extract_rules(turns)
    assert cand.tier is Tier.MUST and cand.source_event_ids == ("a", "b")


@pytest.mark.parametrize(
    "text",
    [
        "Do you remember my name?",
        "你记得我叫什么吗？",
        "If I moved to Paris, would that change anything?",
        "如果我搬到深圳会怎样",
        "My friend lives in Tokyo.",
        "我朋友住在东京",
        "我不住在北京了",
        "My boss says we use Jira.",
        "他说我住在上海",
    ],
)
def test_questions_hypotheticals_third_persons_and_negations_yield_nothing(text: str) -> None:
    assert extract_rules([_turn(text)]) == []


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("I don't live in Berlin anymore.", "Berlin"),
        ("我不再负责支付了", "支付"),
        ("we don't use Jenkins anymore", "Jenkins"),
    ],
)
def test_a_state_denied_as_over_stores_nothing_and_ends_what_it_names(text: str, left: str) -> None:
    """Nothing new to store, but the old value is over: one `end` of it (reconciliation ends the current
    memories that name it)."""
    [cand] = extract_rules([_turn(text)])
    assert (cand.op, cand.value) == (Operation.END, left)


@pytest.mark.parametrize("text", ["REMEMBER-、", "remember: …", "请记住：。"])
def test_a_remember_request_with_nothing_to_keep_yields_no_empty_memory(text: str) -> None:
    """Found by Hypothesis: "REMEMBER-、" gave a MUST candidate with empty content."""
    assert all(c.content.strip() for c in extract_turn(_turn(text)))
