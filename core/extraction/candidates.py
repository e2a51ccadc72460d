"""Memory candidates: the plain-data output of extraction, the input of reconciliation.

Pure data, no I/O. The rule extractor and the LLM extractor both produce `Candidate`s;
`merge_candidates` (in `merge.py`) collapses duplicates between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Kind(StrEnum):
    SEMANTIC = "semantic"  # facts about the user / world: "uses pnpm", "lives in Berlin"
    EPISODIC = "episodic"  # what happened: an attempt, its outcome and lesson
    PROCEDURAL = "procedural"  # how the agent should behave: rules and corrections


class Category(StrEnum):
    PROFILE = "profile"
    PREFERENCE = "preference"
    CONSTRAINT = "constraint"
    DECISION = "decision"
    LESSON = "lesson"
    FEEDBACK = "feedback"
    FACT = "fact"


class Tier(StrEnum):
    MUST = "must"  # explicit "remember X", corrections, "don't use var"
    WORTH = "worth"  # stable constraints, choices with reasons, lessons, stable preferences


class Operation(StrEnum):
    REMEMBER = "remember"  # store / reinforce / supersede
    FORGET = "forget"  # an explicit request to forget matching memories
    END = "end"  # a named thing the user has left ("we ripped out Datadog"): memories naming it stop being current


@dataclass(frozen=True, slots=True)
class Turn:
    """One stored, already-redacted transcript turn, as extraction sees it."""

    event_id: str
    role: str  # user | assistant | system | tool
    content: str
    source_turn_id: str | None = None
    lang: str | None = None  # "en" | "zh" | None (unknown); filled by the gate when absent


@dataclass(frozen=True, slots=True)
class Candidate:
    """A proposed memory.

    `content` is a standalone third-person statement in the user's language
    ("The user prefers concise answers." / "用户喜欢简洁的回复。").
    `slot` names a single-valued attribute (`user.name`, `user.location`,
    `project.package_manager`, `user.reply_style`, ...); `value` is that slot's value.
    Multi-valued facts have `slot=None`.
    """

    content: str
    kind: Kind
    category: Category
    tier: Tier
    confidence: float
    source_event_ids: tuple[str, ...]
    source_turn_ids: tuple[str, ...] = ()
    slot: str | None = None
    value: str | None = None
    op: Operation = Operation.REMEMBER
    lang: str = "en"
    origin: str = "rules"  # "rules" | "llm" | "rules+llm"
    rule: str | None = None  # the rule id that produced it (for debugging and metrics)
    extra: dict[str, str] = field(default_factory=dict)
