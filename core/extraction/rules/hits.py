"""Rule hits and the builders both rule sets make them with. Pure: no I/O.

- A `Hit` is a `Candidate` with empty sources (the caller fills them) and the span of the sentence it accounts
  for (the gate uses spans to tell "fully covered" turns from substantive ones).
- `make` builds a rule candidate; `fact` a WORTH fact whose kind and category follow from its slot
  (`slot_kind`); `tool_hit` "The user's project uses X." / "用户的项目使用 X。" in the tool's slot;
  `reply_hit` a `user.reply_style` / `user.reply_language` candidate. Content is in the hit's `lang`.
- `must` raises a hit to MUST (an explicit remember / correction around it); `shift` moves spans by an
  offset, `without_insert` maps them back over text inserted (a dropped subject put back); `statements`
  finds every subject-verb statement of a pattern, nested ones included.
- `forget_target` names the slot (and value) a forget request is about, in either language.
"""

from __future__ import annotations

import dataclasses
import re

from core.extraction.candidates import Candidate, Category, Kind, Operation, Tier
from core.extraction.rules.vocab import Tool, find_tools

Hit = tuple[Candidate, int, int]


def slot_kind(slot: str | None) -> tuple[Kind, Category]:
    """The kind and category a slot's facts have (profile for the user, fact for the project)."""
    if slot in ("user.reply_style", "user.reply_language"):
        return Kind.SEMANTIC, Category.PREFERENCE
    if slot is not None and slot.startswith("user."):
        return Kind.SEMANTIC, Category.PROFILE
    return Kind.SEMANTIC, Category.FACT


def make(
    content: str,
    kind: Kind,
    category: Category,
    tier: Tier,
    *,
    rule: str,
    confidence: float,
    lang: str,
    slot: str | None = None,
    value: str | None = None,
    op: Operation = Operation.REMEMBER,
    extra: dict[str, str] | None = None,
) -> Candidate:
    """A rule candidate without sources (the caller adds them)."""
    return Candidate(
        content=content, kind=kind, category=category, tier=tier, confidence=confidence, source_event_ids=(),
        slot=slot, value=value, op=op, lang=lang, origin="rules", rule=rule, extra=extra or {},
    )  # fmt: skip


def fact(
    content: str, slot: str | None, value: str | None, *, rule: str, lang: str, conf: float = 0.85
) -> Candidate:
    """A WORTH fact whose kind and category follow from its slot."""
    kind, category = slot_kind(slot)
    return make(
        content, kind, category, Tier.WORTH, rule=rule, confidence=conf, lang=lang, slot=slot, value=value
    )


def must(hit: Hit, prefix: str, *, start: int = 0, end: int | None = None) -> Hit:
    """The hit raised to MUST (an explicit remember / correction around it), its span widened."""
    cand, hit_start, hit_end = hit
    confidence = max(cand.confidence, 0.9)
    upgraded = dataclasses.replace(cand, tier=Tier.MUST, confidence=confidence, rule=f"{prefix}+{cand.rule}")
    return upgraded, min(start, hit_start), max(end if end is not None else hit_end, hit_end)


def shift(hits: list[Hit], offset: int) -> list[Hit]:
    return [(cand, start + offset, end + offset) for cand, start, end in hits]


def without_insert(hits: list[Hit], at: int, added: int) -> list[Hit]:
    """Spans found in a text with `added` characters inserted at `at` (a dropped subject put back), mapped
    back onto the text as it was said."""

    def back(pos: int) -> int:
        return pos if pos <= at else max(at, pos - added)

    return [(cand, back(start), back(end)) for cand, start, end in hits]


def statements(pattern: re.Pattern[str], sentence: str) -> list[re.Match[str]]:
    """All matches of a subject-verb-span pattern, a later statement allowed inside an earlier one's span."""
    found: list[re.Match[str]] = []
    pos = 0
    while pos < len(sentence) and (match := pattern.search(sentence, pos)) is not None:
        found.append(match)
        pos = match.start("span")
    return found


def named(tool: Tool, lang: str) -> str:
    """A tool's display name, with the words the user named it by when they differ."""
    said = " ".join(tool.said.split())
    if not said or said.casefold() == tool.display.casefold():
        return tool.display
    if lang == "zh":
        return f"{said}（{tool.display}）" if not said.isascii() else f"{tool.display}（{said}）"
    return f"{tool.display} ({said})"


def tool_hit(
    tool: Tool, start: int, end: int, *, rule: str, lang: str, category: Category | None = None,
    tier: Tier = Tier.WORTH, confidence: float = 0.85,
) -> Hit:  # fmt: skip
    """ "The user's project uses X." / "用户的项目使用 X。" for a tool in its slot, named as the user named it too
    ("PostgreSQL (Postgres)", "飞书（Feishu）")."""
    user_level = tool.slot is not None and tool.slot.startswith("user.")
    name = named(tool, lang)
    if lang == "zh":
        content = f"用户使用 {name}。" if user_level else f"用户的项目使用 {name}。"
    else:
        content = f"The user uses {name}." if user_level else f"The user's project uses {name}."
    kind, default_category = slot_kind(tool.slot)
    category = category or default_category
    cand = make(content, kind, category, tier, rule=rule, confidence=confidence, lang=lang, slot=tool.slot,
                value=tool.canonical)  # fmt: skip
    return cand, start, end


