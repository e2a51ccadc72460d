"""The rule extractor: bilingual (English + Chinese), deterministic, pure (no I/O, no clock, no environment).

Contract:
- `extract_rules(turns, *, roles=("user",))` -> candidates for a window of turns, in turn order. Only user
  turns produce candidates by default (the assistant does not state the user's facts). Within the window a
  candidate is deduplicated by (op, slot, value) when it has a slot, else by (op, kind, category, content):
  duplicates fold into one candidate with the union of sources, the higher tier and confidence, placed where
  it last appeared (so "npm ... pnpm ... npm" still ends on npm for reconciliation).
- `analyze_turn(turn)` -> `TurnAnalysis`: that turn's candidates plus the text the rules did not account for
  (`residual`); the gate uses it to decide whether a turn still needs the LLM.
- Each candidate carries `source_event_ids=(turn.event_id,)`, `source_turn_ids=(turn.source_turn_id,)` when
  present, `origin="rules"`, `rule` = the rule id, `lang` = the language of the sentence it came from.
- Turns are cleaned first: fenced code blocks, indented code and "> quoted" lines are dropped (pasted code and
  quoted text are not the user's statements); inline `code` keeps its text. Every sentence is matched in its
  own language ("zh" when Han characters outweigh Latin words), then in the other when it mixes scripts.
- Never raises on any text; time is linear in the text length (over-long sentences are skipped: they are
  pasted content, not statements about the user).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.extraction import rules_en, rules_zh
from core.extraction.candidates import Candidate, Tier, Turn
from core.extraction.lang import detect_lang, has_han, normalize_lines

MAX_SENTENCE_CHARS = 400
_FENCE_RE = re.compile(r"(?ms)^[ \t]*(```|~~~).*?(?:^[ \t]*\1[ \t]*$|\Z)")
_INDENTED_CODE_RE = re.compile(r"(?m)^(?: {4,}|\t).*$")
_QUOTED_RE = re.compile(r"(?m)^[ \t]*>.*$")
_INLINE_CODE_RE = re.compile(r"`([^`\n]{1,80})`")
# "Next.js", "v1.2", "Dr. Patel" and "e.g. this" keep their dot; "小王.我" (a mapped "。") ends a sentence.
_INNER_DOT_RE = re.compile(
    r"(?<=[A-Za-z0-9])\.(?=[A-Za-z0-9])|(?:(?<=\bDr)|(?<=\bMr)|(?<=\bMrs)|(?<=\bMs)|(?<=\bProf)|(?<=\bSt)|"
    r"(?<=\bJr)|(?<=\bvs)|(?<=\betc)|(?<=\be\.g)|(?<=\bi\.e))\.(?=\s)"
)
_DOT_MARK = "\u2024"
_LEADING_NOISE_RE = re.compile(r"^(?:[^\w\s\"'(\[]|\s|\d+[.)]\s)+")
_EMPHASIS_RE = re.compile(r"\*{1,3}")
_SENTENCE_RE = re.compile(r"[^.!?;\n]+[.!?;]*|[.!?;]+")
_LATIN_WORD_RE = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True, slots=True)
class TurnAnalysis:
    candidates: tuple[Candidate, ...]
    lang: str  # the turn's language: "zh" | "en"
    text: str  # the cleaned text (no code blocks, no quoted lines), normalised
    residual: str  # the part of `text` the rules did not account for, pieces joined by " | "


def clean_text(text: str) -> str:
    """The turn's text without code blocks and quoted lines, normalised line by line."""
    if "```" in text or "~~~" in text:
        text = _FENCE_RE.sub("\n", text)
    text = _QUOTED_RE.sub("", _INDENTED_CODE_RE.sub("", text))
    if "`" in text:
        text = _INLINE_CODE_RE.sub(r"\1", text)
    if "*" in text:  # Markdown emphasis: "**Remember**: ..."
        text = _EMPHASIS_RE.sub("", text)
    return normalize_lines(text)


