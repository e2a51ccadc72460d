"""The episode prompt: one finished session summarised as what happened, its outcome and lesson. Pure.

Versioned: change `EPISODE_PROMPT_VERSION` whenever the prompt changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.episodes import EpisodeText
from core.extraction.candidates import Turn

EPISODE_PROMPT_VERSION = "episode-v1"
EPISODE_PROMPT = (
    "Summarise one finished session between a user and an assistant as an episode for long-term memory. "
    'Reply with JSON only: {"what_happened": str, "outcome": str, "lesson": str}, each at most two sentences, '
    "in the language of the conversation; empty strings when there is no clear outcome or lesson."
)
MAX_EPISODE_TURNS = 60  # the session's latest turns shown
MAX_TURN_CHARS = 800  # of each turn shown


class EpisodeAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    what_happened: str = Field(min_length=1, max_length=2000)
    outcome: str = Field(default="", max_length=2000)
    lesson: str = Field(default="", max_length=2000)


def build_episode_messages(*, summary: str | None, turns: Sequence[Turn]) -> list[dict[str, str]]:
    """The system prompt and one user message: the session's summary and its latest turns, clipped."""
    shown = turns[-MAX_EPISODE_TURNS:]
    transcript = "\n".join(f"{t.role}: {t.content[:MAX_TURN_CHARS]}" for t in shown)
    return [
        {"role": "system", "content": EPISODE_PROMPT},
        {
            "role": "user",
            "content": f"Session summary so far:\n{summary or '(none)'}\n\nTurns:\n{transcript}",
        },
    ]


def parse_episode_answer(content: str | None) -> EpisodeText | None:
    """The episode, its fields stripped; None for an empty or invalid answer."""
    if not content:
        return None
    try:
        a = EpisodeAnswer.model_validate_json(content)
    except ValidationError:
        return None
    return EpisodeText(a.what_happened.strip(), a.outcome.strip(), a.lesson.strip())