# fmt: off
_LANGUAGE_NAMES = {
    "en": ("English", "英文"), "zh": ("Chinese", "中文"), "ja": ("Japanese", "日语"),
    "fr": ("French", "法语"), "de": ("German", "德语"), "es": ("Spanish", "西班牙语"),
    "ko": ("Korean", "韩语"), "pt": ("Portuguese", "葡萄牙语"), "it": ("Italian", "意大利语"),
    "ru": ("Russian", "俄语"), "en-gb": ("British English", "英式英语"), "en-us": ("American English", "美式英语"),
    "zh-hans": ("Simplified Chinese", "简体中文"), "zh-hant": ("Traditional Chinese", "繁体中文"),
    "pt-br": ("Brazilian Portuguese", "巴西葡萄牙语"),
}
_STYLE_CONTENT = {
    "concise": ("The user prefers concise answers.", "用户喜欢简洁的回复。"),
    "detailed": ("The user prefers detailed answers.", "用户喜欢详细的回复。"),
    "bullet_points": ("The user prefers answers in bullet points.", "用户喜欢分点列出的回复。"),
}
_REPLY_MODES = {  # how a reply preference was said -> kind, category, tier
    "pref": (Kind.SEMANTIC, Category.PREFERENCE, Tier.WORTH),  # "I prefer short answers"
    "soft_rule": (Kind.PROCEDURAL, Category.CONSTRAINT, Tier.WORTH),  # "keep answers short"
    "rule": (Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST),  # "always keep answers short"
    "feedback": (Kind.PROCEDURAL, Category.FEEDBACK, Tier.MUST),  # "your answers are too long"
}
# fmt: on


def reply_hit(slot: str, value: str, *, mode: str, lang: str, rule: str, end: int, said: str = "") -> Hit:
    """A `user.reply_style` / `user.reply_language` candidate; `mode` is a key of `_REPLY_MODES`. An
    instruction that says more than the style ("先给结论，再展开解释") keeps its own words after it."""
    if slot == "user.reply_style":
        content = _STYLE_CONTENT[value][1 if lang == "zh" else 0]
    else:
        english, chinese = _LANGUAGE_NAMES[value]
        content = f"用户希望用{chinese}回复。" if lang == "zh" else f"The user wants replies in {english}."
    said = said.strip(" .!。")
    if mode != "pref" and len(said) >= (8 if lang == "zh" else 24):
        content = f"{content[:-1]}（{said}）。" if lang == "zh" else f"{content[:-1]} ({said})."
    kind, category, tier = _REPLY_MODES[mode]
    confidence = 0.85 if tier is Tier.MUST else 0.75
    cand = make(
        content, kind, category, tier, rule=rule, confidence=confidence, lang=lang, slot=slot, value=value
    )
    return cand, 0, end


# fmt: off
_FORGET_SLOTS = tuple((re.compile(pattern, re.I), slot) for pattern, slot in (
    (r"\b(?:nick\s?name|what\s+to\s+call\s+me|call\s+me)\b|昵称|称呼|怎么叫我|叫我", "user.address_as"),
    (r"\bname\b|名字|叫什么|姓名", "user.name"),
    (r"\b(?:address|where\s+i\s+live|live\s+in|location|city|moved)\b|地址|住址|住在|住哪|在哪住|搬",
     "user.location"),
    (r"\b(?:employer|company|where\s+i\s+work|work\s+(?:at|for))\b|公司|单位|在哪上班", "user.employer"),
    (r"\b(?:job|role|title|occupation|profession)\b|工作|职业|职位", "user.job"),
    (r"\bphone|mobile\s+number\b|手机|电话", "user.phone"),
    (r"\be-?mail\b|邮箱", "user.email"),
    (r"\b(?:birthday|date\s+of\s+birth)\b|生日", "user.birthday"),
    (r"\btime\s?zone\b|时区", "user.timezone"),
    (r"\b(?:diet|vegetarian|vegan)\b|吃素|素食|饮食", "user.diet"),
    (r"\bpackage\s+manager\b|包管理", "project.package_manager"),
    (r"\bdatabase\b|数据库", "project.database"),
))
# fmt: on


def forget_target(payload: str, inner: list[Hit]) -> tuple[str | None, str | None, Kind, Category]:
    """The slot (and value) a forget request names: from a parsed statement, a tool, or keywords."""
    for cand, _, _ in inner:
        if cand.slot:
            return cand.slot, cand.value, cand.kind, cand.category
    for tool, _, _ in find_tools(payload):
        if tool.slot:
            return tool.slot, tool.canonical, Kind.SEMANTIC, Category.FACT
    for pattern, slot in _FORGET_SLOTS:
        if pattern.search(payload):
            return (slot, None, *slot_kind(slot))
    if inner:
        return None, None, inner[0][0].kind, inner[0][0].category
    return None, None, Kind.SEMANTIC, Category.PROFILE
