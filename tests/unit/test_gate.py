"""The rule gate: a bilingual decision table, the data set's gate column, and robustness properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.extraction.candidates import Turn
from core.extraction.gate import GateDecision, GateResult, gate_turn, gate_window
from core.extraction.lang import comparison_key, detect_lang, normalize_text
from core.extraction.rules import extract_rules

SKIP, RULES_ONLY, NEEDS_LLM = GateDecision.SKIP, GateDecision.RULES_ONLY, GateDecision.NEEDS_LLM
CASES_PATH = Path(__file__).resolve().parents[1] / "data" / "extraction_cases.jsonl"


def _turn(text: str, *, role: str = "user", event_id: str = "e1") -> Turn:
    return Turn(event_id=event_id, role=role, content=text)


GATE_TABLE: list[tuple[str, str, GateDecision, str | None]] = [
    # role, text, decision, reason (None: any)
    ("user", "", SKIP, "empty"),
    ("user", "   \n\t ", SKIP, "empty"),
    ("user", "hi", SKIP, "greeting"),
    ("user", "Hello there!", SKIP, "greeting"),
    ("user", "Good morning :)", SKIP, "greeting"),
    ("user", "你好", SKIP, "greeting"),
    ("user", "晚上好！", SKIP, "greeting"),
    ("user", "thanks", SKIP, "thanks"),
    ("user", "Thank you so much for your help!", SKIP, "thanks"),
    ("user", "谢谢", SKIP, "thanks"),
    ("user", "非常感谢！", SKIP, "thanks"),
    ("user", "ok", SKIP, "ack"),
    ("user", "got it", SKIP, "ack"),
    ("user", "Sounds good.", SKIP, "ack"),
    ("user", "好的", SKIP, "ack"),
    ("user", "收到", SKIP, "ack"),
    ("user", "嗯嗯", SKIP, "ack"),
    ("user", "好的，谢谢！", SKIP, "ack"),
    ("user", "👍", SKIP, "emoji_only"),
    ("user", "🙏🙏🎉", SKIP, "emoji_only"),
    ("user", "continue", SKIP, "short_chatter"),
    ("user", "继续", SKIP, "short_chatter"),
    ("user", "...", SKIP, "short_chatter"),
    ("user", "```python\nprint('hi')\n```", SKIP, "code_only"),
    ("tool", '{"status": "ok", "rows": 3}', SKIP, "tool_output"),
    ("assistant", "Happy to help!", SKIP, "assistant_smalltalk"),
    ("assistant", "You're welcome! Let me know if you need anything else.", SKIP, "assistant_smalltalk"),
    ("assistant", "有什么可以帮你的吗？", SKIP, "assistant_smalltalk"),
    ("assistant", "不客气！", SKIP, "assistant_smalltalk"),
    ("user", "thanks! and remember I'm vegetarian", RULES_ONLY, "must_candidate"),
    ("user", "谢谢！另外记住我吃素。", RULES_ONLY, "must_candidate"),
    ("user", "Don't use ORMs.", RULES_ONLY, "must_candidate"),
    ("user", "不要用 var", RULES_ONLY, "must_candidate"),
    ("user", "Please forget my address.", RULES_ONLY, "must_candidate"),
    ("user", "I live in Berlin.", RULES_ONLY, "rule_candidate"),
    ("user", "我叫小王。", RULES_ONLY, "rule_candidate"),
    ("user", "We use pnpm for this repo.", RULES_ONLY, "rule_candidate"),
    ("user", "我们用的是 pnpm", RULES_ONLY, "rule_candidate"),
    ("user", "Can you refactor this function to use async/await?", NEEDS_LLM, "substantive"),
    ("user", "帮我看看这个报错是什么原因？", NEEDS_LLM, "substantive"),
    (
        "user",
        "I live in Berlin and I need a dentist who speaks English near my office.",
        NEEDS_LLM,
        "partial_cover",
    ),
    (
        "user",
        # the rules read the old side (Berlin ends) and leave the new place to the LLM
        "I don't live in Berlin anymore, I moved somewhere quieter last year.",
        NEEDS_LLM,
        "partial_cover",
    ),
    ("user", "我最近在考虑换工作，想去做数据相关的岗位。", NEEDS_LLM, "substantive"),
    ("assistant", "Here is the refactored function using async/await.", NEEDS_LLM, "substantive"),
    (
        "user",
        "Remember that I deploy on Fridays, and also explain how the release train works here.",
        NEEDS_LLM,
        None,
    ),
]


@pytest.mark.parametrize(("role", "text", "decision", "reason"), GATE_TABLE)
def test_gate_decides_from_the_table(
    role: str, text: str, decision: GateDecision, reason: str | None
) -> None:
    result = gate_turn(_turn(text, role=role))
    assert result.decision is decision
    if reason is not None:
        assert result.reason == reason


def test_the_table_covers_both_languages_with_at_least_forty_cases() -> None:
    assert len(GATE_TABLE) >= 40
    assert {detect_lang(text) for _, text, _, _ in GATE_TABLE if text.strip()} == {"en", "zh"}


def test_the_gate_reports_the_turn_language() -> None:
    assert gate_turn(_turn("我住在上海")).lang == "zh"
    assert gate_turn(_turn("I live in Shanghai")).lang == "en"


def test_a_turn_repeating_an_earlier_one_is_skipped() -> None:
    result = gate_turn(_turn("Please fix the flaky test."), previous_texts=["please fix the flaky test!!"])
    assert result == GateResult(SKIP, "repeat", "en")


def test_a_window_skips_repeats_of_earlier_turns_of_any_role() -> None:
    turns = [
        _turn("Can you check the migration script?", event_id="a"),
        _turn("Here is what I found in the migration script.", role="assistant", event_id="b"),
        _turn("can you check the migration script", event_id="c"),
    ]
    assert [r.decision for r in gate_window(turns)] == [NEEDS_LLM, NEEDS_LLM, SKIP]
    assert gate_window(turns)[2].reason == "repeat"


def test_a_repeated_must_statement_is_never_skipped() -> None:
    turns = [_turn("Remember that I'm allergic to peanuts."), _turn("remember that I'm allergic to peanuts")]
    assert all(r.decision is not SKIP for r in gate_window(turns))


def test_gate_window_returns_one_result_per_turn() -> None:
    assert gate_window([]) == []
    assert len(gate_window([_turn("ok"), _turn("好的"), _turn("")])) == 3


def _labelled_gate_cases() -> list[tuple[str, str, str]]:
    lines = CASES_PATH.read_text(encoding="utf-8").splitlines()
    cases = [json.loads(line) for line in lines if line.strip()]
    return [(case["id"], case["text"], case["gate"]) for case in cases if case.get("gate")]


@pytest.mark.parametrize(("case_id", "text", "gate"), _labelled_gate_cases())
def test_labelled_cases_get_their_expected_gate(case_id: str, text: str, gate: str) -> None:
    assert gate_turn(_turn(text)).decision.value == gate, case_id


# ---------------------------------------------------------------- properties

_FILLERS = ["thanks!", "ok", "谢谢！", "好的，", "hi,", "👍", "got it.", "嗯嗯", ""]
_MUST_STATEMENTS = [
    "remember I'm vegetarian",
    "please remember that my name is Alice",
    "don't use ORMs",
    "记住我吃素",
    "不要用 var",
    "请记住，我对花生过敏",
    "forget my address",
    "忘掉我的地址",
    "no, it's pnpm, not npm",
    "不是 npm，是 pnpm",
]


@given(st.sampled_from(_FILLERS), st.sampled_from(_MUST_STATEMENTS), st.sampled_from(_FILLERS))
def test_a_must_statement_wrapped_in_small_talk_is_never_skipped(
    before: str, statement: str, after: str
) -> None:
    text = f"{before} {statement}. {after}".strip()
    assert any(c.tier.value == "must" for c in extract_rules([_turn(text)]))
    assert gate_turn(_turn(text)).decision is not SKIP


# Any Unicode (control characters, emoji, surrogate-free planes) and long texts up to 32 KiB.
_ANY_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=300)
_LONG_TEXT = st.builds(
    lambda chunk, times: (chunk * times)[:32768],
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=4000),
)
_MIXED = st.lists(
    st.sampled_from(
        [
            "I live in ",
            "我住在",
            "remember ",
            "记住",
            "不要",
            "don't ",
            "Berlin",
            "上海",
            "```",
            "\n",
            "> ",
            "?",
            "。",
            "，",
            "\u200b",
            "\x00",
            "🎉",
            " ",
            "pnpm",
            "not ",
        ]
    ),
    max_size=60,
).map("".join)
_TEXTS = st.one_of(_ANY_TEXT, _LONG_TEXT, _MIXED)
_ROLES = st.sampled_from(["user", "assistant", "system", "tool", "other"])
_RELAXED = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_RELAXED
@given(_TEXTS, _ROLES)
def test_gate_turn_never_raises(text: str, role: str) -> None:
    result = gate_turn(_turn(text, role=role), previous_texts=[text[:50]])
    assert isinstance(result.decision, GateDecision) and result.reason


@_RELAXED
@given(st.lists(st.tuples(_TEXTS, _ROLES), max_size=4))
def test_gate_window_never_raises(items: list[tuple[str, str]]) -> None:
    turns = [_turn(text, role=role, event_id=str(i)) for i, (text, role) in enumerate(items)]
    assert len(gate_window(turns)) == len(turns)


@_RELAXED
@given(st.lists(_TEXTS, max_size=3))
def test_extract_rules_never_raises_and_only_cites_its_turns(texts: list[str]) -> None:
    turns = [_turn(text, event_id=f"ev{i}") for i, text in enumerate(texts)]
    for cand in extract_rules(turns):
        assert set(cand.source_event_ids) <= {t.event_id for t in turns}
        assert cand.content and 0.0 <= cand.confidence <= 1.0


@_RELAXED
@given(_TEXTS)
def test_language_helpers_never_raise(text: str) -> None:
    assert detect_lang(text) in ("en", "zh")
    normalized = normalize_text(text)
    assert normalize_text(normalized) == normalized
    assert comparison_key(text) == comparison_key(normalized)
