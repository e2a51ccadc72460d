"""Turns in, rule candidates out: the rule extractor's entry points (the contract is the package's docstring).

Each sentence is matched in its own language ("zh" when Han characters outweigh Latin words), then in the
other too when it mixes scripts; `dedupe` folds a window's duplicate candidates into the latest one.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.extraction.candidates import Candidate, Tier, Turn
from core.extraction.lang import detect_lang, has_han
from core.extraction.rules import en, zh
from core.extraction.rules.hits import Hit
from core.extraction.rules.sentences import clean_text, split_sentences

MAX_SENTENCE_CHARS = 400
_LATIN_WORD_RE = re.compile(r"[A-Za-z]{2,}")
_WORD_RE = re.compile(r"\w")


@dataclass(frozen=True, slots=True)
class TurnAnalysis:
    candidates: tuple[Candidate, ...]
    lang: str  # the turn's language: "zh" | "en"
    text: str  # the cleaned text (no code blocks, no quoted lines), normalised
    residual: str  # the part of `text` the rules did not account for, pieces joined by " | "


def _sentence_hits(sentence: str) -> list[Hit]:
    english, chinese = en.sentence_hits, zh.sentence_hits
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
            if not _WORD_RE.search(cand.content):
                continue  # a request with nothing to keep ("remember -、"): its span is accounted for, no memory
            candidates.append(dataclasses.replace(cand, source_event_ids=sources, source_turn_ids=turn_ids))
        rest = _uncovered(sentence, [(start, end) for _, start, end in hits]) if hits else sentence
        if rest:
            residual.append(rest)
    return TurnAnalysis(tuple(dedupe(candidates)), lang, text, " | ".join(residual))


def extract_turn(turn: Turn, *, roles: Sequence[str] = ("user",)) -> list[Candidate]:
    return list(analyze_turn(turn, roles=roles).candidates)


def extract_rules(turns: Sequence[Turn], *, roles: Sequence[str] = ("user",)) -> list[Candidate]:
    """Rule candidates for a window of turns, deduplicated within the window (see the package docstring)."""
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
