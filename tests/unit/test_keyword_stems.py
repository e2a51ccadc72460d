"""The keyword tokenizer folds the inflections of an English word onto one stem, so a query meets a stored
text whichever form each uses ("where does the user live" / "The user lives in Vienna")."""

from __future__ import annotations

import pytest

from core import keywords


@pytest.mark.parametrize(
    "forms",
    [
        ("live", "lives", "lived", "living"),
        ("move", "moves", "moved", "moving"),
        ("change", "changes", "changed", "changing"),
        ("city", "cities"),
        ("study", "studies", "studied", "studying"),
        ("stop", "stops", "stopped", "stopping"),
        ("run", "runs", "running"),
        ("box", "boxes"),
        ("watch", "watches", "watched", "watching"),
        ("use", "uses", "used", "using"),
        ("hike", "hikes", "hiked", "hiking"),
        ("play", "plays", "played", "playing"),
        ("fall", "falls", "falling"),
        ("go", "goes"),
        ("try", "tries", "tried"),
        ("movie", "movies"),
        ("pass", "passes", "passed"),
    ],
)
def test_the_forms_of_a_word_share_one_token(forms):
    stems = {keywords.tokens(w)[0] for w in forms}
    assert len(stems) == 1, dict(zip(forms, (keywords.tokens(w)[0] for w in forms), strict=True))


@pytest.mark.parametrize(
    "word",
    # no vowel would be left, the ending is part of the word, or the word is too short to cut
    ["string", "spring", "bring", "red", "bed", "need", "speed", "bus", "status", "analysis", "gas", "class"],
)
def test_words_whose_ending_is_not_an_inflection_keep_it(word):
    assert keywords.tokens(word) == [word]


def test_different_words_stay_apart():
    pairs = [("live", "liver"), ("stop", "stoop"), ("fall", "fail"), ("use", "user")]
    for a, b in pairs:
        assert keywords.tokens(a) != keywords.tokens(b), (a, b)


def test_the_question_meets_the_statement():
    question = set(keywords.tokens("Where does the user live now? Which city?"))
    statement = set(keywords.tokens("The user lives in Vienna; she moved cities last year"))
    assert {"liv", "citi"} <= question & statement


def test_names_and_chinese_are_untouched():
    assert keywords.tokens("Kubernetes on Postgres 16 with k8s") == ["kubernet", "postgr", "16", "k8s"]
    assert keywords.tokens("PostgreSQL 数据库") == ["postgresql", "数据", "据库"]
