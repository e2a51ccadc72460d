"""Assertion helpers the per-round rule-form tests share (`test_rule_forms_r8.py`, `_r9.py`, `_r10.py`): one user
turn through the rule extractor, read back as tuples, slots or MUST contents."""

from __future__ import annotations

from core.extraction.candidates import Operation, Turn
from core.extraction.rules import extract_turn


def found(text: str) -> list[tuple[str, str | None, str | None, str]]:
    """(tier, slot, value, content) of each rule candidate of one user turn that stores something (an `end`, a
    thing the user left, stores nothing: `test_rule_forms_updates.py`)."""
    return [
        (c.tier.value, c.slot, c.value, c.content)
        for c in extract_turn(Turn("e1", "user", text))
        if c.op is not Operation.END
    ]


def slots(text: str) -> dict[str, str | None]:
    """slot -> value of the slotted candidates of one user turn."""
    return {slot: value for _, slot, value, _ in found(text) if slot}


def must(text: str) -> list[str]:
    """The contents of the MUST-tier candidates of one user turn."""
    return [content for tier, _, _, content in found(text) if tier == "must"]
