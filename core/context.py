"""The context block (pure): a markdown section ready for a system prompt, cut to a token budget by priority.

Order: procedural rules and feedback, then constraints and decisions, then profile and preferences, then
the memories and episodes most relevant to the query, then the working memory. Items are kept whole:
when the next item does not fit, it is dropped (a later, smaller one may still fit), never cut mid-item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from shared.tokens import estimate_tokens

SECTION_TITLES = (
    ("rules", "Rules and feedback"),
    ("constraints", "Constraints and decisions"),
    ("profile", "About the user"),
    ("relevant", "Relevant to this request"),
    ("working", "Working memory"),
)
HEADER = "# What you remember about this user"


@dataclass(frozen=True)
class ContextItem:
    id: str
    text: str
    kind: str | None = None
    category: str | None = None
    expires_at: datetime | None = None  # a temporary memory: marked as such in the block
    scope: str | None = None  # user | agent | app: an agent's own and the app's shared memories are labelled


SCOPE_LABELS = {"agent": "[agent] ", "app": "[app] "}


def line_of(item: ContextItem) -> str:
    """The item's text, labelled "[agent]" (this agent's own memory) or "[app]" (shared by every user of the
    app) when it is not the user's own, and marked "(temporary, until YYYY-MM-DD)" when it expires, so the
    agent does not treat a state of the week as a lasting fact."""
    text = SCOPE_LABELS.get(item.scope or "", "") + item.text
    if item.expires_at is None:
        return text
    return f"{text} (temporary, until {item.expires_at.date().isoformat()})"


def section_of(item: ContextItem) -> str:
    if item.kind == "procedural" or item.category == "feedback":
        return "rules"
    if item.category in ("constraint", "decision"):
        return "constraints"
    if item.category in ("profile", "preference"):
        return "profile"
    return "relevant"


@dataclass(frozen=True)
class ContextBlock:
    text: str
    tokens: int
    included: tuple[str, ...]
    dropped: tuple[str, ...]  # items that did not fit the token budget
    # what was left out and why, counted: "over_budget" (the items in `dropped`), and from the reader
    # (`store.context`), "memories_below_floor" / "episodes_below_floor" (the relevance floor)
    left_out: dict[str, int] = field(default_factory=dict)


def build_context(
    *, standing: Sequence[ContextItem], relevant: Sequence[ContextItem], working_memory: str, max_tokens: int
) -> ContextBlock:
    """`standing`: current memories (rules, constraints, profile), best first; `relevant`: search hits for
    the query (memories and episodes), best first; `working_memory`: the user's document (may be empty)."""
    buckets: dict[str, list[ContextItem]] = {key: [] for key, _ in SECTION_TITLES}
    seen: set[str] = set()
    for item in standing:
        if item.id not in seen:
            seen.add(item.id)
            buckets[section_of(item)].append(item)
    for item in relevant:
        if item.id not in seen:
            seen.add(item.id)
            buckets["relevant"].append(item)
    if working_memory.strip():
        for n, block in enumerate(b for b in working_memory.split("\n\n") if b.strip()):
            buckets["working"].append(ContextItem(id=f"wm:{n}", text=block.strip()))
    used = estimate_tokens(HEADER) + 1
    lines = [HEADER]
    included: list[str] = []
    dropped: list[str] = []
    if used > max_tokens:
        every = tuple(i.id for items in buckets.values() for i in items)
        return ContextBlock("", 0, (), every, {"over_budget": len(every)})
    for key, title in SECTION_TITLES:
        heading = f"\n## {title}"
        heading_cost = estimate_tokens(heading) + 1
        section_lines: list[str] = []
        for item in buckets[key]:
            line = item.text if key == "working" else f"- {line_of(item)}"
            cost = estimate_tokens(line) + 1
            extra = cost + (heading_cost if not section_lines else 0)
            if used + extra > max_tokens:
                dropped.append(item.id)
                continue
            used += extra
            section_lines.append(line)
            included.append(item.id)
        if section_lines:
            lines.append(heading)
            lines.extend(section_lines)
    text = "\n".join(lines) if included else ""
    return ContextBlock(
        text=text,
        tokens=estimate_tokens(text) if text else 0,
        included=tuple(included),
        dropped=tuple(dropped),
        left_out={"over_budget": len(dropped)},
    )
