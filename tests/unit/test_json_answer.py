"""Reading the extraction answer out of what models send (core.prompts.json_answer and the parser): every
content style of the fake server's zoo, rendered from one valid answer, parses to the same memories; what
is not an answer (a cut-off reasoning block, the wrong shape, prose alone) raises with the reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from core.prompts.extraction import parse_extraction_answer, validate_extraction_reply
from core.prompts.json_answer import json_texts, normalise, strip_reasoning
from tests.fakes.openai_server import render_content

ANSWER = {
    "memories": [
        {
            "content": 'The user\'s team ships on "release Tuesdays" {every other week}.',
            "kind": "semantic",
            "category": "fact",
            "tier": "worth",
            "slot": None,
            "value": None,
            "op": "remember",
            "confidence": 0.9,
            "source_event_ids": ["e1"],
        },
        {
            "content": "用户住在柏林。",
            "kind": "semantic",
            "category": "profile",
            "tier": "worth",
            "slot": "user.location",
            "value": "柏林",
            "op": "remember",
            "confidence": 1,
            "source_event_ids": ["e2", "e3"],
        },
    ]
}
PLAIN = json.dumps(ANSWER, ensure_ascii=False)


@pytest.mark.parametrize("style", ["plain", "fenced", "prose", "think", "single_quotes", "trailing_commas"])
def test_every_content_style_of_the_zoo_parses_to_the_same_answer(style: str) -> None:
    reply = render_content(PLAIN, style)  # type: ignore[arg-type]
    if style != "plain":
        assert reply != PLAIN

    answer = parse_extraction_answer(reply)

    assert [m.content for m in answer.memories] == [m["content"] for m in ANSWER["memories"]]
    assert answer.memories[1].source_event_ids == ["e2", "e3"]


def test_python_literals_and_a_fence_without_a_language_are_read() -> None:
    assert parse_extraction_answer("```\n{'memories': [],}\n```").memories == []
    assert json.loads(normalise("{'a': True, 'b': None, 'c': [1, 2,],}") or "") == {
        "a": True,
        "b": None,
        "c": [1, 2],
    }


def test_the_object_that_fits_wins_over_an_earlier_one_that_does_not() -> None:
    reply = 'Schema: {"type": "object"}. Answer:\n' + PLAIN
    assert len(parse_extraction_answer(reply).memories) == 2


def test_a_reasoning_block_never_closed_is_no_answer() -> None:
    assert strip_reasoning('<think>I should output {"memories": []} but') == ""
    answer, problem = validate_extraction_reply('<think>I should output {"memories": []} but')
    assert answer is None and problem


@pytest.mark.parametrize(
    "reply",
    [
        '{"facts": ["The user lives in Berlin."]}',  # valid JSON, wrong shape
        '[{"content": "x"}]',
        "I'm sorry, there is nothing to remember here.",
        '{"memories": [{"content": "The user prefers',  # cut off
    ],
)
def test_what_is_not_an_answer_raises_a_validation_error(reply: str) -> None:
    with pytest.raises(ValidationError):
        parse_extraction_answer(reply)
    answer, problem = validate_extraction_reply(reply)
    assert answer is None and problem and "Berlin" not in problem  # the summary never echoes content


def test_the_wrong_shape_is_reported_by_field_not_as_invalid_json() -> None:
    _, problem = validate_extraction_reply('Here you go: {"facts": []}')
    assert problem is not None and "memories" in problem and "facts" in problem


def test_texts_that_parse_come_first_and_broken_ones_last() -> None:
    texts = json_texts("prose {\"a\": 1} more {'b': 2,} and {broken")
    assert texts[:2] == ['{"a": 1}', '{"b": 2}']


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30), max_size=4),
    st.sampled_from(["fenced", "prose", "think", "single_quotes", "trailing_commas"]),
)
def test_any_string_content_survives_every_content_style(contents: list[str], style: str) -> None:
    memories = [{**ANSWER["memories"][0], "content": c or "x", "source_event_ids": ["e1"]} for c in contents]
    memories = [m for m in memories if str(m["content"]).strip()]
    plain = json.dumps({"memories": memories}, ensure_ascii=False)

    answer = parse_extraction_answer(render_content(plain, style))  # type: ignore[arg-type]

    assert [m.content for m in answer.memories] == [str(m["content"]).strip() for m in memories]
