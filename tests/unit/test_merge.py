"""Merging rule and LLM candidates: MUST rule candidates survive, duplicates collapse into one."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from core.extraction.candidates import Candidate, Category, Kind, Operation, Tier
from core.extraction.merge import merge_candidates, normalize_text


def candidate(content: str, **fields: Any) -> Candidate:
    defaults: dict[str, Any] = {
        "kind": Kind.SEMANTIC,
        "category": Category.FACT,
        "tier": Tier.WORTH,
        "confidence": 0.7,
        "source_event_ids": ("e1",),
    }
    return Candidate(content=content, **{**defaults, **fields})


def llm(content: str, **fields: Any) -> Candidate:
    return candidate(content, **{"origin": "llm", **fields})


def test_a_must_rule_candidate_is_kept_when_the_llm_ignores_it() -> None:
    rule = candidate("Never suggest an ORM.", kind=Kind.PROCEDURAL, tier=Tier.MUST, rule="en.correction")

    merged = merge_candidates([rule], [llm("The user lives in Berlin.")])

    assert merged[0] == rule
    assert [c.content for c in merged] == ["Never suggest an ORM.", "The user lives in Berlin."]


def test_the_same_content_up_to_case_punctuation_and_spaces_collapses_with_the_union_of_sources() -> None:
    rule = candidate(
        "Never suggest an ORM.",
        tier=Tier.MUST,
        confidence=0.6,
        source_event_ids=("e1",),
        source_turn_ids=("t1",),
    )
    from_llm = llm(
        "never  suggest an ORM", confidence=0.9, source_event_ids=("e2", "e1"), source_turn_ids=("t2",)
    )

    [merged] = merge_candidates([rule], [from_llm])

    assert merged.origin == "rules+llm"
    assert merged.source_event_ids == ("e1", "e2")
    assert merged.source_turn_ids == ("t1", "t2")
    assert merged.confidence == 0.9
    assert merged.tier is Tier.MUST


def test_the_rule_keeps_must_even_when_the_llm_says_worth() -> None:
    rule = candidate("Remember: deploys happen on Fridays.", tier=Tier.MUST)

    [merged] = merge_candidates([rule], [llm("remember deploys happen on fridays", tier=Tier.WORTH)])

    assert merged.tier is Tier.MUST


def test_the_same_slot_and_value_collapses_even_when_worded_differently() -> None:
    rule = candidate("Package manager: pnpm", slot="project.package_manager", value="pnpm", rule="en.pm")
    from_llm = llm("The project uses pnpm.", slot="project.package_manager", value="PNPM", confidence=0.9)

    [merged] = merge_candidates([rule], [from_llm])

    assert merged.content == "The project uses pnpm."
    assert (merged.slot, merged.value, merged.rule) == ("project.package_manager", "pnpm", "en.pm")


def test_the_llm_fills_in_a_slot_the_rule_did_not_name() -> None:
    rule = candidate("用户住在柏林。")

    [merged] = merge_candidates([rule], [llm("用户住在柏林", slot="user.location", value="柏林")])

    assert (merged.slot, merged.value) == ("user.location", "柏林")


def test_a_different_value_in_the_same_slot_is_not_a_duplicate() -> None:
    rule = candidate("The user lives in Berlin.", slot="user.location", value="Berlin")

    merged = merge_candidates([rule], [llm("The user lives in Paris.", slot="user.location", value="Paris")])

    assert len(merged) == 2


def test_remember_and_forget_of_the_same_thing_stay_apart() -> None:
    rule = candidate("The user's phone number.", op=Operation.FORGET, tier=Tier.MUST)

    merged = merge_candidates([rule], [llm("The user's phone number.")])

    assert [c.op for c in merged] == [Operation.FORGET, Operation.REMEMBER]


def test_order_is_rules_first_then_new_llm_candidates_in_their_order() -> None:
    rules = [candidate("A."), candidate("B.")]
    llms = [llm("C."), llm("b"), llm("D.")]

    merged = merge_candidates(rules, llms)

    assert [c.content for c in merged] == ["A.", "b", "C.", "D."]
    assert [c.origin for c in merged] == ["rules", "rules+llm", "llm", "llm"]


def test_normalized_text_ignores_case_punctuation_and_whitespace_in_both_languages() -> None:
    assert normalize_text("Uses  PNPM!") == normalize_text("uses pnpm")
    assert normalize_text("不要用 var。") == normalize_text("不要用var")


# property --------------------------------------------------------------------------------------------------

CONTENTS = st.sampled_from(["Uses pnpm.", "uses PNPM", "Lives in Berlin.", "不要用 var。", "不要用var", "x"])
SLOTS = st.sampled_from([None, "user.location", "project.package_manager"])
VALUES = st.sampled_from([None, "pnpm", "Berlin", "PNPM"])
CANDIDATES = st.builds(
    candidate,
    CONTENTS,
    tier=st.sampled_from(list(Tier)),
    op=st.sampled_from(list(Operation)),
    slot=SLOTS,
    value=VALUES,
    confidence=st.floats(min_value=0, max_value=1),
    source_event_ids=st.lists(st.sampled_from(["e1", "e2", "e3"]), min_size=1, max_size=3).map(tuple),
)


LLM_CANDIDATES = CANDIDATES.map(lambda c: dataclasses.replace(c, origin="llm"))


@given(rules=st.lists(CANDIDATES, max_size=6), llms=st.lists(LLM_CANDIDATES, max_size=6))
def test_merging_never_loses_a_must_rule_candidate_or_a_source(
    rules: list[Candidate], llms: list[Candidate]
) -> None:
    merged = merge_candidates(rules, llms)

    must_rules_in = sum(1 for c in rules if c.tier is Tier.MUST)
    must_rules_out = sum(1 for c in merged if c.tier is Tier.MUST and c.origin.startswith("rules"))
    assert must_rules_out >= must_rules_in
    assert len(merged) >= len(rules)
    sources_in = {e for c in [*rules, *llms] for e in c.source_event_ids}
    assert {e for c in merged for e in c.source_event_ids} == sources_in
