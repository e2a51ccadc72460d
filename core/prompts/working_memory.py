"""The working-memory prompt: the user's document rewritten as a whole, in four sections. Pure.

Versioned: change `WORKING_MEMORY_PROMPT_VERSION` whenever the prompt changes.
"""

from __future__ import annotations

WORKING_MEMORY_PROMPT_VERSION = "working-memory-v1"
WORKING_MEMORY_PROMPT = (
    "Rewrite the working-memory document an assistant keeps about one user and their project: where things "
    "stand, what was decided, what to avoid. Use exactly these markdown sections, in this order: "
    "## Constraints, ## Decisions, ## Current progress, ## Lessons; short bullet points; drop anything stale "
    "or superseded; keep names, versions and dates; write '- (none)' for an empty section. Reply with the "
    "document only."
)
WM_SECTIONS = ("## Constraints", "## Decisions", "## Current progress", "## Lessons")


def build_working_memory_messages(document: str) -> list[dict[str, str]]:
    """The system prompt and one user message holding the deterministic document (memories and episodes)."""
    return [
        {"role": "system", "content": WORKING_MEMORY_PROMPT},
        {"role": "user", "content": "Current memories and recent episodes:\n\n" + document},
    ]


def parse_working_memory_answer(content: str | None) -> str | None:
    """The document, stripped, when it holds the four sections in order; else None."""
    positions = [content.find(h) for h in WM_SECTIONS] if content else []
    if positions and all(p >= 0 for p in positions) and positions == sorted(positions):
        return content.strip()  # type: ignore[union-attr]
    return None
