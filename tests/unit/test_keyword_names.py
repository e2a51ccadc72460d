"""`core.keywords.names`: the names a text mentions, which the search's second step looks up again."""

from __future__ import annotations

import pytest

from core.keywords import names


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("we moved CI to Buildkite last week, Priya set it up", {"Buildkite", "Priya", "CI"}),
        ("this service is on Go 1.22 and k8s", {"Go", "k8s"}),
        ('I just finished "The Left Hand of Darkness" and loved it', {"The Left Hand of Darkness"}),
        ("我们这边用的是 Vue 2，部署在 fly.io 上", {"Vue", "fly.io"}),
        ("最近在读《三体》", {"三体"}),
    ],
)
def test_names_are_found_in_running_text(text, expected):
    assert expected <= set(names(text))


def test_a_sentence_initial_capital_is_no_name_and_plain_words_are_none():
    assert names("Yesterday was long. Tomorrow should be better, honestly.") == []
    assert names("the build is slow and the tests are flaky") == []


def test_a_slotted_memory_is_found_by_the_attribute_it_fills() -> None:
    """The keyword document of a slotted memory holds its slot's attribute ("which linter ...?" finds "uses
    Ruff"); an unslotted one is its words alone."""
    from core import keywords
    from store.memories import keyword_document

    ruff = keyword_document("The user's project uses Ruff.", "project.linter").split()
    assert "linter" in ruff and "ruff" in ruff
    assert set(keywords.tokens("test framework")) <= set(
        keyword_document("The user's project uses Vitest.", "project.test_framework").split()
    )
    assert keyword_document("The user likes tea.", None) == keywords.document("The user likes tea.")
