"""The context block: never over budget, never cut mid-item, rules first."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.context import ContextItem, build_context
from shared.tokens import estimate_tokens

RULES = [
    ContextItem(f"r{i}", f"Never do forbidden thing number {i} in this codebase.", "procedural", "constraint")
    for i in range(5)
]
PROFILE = [
    ContextItem(
        f"p{i}", f"The user has profile fact {i} that is moderately long to take room.", "semantic", "profile"
    )
    for i in range(20)
]
RELEVANT = [
    ContextItem(
        f"x{i}", f"Relevant note {i} about the deployment of the billing service.", "episodic", "fact"
    )
    for i in range(20)
]
WM = "## Constraints\n- a\n\n## Decisions\n- b\n\n## Current progress\n- c\n\n## Lessons\n- d"


def test_a_small_budget_keeps_the_procedural_rules_first():
    block = build_context(standing=PROFILE + RULES, relevant=RELEVANT, working_memory=WM, max_tokens=110)
    assert block.tokens <= 110
    assert [i for i in block.included if i.startswith("r")] == ["r0", "r1", "r2", "r3", "r4"]
    assert block.text.split("\n## ")[1].startswith("Rules and feedback")
    assert "p19" in block.dropped


def test_items_are_never_cut_mid_item():
    block = build_context(standing=PROFILE + RULES, relevant=RELEVANT, working_memory=WM, max_tokens=150)
    for item in PROFILE + RULES + RELEVANT:
        if item.id in block.included:
            assert item.text in block.text
        else:
            assert item.text not in block.text


def test_sections_come_in_priority_order_when_everything_fits():
    block = build_context(
        standing=PROFILE[:2] + RULES[:1], relevant=RELEVANT[:2], working_memory=WM, max_tokens=2000
    )
    order = [
        block.text.index(h)
        for h in ("Rules and feedback", "About the user", "Relevant to this request", "Working memory")
    ]
    assert order == sorted(order)


@settings(max_examples=200, deadline=None)
@given(budget=st.integers(min_value=0, max_value=600), texts=st.lists(st.text(max_size=300), max_size=30))
def test_the_block_never_exceeds_the_budget(budget, texts):
    items = [
        ContextItem(f"i{n}", t, "semantic" if n % 2 else "procedural", "profile") for n, t in enumerate(texts)
    ]
    block = build_context(
        standing=items, relevant=items[::-1], working_memory="\n\n".join(texts[:3]), max_tokens=budget
    )
    assert block.tokens <= budget
    assert estimate_tokens(block.text) == block.tokens
