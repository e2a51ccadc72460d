"""Episodes and working memory, deterministic versions (pure). The LLM versions live in the services and
fall back to these.

An episode records one session: what happened, the outcome, the lesson. Working memory is one markdown
document per (tenant, user[, agent]) with the sections Constraints / Decisions / Current progress / Lessons,
rewritten as a whole each night from current memories and recent episodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.extraction.candidates import Turn
from core.extraction.summary import parse_summary

MAX_CHARS = 400
_LESSON = re.compile(
    r"\b(lesson|learn(?:ed|t)|next time|turns out|root cause|the fix (?:was|is)|should have|note to self)\b|"
    r"教训|学到|下次|原来是|根本原因|应该先",
    re.I,
)
_OUTCOME = re.compile(
    r"\b(works? now|fixed|resolved|solved|done|deployed|merged|shipped|failed|gave up|still broken|it worked)\b|"
    r"解决了|修好了|搞定|完成了|上线了|失败了|还是不行",
    re.I,
)


@dataclass(frozen=True)
class EpisodeText:
    what_happened: str
    outcome: str
    lesson: str

    def as_text(self) -> str:
        parts = [self.what_happened]
        if self.outcome:
            parts.append(f"Outcome: {self.outcome}")
        if self.lesson:
            parts.append(f"Lesson: {self.lesson}")
        return "\n".join(parts)


def _clip(text: str, limit: int = MAX_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+", text) if len(s.strip()) > 3]


def deterministic_episode(turns: Sequence[Turn], *, summary: str, memories: Sequence[str]) -> EpisodeText:
    """What happened: the opening request, the summary's decisions and the memories learned; outcome: the
    last sentence that reports a result; lesson: the last sentence that states one."""
    user_turns = [t for t in turns if t.role == "user" and t.content.strip()]
    opening = _clip(user_turns[0].content, 200) if user_turns else ""
    sections = parse_summary(summary)
    points = sections.get("Decisions", [])[-3:] + list(memories)[:3]
    what = opening
    if points:
        what = (what + " — " if what else "") + "; ".join(_clip(p, 120) for p in points)
    outcome = lesson = ""
    for t in turns:
        for sentence in _sentences(t.content):
            if _LESSON.search(sentence):
                lesson = _clip(sentence, 240)
            elif _OUTCOME.search(sentence):
                outcome = _clip(sentence, 240)
    if not outcome and turns:
        outcome = _clip(turns[-1].content, 240)
    return EpisodeText(what_happened=_clip(what or "(empty session)"), outcome=outcome, lesson=lesson)


@dataclass(frozen=True)
class WMItem:
    kind: str
    category: str
    content: str


def working_memory_document(
    items: Sequence[WMItem], episodes: Sequence[EpisodeText], *, max_per_section: int = 8
) -> str:
    """Assemble the working-memory document from current memories and recent episodes (newest first)."""
    constraints = [
        i.content for i in items if i.kind == "procedural" or i.category in ("constraint", "feedback")
    ]
    decisions = [i.content for i in items if i.category == "decision"]
    lessons = [i.content for i in items if i.category == "lesson"] + [e.lesson for e in episodes if e.lesson]
    progress = [e.what_happened + (f" → {e.outcome}" if e.outcome else "") for e in episodes[:3]]
    sections = {
        "Constraints": constraints,
        "Decisions": decisions,
        "Current progress": progress,
        "Lessons": lessons,
    }
    out = []
    for name, entries in sections.items():
        unique = list(dict.fromkeys(_clip(e, 240) for e in entries if e))[:max_per_section]
        out.append(f"## {name}\n" + ("\n".join(f"- {e}" for e in unique) if unique else "- (none)"))
    return "\n\n".join(out)


def document_mentions(document: str, changed: Iterable[tuple[str, str | None]]) -> bool:
    """Whether a working-memory document names a memory that just stopped being current (its text, or its
    slot's value): a rewritten document would say something else."""
    folded = document.casefold()
    return any(
        (content and content.casefold() in folded) or (value and value.casefold() in folded)
        for content, value in changed
    )
