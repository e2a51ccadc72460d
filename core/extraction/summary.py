"""The session window's rolling summary, extractive fallback (no LLM): pure functions.

A session past `fold_after` turns has everything older than its last `keep_recent` turns folded into a
summary with the sections Decisions / Key files / Problems / Preferences / Open tasks. With an LLM the
summary is written by the model (`worker.services.summary.summarize`); without one, sentences are picked by cue words
in English and Chinese, newest kept, each section bounded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.extraction.candidates import Turn

SECTIONS = ("Decisions", "Key files", "Problems", "Preferences", "Open tasks")
MAX_ITEMS_PER_SECTION = 6
MAX_ITEM_CHARS = 180

_CUES: dict[str, re.Pattern[str]] = {
    "Decisions": re.compile(
        r"\b(decid\w*|we(?:'ll| will) (?:use|go with)|let'?s (?:use|go with)|go with|chose|choose|settled on|"
        r"switch(?:ed)? to|agreed)\b|决定|就用|改用|选择了|定了",
        re.I,
    ),
    "Problems": re.compile(
        r"\b(error|exception|bug|fail(?:s|ed|ing|ure)?|broken|crash\w*|traceback|timeout|doesn'?t work|issue)\b|"
        r"报错|错误|失败|崩溃|问题|不行|超时",
        re.I,
    ),
    "Preferences": re.compile(
        r"\b(i (?:prefer|like|love|hate|want)|please (?:always|never)|don'?t (?:use|like)|never|always)\b|"
        r"喜欢|偏好|不要|别用|总是|永远",
        re.I,
    ),
    "Open tasks": re.compile(
        r"\b(todo|next(?: step)?|need to|still have to|remaining|later|follow[- ]up|tomorrow)\b|"
        r"待办|下一步|还需要|之后|明天|接下来",
        re.I,
    ),
}
_FILE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:py|ts|tsx|js|jsx|go|rs|java|kt|rb|php|c|h|cpp|cs|"
    r"md|json|ya?ml|toml|ini|cfg|sql|sh|html|css|lock|txt|env|dockerfile))(?![\w])",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ITEM_CHARS else text[: MAX_ITEM_CHARS - 1] + "…"


def parse_summary(summary: str) -> dict[str, list[str]]:
    """Read a summary written by `render_summary` (or a model following the same layout)."""
    sections: dict[str, list[str]] = {name: [] for name in SECTIONS}
    current: str | None = None
    for line in summary.splitlines():
        stripped = line.strip()
        heading = stripped.lstrip("#").strip().rstrip(":")
        if stripped.startswith("#") and heading in sections:
            current = heading
        elif current and stripped.startswith(("- ", "* ")):
            sections[current].append(stripped[2:].strip())
    return sections


def render_summary(sections: dict[str, list[str]]) -> str:
    parts = []
    for name in SECTIONS:
        items = sections.get(name) or []
        if items:
            parts.append(f"## {name}\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(parts)


def extractive_summary(previous: str, turns: Sequence[Turn]) -> str:
    """Fold `turns` into `previous`: cue-word sentences per section, files mentioned, newest items kept."""
    sections = parse_summary(previous)
    for turn in turns:
        if turn.role not in ("user", "assistant"):
            continue
        for path in _FILE.findall(turn.content):
            if path not in sections["Key files"]:
                sections["Key files"].append(path)
        for sentence in _SENTENCE.split(turn.content):
            sentence = sentence.strip()
            if len(sentence) < 4:
                continue
            for name, cue in _CUES.items():
                if cue.search(sentence):
                    item = _clip(sentence if turn.role == "user" else f"(assistant) {sentence}")
                    if item not in sections[name]:
                        sections[name].append(item)
                    break
    return render_summary({name: items[-MAX_ITEMS_PER_SECTION:] for name, items in sections.items()})
