"""Forms read as a class after round 13 moved to dev (issue #12): a contrast said in one sentence, its positive
half a bare noun phrase and its negated half a bare rule ("X, never Y"), kept as one rule with both halves; and
the near misses that stay as they were.
"""

from __future__ import annotations

import pytest

from tests.unit.rule_forms import must


@pytest.mark.parametrize(
    ("text", "kept", "dropped"),
    [
        ("Dates in ISO format, never US style.", "iso format", "us style"),
        (
            "Commit messages in the imperative mood, never past tense. Team convention.",
            "imperative",
            "past tense",
        ),
        ("Prices in euros, never dollars please", "euros", "dollars"),
        ("变量名用 camelCase，不要下划线", "camelcase", "下划线"),
    ],
)
def test_a_contrast_keeps_what_to_do_with_what_not_to(text: str, kept: str, dropped: str):
    rules = must(text)
    assert len(rules) == 1, rules
    assert kept in rules[0].casefold() and dropped in rules[0].casefold(), rules


@pytest.mark.parametrize(
    ("text", "alone"),
    [
        ("I love it, never change", "Never change."),  # a subject: no bare noun phrase before the rule
        ("so basically, never again", None),  # a filler before it, and "never again" is no rule
        (
            "Always use UTC. Never local time.",
            "Always use UTC; never local time.",
        ),  # two sentences: joined as before
    ],
)
def test_what_is_not_a_bare_noun_phrase_is_not_joined(text: str, alone: str | None):
    rules = must(text)
    if alone is None:
        assert rules == []
    else:
        assert rules == [alone]
