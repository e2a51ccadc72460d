"""Forms read as a class after round 11 moved to dev (issue #12): statements that are no statement of the
user's, each with new wording and new values, in both languages where the form exists in both, and the near
misses that must still be read. Each form must leave nothing for the residual filter either (it would store
the sentence verbatim).
"""

from __future__ import annotations

import pytest

from core.extraction.candidates import Turn
from core.extraction.rules.extract import analyze_turn
from tests.unit.rule_forms import found as _found
from tests.unit.rule_forms import slots as _slots


def _residual(text: str) -> str:
    return analyze_turn(Turn("e1", "user", text)).residual


# --- irony across sentences, and irony the rules drop that the residual filter must not keep ------------------


@pytest.mark.parametrize(
    "text",
    [
        "oh wonderful, the staging cluster is down again. I just adore Helm, truly my favourite tool.",
        "对对对，我最爱凌晨三点查日志了，简直是人生乐趣",
        "是啊是啊，我们肯定下周就能把单体全拆完 🙃",
        "好好好，我最喜欢手写 XML 配置了",
    ],
)
def test_an_ironic_turn_yields_nothing_and_leaves_nothing(text: str) -> None:
    assert _found(text) == []
    assert not any(word in _residual(text) for word in ("adore", "最爱", "最喜欢", "🙃"))


@pytest.mark.parametrize(
    "text",
    [
        "I just love Neovim, it's my editor for everything.",  # sincere praise: one mark at most
        "我最喜欢用 Neovim 写代码",
    ],
)
def test_sincere_praise_is_still_read(text: str) -> None:
    assert _found(text) != [] or _residual(text) != ""


# --- a denial of having said something: "I didn't say X", "我没说要 X" ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I didn't say we're moving to Elixir, I only said it looked neat.",
        "I never said we use Cassandra, that was a hypothetical.",
        "我没说要换成 Svelte，只是随便看看",
        "我们从没说过要上 Kubernetes，别误会",
    ],
)
def test_a_denial_of_having_said_stores_no_value(text: str) -> None:
    assert _slots(text) == {}
    assert not any(value for _, _, value, _ in _found(text))


def test_a_denial_with_the_right_value_after_it_keeps_that_value() -> None:
    # the denied clause is nothing; what follows it is still read
    assert _slots("I didn't say Oracle, our database is MariaDB.").get("project.database") == "mariadb"
    # "没说清楚" (did not make it clear) is no denial of having said
    assert _slots("我没说清楚，数据库是 TiDB").get("project.database") == "tidb"


# --- a habit whose only object is a pronoun: "I keep forgetting this", "我老是忘了这个" ---------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I keep misspelling it in the config.",
        "I always mix them up",
        "我老是记不住这个",
    ],
)
def test_a_habit_about_a_bare_pronoun_is_no_memory(text: str) -> None:
    assert _found(text) == []


def test_the_rest_of_a_sentence_after_a_pronoun_habit_is_still_read() -> None:
    hits = _found("ok so, I keep forgetting this, but our build server is called bramble-ci")
    assert any("bramble-ci" in content for _, _, _, content in hits)
    assert not any("forgetting" in content for _, _, _, content in hits)


# --- disowning: "that's my sister's laptop, not mine", "不是我，那是我室友的" ------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "no, that config was from my teammate's machine, not mine",
        "nope, those are the vendor's servers, not ours",
        "不是我，那是我室友的电脑",
    ],
)
def test_a_disowned_sentence_yields_nothing(text: str) -> None:
    assert _found(text) == []
    assert _residual(text) == ""


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("这个服务不是我写的，不过我们数据库用 CockroachDB", "project.database", "cockroachdb"),
        ("not my favourite, but we deploy on Render", "project.hosting", "render"),
    ],
)
def test_a_not_me_that_disowns_nothing_is_no_disowning(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    "text", ["对对对，我最爱周末被叫起来修线上了，简直是人生乐趣", "no, that was my cousin's phone, not mine"]
)
def test_a_turn_that_states_nothing_is_skipped_by_the_gate(text: str) -> None:
    from core.extraction.gate import GateDecision, gate_turn

    assert gate_turn(Turn("e1", "user", text)).decision is GateDecision.SKIP
