"""A correction of a value the user gave before (`core/correction.py`) and what reconciliation does with it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.correction import CORRECTION_PROBE_RULE, CORRECTION_RULE, corrected, is_correction
from core.extraction.candidates import Turn
from core.extraction.gate import gate_turn
from core.extraction.residual import residual_candidates
from core.reconcile import Op, decide
from tests.unit.test_reconcile_decisions import DAY, T, change, row


@pytest.mark.parametrize(
    ("old", "said", "loose", "expected"),
    [
        # the value taken back is named in both, the one meant has its shape
        ("The API runs on port 8080 locally.", "actually it's 8081, 8080 is taken by the Keycloak container", False,
         "The API runs on port 8081 locally."),
        ("The user's daughter starts school in September, she's 5",
         "oops I got that wrong earlier, she's 4, turns 5 in November", False,
         "The user's daughter starts school in September, she's 4"),
        # a contrast: X not Y, 是 X 不是 Y
        ("The user's dog Pixie has a vet appointment Thursday.", "ugh autocorrect, his name is Pixel not Pixie.", False,
         "The user's dog Pixel has a vet appointment Thursday."),
        ("用户的狗叫旺财。", "昨天打错了，我家狗是旺仔不是旺财哈哈", False, "用户的狗叫旺仔。"),
        ("our office wifi SSID is acme-guest", "ugh I was wrong, guest SSID is acme-visitors. acme-guest is the old one",
         False, "our office wifi SSID is acme-visitors"),
        # the closest memory: a value of one shape left out, one of that shape new
        ("我们的 staging 域名是 stg.mofang.cn", "sorry 打错了，是 staging.mofang.cn，stg 那个早就废了", True,
         "我们的 staging 域名是 staging.mofang.cn"),
        # "5" is named in both but the memory's other number is the one taken back: only the loose reading says so
        ("用户生日是 5 月 3 号", "刚才打错了，我生日是 5 月 13 号", True, "用户生日是 5 月 13 号"),
        ("用户生日是 5 月 3 号", "刚才打错了，我生日是 5 月 13 号", False, None),
        # nothing of the memory taken back
        ("The user lives in Berlin.", "sorry, typo, I meant user_id not userid in that last query", True, None),
        ("The API runs on port 8080 locally.", "typo: the DB is on 5432, the cache on 6379", False, None),
    ],
)  # fmt: skip
def test_the_value_taken_back_is_replaced_by_the_one_meant(old: str, said: str, loose: bool, expected: str | None):
    assert corrected(old, said, loose=loose) == expected


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("ugh I was wrong, guest SSID is acme-visitors", True),
        ("typo above, I meant 8081", True),
        ("刚才打错了，我生日是 5 月 13 号", True),
        ("更正：截止日期是 3 月 17 号", True),
        ("actually it's Tuesday", True),
        ("the sync got moved to 3pm today btw", False),
        ("这个报错什么意思", False),  # 报错 is an error message, not a slip
        ("I actually like the new layout", False),
    ],
)
def test_what_takes_back_something_said_before(text: str, cue: bool):
    assert is_correction(text) is cue


def _correction(text: str, *, when, rule: str = CORRECTION_PROBE_RULE):
    return replace(change(text, when=when, rule=rule), origin="residual")


def test_a_correction_supersedes_the_memory_holding_the_value_with_that_memory_s_text_corrected():
    port = row("m1", "The API runs on port 8080 locally.", since=T, sim=0.2)
    other = row("m2", "The user's project uses Rust.", since=T, sim=0.6)
    d = decide(_correction("actually it's 8081, 8080 is taken by the Keycloak container", when=T + DAY),
               neighbours=[other, port])  # fmt: skip
    assert d.op == Op.SUPERSEDE and d.target_ids == ("m1",)
    assert d.extra["content"] == "The API runs on port 8081 locally."


def test_a_correction_of_nothing_known_stores_nothing_unless_the_filter_kept_it():
    rust = row("m1", "The user's project uses Rust.", since=T, sim=0.6)
    said = "sorry, typo, I meant user_id not userid in that last query"
    assert decide(_correction(said, when=T + DAY), neighbours=[rust]).op == Op.NOOP
    assert decide(_correction(said, when=T + DAY), neighbours=[]).op == Op.NOOP
    kept = decide(_correction(said, when=T + DAY, rule=CORRECTION_RULE), neighbours=[])
    assert kept.op == Op.ADD
    # a memory recorded after the correction is not what it corrects
    later = row("m3", "The API runs on port 8080 locally.", since=T + 2 * DAY, sim=0.9)
    assert decide(_correction("actually it's 8081, 8080 is taken", when=T + DAY), neighbours=[later]).op == Op.NOOP


def test_the_residual_filter_hands_a_correction_over_with_the_sentences_after_it():
    text = "ugh I was wrong, guest SSID is acme-visitors. acme-guest is the old one"
    turn = Turn("e1", "user", text)
    result = gate_turn(turn)
    (cand,) = residual_candidates(turn, result.residual, lang=result.lang)
    assert cand.rule == CORRECTION_PROBE_RULE and cand.slot is None
    assert cand.content == "ugh I was wrong, guest SSID is acme-visitors. acme-guest is the old one"


def test_the_corrected_memory_keeps_the_old_one_s_kind_and_slot_with_the_value_corrected():
    port = row("m1", "The API runs on port 8080 locally.", since=T, sim=0.4, slot="project.port", value="8080",
               kind="procedural")  # fmt: skip
    d = decide(_correction("actually it's 8081, 8080 is taken by the Keycloak container", when=T + DAY),
               neighbours=[port])  # fmt: skip
    assert d.extra == {
        "content": "The API runs on port 8081 locally.",
        "kind": "procedural",
        "slot": "project.port",
        "value": "8081",
    }
    # a slot whose value is not what was corrected: the corrected memory is in no slot
    named = row("m2", "The user's dog Pixie has a vet appointment.", since=T, slot="user.pet", value="dog")
    d = decide(_correction("ugh autocorrect, his name is Pixel not Pixie", when=T + DAY), neighbours=[named])
    assert d.extra == {"content": "The user's dog Pixel has a vet appointment.", "kind": "semantic"}