def split_sentences(text: str) -> list[str]:
    """Sentences of a cleaned text; leading bullets, emoji and symbols dropped ("👍 remember ...")."""
    protected = _INNER_DOT_RE.sub(_DOT_MARK, text)
    sentences = (
        _LEADING_NOISE_RE.sub("", match.group()).strip().replace(_DOT_MARK, ".")
        for match in _SENTENCE_RE.finditer(protected)
    )
    return [sentence for sentence in sentences if sentence.strip(".!?; ")]


def _sentence_hits(sentence: str) -> list[rules_en.Hit]:
    english, chinese = rules_en.sentence_hits, rules_zh.sentence_hits
    first, second = (chinese, english) if detect_lang(sentence) == "zh" else (english, chinese)
    hits = first(sentence)
    if has_han(sentence) and len(_LATIN_WORD_RE.findall(sentence)) >= 2:
        hits += second(sentence)  # a mixed sentence ("请记住 my name is Alice"): both sets, folded by dedupe
    return hits


def _uncovered(sentence: str, spans: list[tuple[int, int]]) -> str:
    keep = [True] * len(sentence)
    for start, end in spans:
        for index in range(max(0, start), min(len(sentence), end)):
            keep[index] = False
    return "".join(char for char, kept in zip(sentence, keep, strict=True) if kept).strip()


def analyze_turn(turn: Turn, *, roles: Sequence[str] = ("user",)) -> TurnAnalysis:
    """Candidates of one turn and the residual text the rules did not account for."""
    text = clean_text(turn.content)
    lang = turn.lang if turn.lang in ("zh", "en") else detect_lang(text)
    if turn.role not in roles:
        return TurnAnalysis((), lang, text, text)
    sources = (turn.event_id,)
    turn_ids = (turn.source_turn_id,) if turn.source_turn_id else ()
    candidates: list[Candidate] = []
    residual: list[str] = []
    for sentence in split_sentences(text):
        if len(sentence) > MAX_SENTENCE_CHARS:
            residual.append(sentence)
            continue
        hits = _sentence_hits(sentence)
        for cand, _, _ in hits:
            candidates.append(dataclasses.replace(cand, source_event_ids=sources, source_turn_ids=turn_ids))
        rest = _uncovered(sentence, [(start, end) for _, start, end in hits]) if hits else sentence
        if rest:
            residual.append(rest)
    return TurnAnalysis(tuple(dedupe(candidates)), lang, text, " | ".join(residual))


def extract_turn(turn: Turn, *, roles: Sequence[str] = ("user",)) -> list[Candidate]:
    return list(analyze_turn(turn, roles=roles).candidates)


def extract_rules(turns: Sequence[Turn], *, roles: Sequence[str] = ("user",)) -> list[Candidate]:
    """Rule candidates for a window of turns, deduplicated within the window (see the module docstring)."""
    found: list[Candidate] = []
    for turn in turns:
        found.extend(analyze_turn(turn, roles=roles).candidates)
    return dedupe(found)


def _key(cand: Candidate) -> tuple[str, ...]:
    if cand.slot is not None:
        return (cand.op.value, cand.slot, (cand.value or "").casefold())
    content = re.sub(r"[\W_]+", "", cand.content.casefold())
    return (cand.op.value, cand.kind.value, cand.category.value, content)


def _fold(old: Candidate, new: Candidate) -> Candidate:
    best = (
        new
        if (new.tier is Tier.MUST and old.tier is not Tier.MUST)
        or (new.tier == old.tier and new.confidence > old.confidence)
        else old
    )
    return dataclasses.replace(
        best,
        tier=Tier.MUST if Tier.MUST in (old.tier, new.tier) else best.tier,
        confidence=max(old.confidence, new.confidence),
        source_event_ids=tuple(dict.fromkeys(old.source_event_ids + new.source_event_ids)),
        source_turn_ids=tuple(dict.fromkeys(old.source_turn_ids + new.source_turn_ids)),
    )


def dedupe(candidates: Sequence[Candidate]) -> list[Candidate]:
    merged: dict[tuple[str, ...], Candidate] = {}
    for cand in candidates:
        key = _key(cand)
        if key in merged:
            cand = _fold(merged.pop(key), cand)  # re-inserted last: it is the latest statement
        merged[key] = cand
    return list(merged.values())
