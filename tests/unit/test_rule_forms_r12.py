"""Forms read as a class after round 12 moved to dev (issue #12): the newer value of an update told in a short
change or current-state sentence about the user's own life (a time, an amount or a habit moved to a new value;
"... now" / "现在 ..."), each with new wording and new values, in both languages where the form exists in both,
and the near misses that must not be read as the user's state.
"""

from __future__ import annotations

import pytest

from core.extraction.rules.sentences import split_clauses
from tests.unit.rule_forms import found as _found


def _contents(text: str) -> list[str]:
    return [content for _, _, _, content in _found(text)]


def _says(text: str, *words: str) -> bool:
    return any(all(w.casefold() in c.casefold() for w in words) for c in _contents(text))


# --- a time, an amount or a level moved to a new value: "pushed to", "went up to", "改到", "加到", "提高到" -------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("our retro got moved to Wednesdays", "wednesdays"),
        ("swim practice shifted to the mornings, the pool is emptier", "mornings"),
        ("fyi: offsite got pushed to October 9", "october 9"),
        ("my rent went up to 2100 this year", "2100"),
        ("I bumped my savings transfer up to $400 a month", "400"),
        ("lowering my screen time to 2 hours a day from now on", "2 hours"),
        ("晨跑改到晚上八点了", "晚上八点"),
        ("公积金加到每月 2400 了", "2400"),
        ("托福目标提高到 105 了", "105"),
        ("降压药减到半片了", "半片"),
        ("吉他课换回周六了", "周六"),
    ],
)
def test_a_value_moved_to_a_new_one_is_stored(text: str, value: str) -> None:
    assert _says(text, value), _contents(text)


@pytest.mark.parametrize(
    "text",
    [
        "the price changed to 30",  # an article: not the user's own
        "it got pushed to Friday",  # a bare pronoun: nothing named
        "her shift moved to nights",  # someone else's
        "can you move the standup to 10:30?",  # a request for the task at hand
        "能不能改到周五？",  # a question
    ],
)
def test_a_move_that_is_not_the_users_state_is_not_stored(text: str) -> None:
    assert _found(text) == []


# --- a habit changed to another: "改喝茶", "改坐地铁" -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"), [("奶茶戒了，改喝燕麦奶了", "燕麦奶"), ("不开车了，现在改骑电驴", "电驴")]
)
def test_a_habit_changed_to_another_is_stored(text: str, value: str) -> None:
    assert _says(text, value), _contents(text)


# --- the current state told with "now" / "现在" ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("sold the old Golf, I'm riding a Brompton now", "brompton"),
        ("standup is 9:15 now, sorry for the confusion", "9:15"),
        ("gave up on French, doing Japanese now", "japanese"),
        ("现在住在余杭，离公司近", "余杭"),
        ("换手机了，现在用 Pixel 9 了", "pixel 9"),
        ("离开北京了，现在 base 成都", "成都"),
        ("现在 65 公斤了，目标 60", "65"),
        ("转岗了，现在是 product designer", "product designer"),
    ],
)
def test_the_current_state_told_with_now_is_stored(text: str, value: str) -> None:
    assert _says(text, value), _contents(text)


@pytest.mark.parametrize(
    "text",
    [
        "the weather is 30 degrees now",
        "it's 5pm now, let's wrap up",
        "现在几点了？",
        "现在用什么库比较好？",
        "现在是下午三点",
    ],
)
def test_now_that_states_no_lasting_value_of_the_user_is_not_stored(text: str) -> None:
    assert _found(text) == []


def test_a_colon_between_digits_is_no_clause_break() -> None:
    assert [clause for _, clause in split_clauses("our 2:1 review moved to Fridays")] == [
        "our 2:1 review moved to Fridays"
    ]
    assert len(split_clauses("two things: the repo is public")) == 2


# --- a value set right against the one it replaces: "it's Lyon not Nice", "是周五，不是周四" ---------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("ah sorry, wrong one: it's Lyon not Nice", "lyon"),
        ("my mistake - the branch is release-2-4, not release-2-3.", "release-2-4"),
        ("we're not on Redis, it's Valkey 8", "valkey"),
        ("是周五，不是周四", "周五"),
        ("抱歉，车位是 B2 层，不是 B1 层", "b2"),
        ("不是 8 点，是 9 点", "9 点"),
    ],
)
def test_a_value_against_the_one_it_replaces_is_a_correction(text: str, value: str) -> None:
    musts = [content for tier, _, _, content in _found(text) if tier == "must"]
    assert any(value in content.casefold() for content in musts), _found(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'd like oat milk, not cream",  # two plain nouns: no value of one sort set right
        "it's Saturday, not a workday",  # a value against no value
        "is it Porto, not Lisbon?",  # a question
        "if it's Rust not Go we need more time",  # a supposition
        "she said it's Monday, not Sunday",  # someone else's word
        "是不是周五，不是周四？",
    ],
)
def test_a_contrast_that_corrects_nothing_is_no_correction(text: str) -> None:
    assert not any(tier == "must" for tier, _, _, _ in _found(text)), _found(text)


@pytest.mark.parametrize("text", ["面试改到明天上午了", "dentist appointment got pushed to 4pm"])
def test_one_event_moved_is_no_lasting_value(text: str) -> None:
    assert _found(text) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("例会改到周三上午了", "周三"),
        ("站会挪到九点四十了", "九点四十"),
        ("our weekly call moved to Fridays", "fridays"),
    ],
)
def test_a_recurring_event_moved_is_stored(text: str, value: str) -> None:
    assert _says(text, value), _contents(text)
