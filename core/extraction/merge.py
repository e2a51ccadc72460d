"""Merge rule candidates with LLM candidates. Pure: no I/O.

Contract of `merge_candidates(rule, llm)`:
- every rule candidate yields exactly one output candidate, in its input position: a MUST-tier rule candidate
  is never dropped, and its tier never goes down;
- an LLM candidate that duplicates a rule candidate folds into it (the first matching one); other LLM
  candidates follow, in their input order. Duplicates inside one list are left to reconciliation.
- Two candidates are duplicates when they have the same op and
  (a) the same slot and the same value (values compared normalised), or
  (b) the same normalised content (casefolded, punctuation and whitespace removed).
- A collapsed candidate has origin "rules+llm", the union of both sources (event ids, then turn ids, rule
  first), the higher confidence, the higher tier (so the rule's when it is MUST), the rule's kind, category,
  op and rule id (rules are deterministic and tested), the LLM's wording (it reads the context), and the
  rule's slot/value when the rule has them, the LLM's otherwise.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Sequence

from core.extraction.candidates import Candidate, Tier


def normalize_text(text: str) -> str:
    """Casefolded, punctuation and whitespace removed: "Uses  pnpm!" and "uses pnpm" compare equal."""
    return "".join(
        char for char in unicodedata.normalize("NFKC", text).casefold() if not _is_punctuation_or_space(char)
    )


def _is_punctuation_or_space(char: str) -> bool:
    return char.isspace() or unicodedata.category(char)[0] in ("P", "Z")


def is_duplicate(rule: Candidate, llm: Candidate) -> bool:
    return rule.op == llm.op and (_same_slot_and_value(rule, llm) or _same_content(rule, llm))


def _same_slot_and_value(rule: Candidate, llm: Candidate) -> bool:
    if rule.slot is None or rule.slot != llm.slot or rule.value is None or llm.value is None:
        return False
    return normalize_text(rule.value) == normalize_text(llm.value)


def _same_content(rule: Candidate, llm: Candidate) -> bool:
    rule_content = normalize_text(rule.content)
    return bool(rule_content) and rule_content == normalize_text(llm.content)


def collapse(rule: Candidate, llm: Candidate) -> Candidate:
    """One candidate standing for both; see the module docstring for which side wins each field."""
    slot, value = (rule.slot, rule.value) if rule.slot is not None else (llm.slot, llm.value)
    return dataclasses.replace(
        rule,
        content=llm.content,
        lang=llm.lang,
        tier=Tier.MUST if Tier.MUST in (rule.tier, llm.tier) else rule.tier,
        confidence=max(rule.confidence, llm.confidence),
        source_event_ids=_union(rule.source_event_ids, llm.source_event_ids),
        source_turn_ids=_union(rule.source_turn_ids, llm.source_turn_ids),
        slot=slot,
        value=value,
        origin="rules+llm",
        extra={**llm.extra, **rule.extra},
    )


def merge_candidates(rule: Sequence[Candidate], llm: Sequence[Candidate]) -> list[Candidate]:
    merged = list(rule)
    extra_llm: list[Candidate] = []
    for candidate in llm:
        # Match against the original rule candidates so the outcome does not depend on earlier folds.
        index = next((i for i, original in enumerate(rule) if is_duplicate(original, candidate)), None)
        if index is None:
            extra_llm.append(candidate)
        else:
            merged[index] = collapse(merged[index], candidate)
    return merged + extra_llm


def _union(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *second)))
