"""The rule gate: decides, per turn, whether extraction can skip it, trust the rules alone, or needs the LLM.

Pure: no I/O, no clock, no environment; never raises on any text.

Contract of `gate_turn(turn, *, previous_texts=())` -> `GateResult(decision, reason, lang)`:
- The rule extractor runs first, and a turn that carries a MUST candidate is NEVER skipped
  ("thanks! and remember I'm vegetarian" is not a "thanks").
- `rules_only` when the rules account for the whole (short) turn: every sentence is matched by a rule or is
  filler ("thanks", "ok", "also"); reason "must_candidate" when one of the candidates is MUST, else
  "rule_candidate".
- `skip` for nothing worth extracting: "empty", "code_only" (only code blocks), "tool_output" (tool and system
  turns), "emoji_only", "repeat" (the same normalised text as an earlier turn), "greeting", "thanks", "ack",
  "short_chatter" ("continue", "继续", "next"),
  "assistant_smalltalk" ("Happy to help!", "有什么可以帮你的吗").
- `needs_llm` for everything else: "partial_cover" when the rules matched only part of the turn (the LLM
  sees the turn for the rest: "数据库用 PostgreSQL，不要用 ORM" is never `rules_only` unless both parts were
  found), "substantive" when no rule matched a turn that may hold memories.
`covered` records how much of the turn's content the rules accounted for (0.0 to 1.0), `residual` what they
did not (both empty for a skipped turn); the extraction log carries them per turn.
`gate_window(turns)` gates each turn against the earlier turns of the window (for "repeat").
A kept result (`rules_only` / `needs_llm`) carries the rule extractor's candidates for the turn (`candidates`,
as `analyze_turn` found them), so callers need not run the rules a second time; a skipped one carries none.
The field is left out of comparisons: two results are equal when their decision, reason and language are.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from core.extraction.candidates import Candidate, Tier, Turn
from core.extraction.lang import comparison_key
from core.extraction.rules import analyze_turn, clean_text

MAX_SMALLTALK_CHARS = (
    160  # the longest turn that can be only small talk ("thanks so much, that's perfect, bye!")
)
MAX_RULES_ONLY_CHARS = 280  # longer turns go to the LLM even when rules matched: they say more than rules see


class GateDecision(StrEnum):
    SKIP = "skip"
    RULES_ONLY = "rules_only"
    NEEDS_LLM = "needs_llm"


@dataclass(frozen=True, slots=True)
class GateResult:
    decision: GateDecision
    reason: str
    lang: str = "en"
    # the rule candidates of a kept turn (what `analyze_turn` found); () for a skipped turn
    candidates: tuple[Candidate, ...] = field(default=(), compare=False)
    covered: float = field(default=0.0, compare=False)  # share of the turn's content words the rules covered
    residual: str = field(default="", compare=False)  # the text the rules did not account for


_B, _E = r"(?<![A-Za-z])(?:", r")(?![A-Za-z])"
_THANKS_TAIL = (
    r"(?:\s*(?:so\s+much|very\s+much|a\s+lot|a\s+ton|again|tons|for\s+(?:the|your|all\s+the|all\s+your)\s+"
    r"(?:help|quick\s+reply|answer|explanation|time|support|patience)|for\s+(?:that|this|everything|helping)))*"
)
# Phrases per category: (English, Chinese). A space stands for any whitespace; longer phrases are tried first.
_SMALLTALK: dict[str, tuple[str, str]] = {
    "assistant_smalltalk": (
        "happy to help|glad to help|glad i could help|glad that helped|glad it helped|you're welcome|"
        "you are welcome|anytime|my pleasure|let me know if you need anything else|"
        "let me know if you have any other questions|let me know if there's anything else i can help with|"
        "is there anything else i can help you with|is there anything else|anything else i can help with|"
        "how can i help you today|how can i help you|how can i help|how can i assist you today|"
        "how can i assist you|how may i help you|what can i do for you today|what can i do for you|"
        "feel free to ask|feel free to reach out|good luck|hope this helps|hope that helps|hope it helps|"
        "sure thing|of course|certainly|absolutely|you got it|happy coding",
        "有什么可以帮你的吗|有什么可以帮您的吗|有什么我可以帮你的吗|有什么我可以帮您的吗|"
        "有什么需要帮忙的吗|还有什么需要帮忙的吗|还有什么可以帮你的吗|还有什么可以帮您的吗|还有其他问题吗|"
        "还有什么问题吗|不客气|很高兴能帮到你|很高兴帮到你|很高兴为你服务|很高兴为您服务|随时为你服务|"
        "随时为您服务|乐意效劳|祝你好运|希望对你有帮助|希望对你有所帮助|希望能帮到你|希望能帮到您|当然|"
        "随时找我|有问题随时问",
    ),
    "greeting": (
        "hi|hello|hey|hey there|hi there|hello there|good morning|good afternoon|good evening|good night|"
        "morning|evening|howdy|yo|hiya|greetings|sup|what's up|bye|goodbye|bye bye|good bye|see you|see ya|"
        "see you later|later|cya|take care|have a good day|have a great day|have a nice day|"
        "have a good one|have a good weekend|hi all|hello everyone|hi everyone",
        "你好|您好|早上好|早安|上午好|中午好|下午好|晚上好|晚安|早|嗨|哈喽|哈啰|在吗|在不在|大家好|再见|"
        "拜拜|回见|明天见",
    ),
    "thanks": (
        "thanks|thank you|thank u|thx|ty|tysm|many thanks|cheers|appreciate it|much appreciated|that helps|"
        "that helped|very helpful|super helpful|thanks a lot|thank you very much|thank you so much",
        "谢谢|多谢|感谢|谢了|谢啦|辛苦了|辛苦|非常感谢|太感谢了|万分感谢|感恩|麻烦了|麻烦你了|谢谢你|"
        "谢谢您|谢谢你的帮助|谢谢帮忙|感谢你的帮助",
    ),
    "ack": (
        "ok|okay|k|kk|got it|gotcha|sounds good|sounds great|sure|alright|all right|cool|great|perfect|"
        "nice|yes|yep|yeah|yup|understood|makes sense|noted|will do|fine|good|awesome|great job|right|"
        "correct|exactly|agreed|done|no problem|np|no worries|lgtm|looks good|looks great|that works|"
        "works for me|i see|ah|oh|ahh|lol|haha|hahaha|wow|fair enough|true|indeed|excellent|amazing|"
        "brilliant|neat|no|nope|ok cool|oh ok|that worked|it worked|works now|it works|that fixed it|"
        "that did it|all good|no thanks|no thank you|fixed it|that's great|that's perfect|that's it|"
        "that's fine|it's fine|it's ok|that's ok|that's right",
        "好的|收到|嗯嗯|嗯|好嘞|好滴|好哒|好吧|好|行吧|行|可以了|可以|明白了|明白|知道了|了解了|了解|"
        "没问题|对的|对|是的|懂了|哦哦|哦|噢|哈哈哈|哈哈|牛|厉害|不错|太好了|完美|就这样|ok|不用了|记住了|"
        "记下了|搞定了|可以了|解决了|好使|就这么办|就这样吧|那就这样|好主意|有道理|懂了|修好了|搞定",
    ),
    "short_chatter": (
        "continue|go on|go ahead|next|next one|try again|again|proceed|keep going|carry on|more|do it|"
        "run it|yes please|please do|let's go|lets go|one more|same|same here|hmm|hmmm|hm|wait|one sec|brb|"
        "test|testing|ping|please|pls|and|also|so|then|now|well",
        "继续吧|继续|下一个|接着来|接着|再来|再试一次|重试|开始吧|开始|等一下|稍等|然后呢|测试|试试|请|吧|"
        "啊|呀|呢|啦|了",
    ),
}


def _alternation(phrases: str, *, latin: bool) -> str:
    ordered = sorted(set(phrases.split("|")), key=len, reverse=True)
    parts = [r"\s+".join(re.escape(word) for word in phrase.split()) for phrase in ordered]
    return "|".join(parts) if latin else "|".join(ordered)


def _group(name: str, latin: str, han: str) -> str:
    english = _alternation(latin, latin=True)
    if name == "thanks":
        english = f"(?:{english}){_THANKS_TAIL}"
    return f"(?P<{name}>{_B}{english}{_E}|{_alternation(han, latin=False)})"


# Assistant phrases come first so "good luck" / "sure thing" are not cut short by "good" / "sure".
_SMALLTALK_RE = re.compile("|".join(_group(name, *phrases) for name, phrases in _SMALLTALK.items()), re.I)
# Function words: what is left of a matched sentence once the rule's span is taken out ("for this repo").
_CONNECTORS_RE = re.compile(
    _B
    + r"and|also|but|so|please|pls|btw|by\s+the\s+way|oh|just|now|then|too|as\s+well|the|a|an|here|one\s+more"
    r"\s+thing|actually|really|for\s+the\s+record|fyi|for|this|that|these|those|in|on|at|of|to|with|our|my|its|"
    r"it|is|are|from|by|very|much|there|you|can|could|would|will|should"
    + _E
    + r"|另外|还有|对了|然后|而且|顺便|请|吧|了|呢|啊|哦|的|也|都|一下|"
    r"这个|那个|是|就|在",
    re.I,
)
_WORD_RE = re.compile(r"[A-Za-z0-9]+|[\u3400-\u9fff]")


def _leftover(text: str) -> list[str]:
    """Meaningful tokens of `text` once small talk and connectors are taken out."""
    return _WORD_RE.findall(_CONNECTORS_RE.sub(" ", _SMALLTALK_RE.sub(" ", text)))


def _smalltalk_reason(text: str, *, assistant: bool) -> str | None:
    """The small-talk category when the whole text is small talk, else None."""
    if len(text) > MAX_SMALLTALK_CHARS:
        return None  # small talk is short; a long turn says something, whatever it opens with
    first: str | None = None
    matched = 0
    for match in _SMALLTALK_RE.finditer(text):
        # A user saying "of course" / "you're welcome" is acknowledging.
        name = "ack" if match.lastgroup == "assistant_smalltalk" else match.lastgroup
        first = first or name
        matched += len(match.group())
    if first is None or 2 * matched < len(text) - text.count(" "):
        return None  # no small talk, or less than half the text: something else is said
    if _leftover(text):
        return None
    return "assistant_smalltalk" if assistant else first


def _is_emoji_only(text: str) -> bool:
    return not any(char.isalnum() for char in text) and any(
        unicodedata.category(char) in ("So", "Sk") for char in text
    )


def _covered(left: list[str]) -> bool:
    """Nothing left that could hold a memory: at most one stray Latin word and two Han characters (a Han
    character is a word's part: "不要用" is three, and a whole rule)."""
    return (
        sum(1 for word in left if word.isascii()) <= 1 and sum(1 for word in left if not word.isascii()) <= 2
    )


def _coverage(text: str, left: list[str]) -> float:
    total = len(_WORD_RE.findall(text))  # every word of the turn; small talk counts as covered by nothing
    return round(max(0.0, 1.0 - len(left) / total), 3) if total else 1.0


def _gate(turn: Turn, previous_keys: set[str]) -> GateResult:
    if not turn.content or not turn.content.strip():
        return GateResult(GateDecision.SKIP, "empty", turn.lang or "en")
    if turn.role in ("tool", "system", "function"):
        return GateResult(GateDecision.SKIP, "tool_output", turn.lang or "en")
    analysis = analyze_turn(turn)
    cleaned, lang = analysis.text, analysis.lang
    if not cleaned:
        return GateResult(GateDecision.SKIP, "code_only", lang)
    candidates = analysis.candidates
    has_must = any(cand.tier is Tier.MUST for cand in candidates)
    short = len(cleaned) <= MAX_RULES_ONLY_CHARS
    left = _leftover(analysis.residual) if candidates else []
    covered = _coverage(cleaned, left) if candidates else 0.0

    def kept(decision: GateDecision, reason: str) -> GateResult:
        return GateResult(decision, reason, lang, candidates, covered, analysis.residual)

    if has_must:
        if short and _covered(left):
            return kept(GateDecision.RULES_ONLY, "must_candidate")
        return kept(GateDecision.NEEDS_LLM, "partial_cover")
    if comparison_key(cleaned) in previous_keys:
        return GateResult(GateDecision.SKIP, "repeat", lang)
    if candidates:
        if short and _covered(left):
            return kept(GateDecision.RULES_ONLY, "rule_candidate")
        return kept(GateDecision.NEEDS_LLM, "partial_cover")
    if _is_emoji_only(cleaned):
        return GateResult(GateDecision.SKIP, "emoji_only", lang)
    if not any(char.isalpha() for char in cleaned):
        return GateResult(GateDecision.SKIP, "short_chatter", lang)  # "...", "???", "1"
    reason = _smalltalk_reason(cleaned, assistant=turn.role == "assistant")
    if reason is not None:
        return GateResult(GateDecision.SKIP, reason, lang)
    if not analysis.residual.strip():
        # every sentence was read as no statement (irony, "I didn't say ...", "..., not mine"): nothing is left
        # for the residual filter, which would otherwise store the turn verbatim
        return GateResult(GateDecision.SKIP, "no_statement", lang)
    return GateResult(GateDecision.NEEDS_LLM, "substantive", lang, residual=cleaned)


def gate_turn(turn: Turn, *, previous_texts: Sequence[str] = ()) -> GateResult:
    """Gate one turn; `previous_texts` are the earlier turns' texts (a turn repeating one is skipped)."""
    keys = {key for key in (comparison_key(clean_text(text)) for text in previous_texts) if key}
    return _gate(turn, keys)


def gate_window(turns: Sequence[Turn]) -> list[GateResult]:
    """Gate each turn of a window, in order, against the earlier turns of the same window."""
    results: list[GateResult] = []
    seen: set[str] = set()
    for turn in turns:
        results.append(_gate(turn, seen))
        key = comparison_key(clean_text(turn.content or ""))
        if key:
            seen.add(key)
    return results
