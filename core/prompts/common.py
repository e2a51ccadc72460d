"""How prompts lay out turns and lists (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from core.extraction.candidates import Turn


def format_turn(turn: Turn) -> str:
    """`[event id] role: content`. One line per turn keeps ids next to their text; inner newlines are
    indented so a turn cannot fake an id."""
    content = turn.content.strip().replace("\n", "\n    ")
    return f"[{turn.event_id}] {turn.role}: {content}"


def bullets(lines: Sequence[str]) -> str:
    """Markdown bullets, or "(none)"."""
    return "\n".join(f"- {line}" for line in lines) if lines else "(none)"
