"""Turns in, rule candidates out: the rule extractor's entry points (the contract is the package's docstring).

Each sentence is matched in its own language ("zh" when Han characters outweigh Latin words), then in the
other too when it mixes scripts; `dedupe` folds a window's duplicate candidates into the latest one.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.extraction.candidates import Candidate, Category, Kind, Tier, Turn
from core.extraction.lang import detect_lang, has_han
from core.extraction.rules import en, zh
from core.extraction.rules.dispatch import change_hits, opens_stack, stack_hits
from core.extraction.rules.en.grammar import blocked as en_blocked
from core.extraction.rules.en.grammar import sentence_case, third_person
from core.extraction.rules.hits import Hit, shift
from core.extraction.rules.sentences import clean_text, split_clauses, split_sentences
from core.extraction.rules.vocab import current_tool, topic_slot
from core.extraction.rules.zh.grammar import blocked as zh_blocked
from core.extraction.rules.zh.grammar import zh_content

MAX_SENTENCE_CHARS = 400
_LATIN_WORD_RE = re.compile(r"[A-Za-z]{2,}")
_WORD_RE = re.compile(r"\w")


@dataclass(frozen=True, slots=True)
class TurnAnalysis:
    candidates: tuple[Candidate, ...]
    lang: str  # the turn's language: "zh" | "en"
    text: str  # the cleaned text (no code blocks, no quoted lines), normalised
    residual: str  # the part of `text` the rules did not account for, pieces joined by " | "


_TOPIC_CHANGE_RE = re.compile(
    r"(?:\b(?:changed|switched|replaced|rotated|moved|new)\b|换了|换成|改成|改为|调成|调整为|变成|换)[^,;]*[,;]\s*"
    r"(?:(?:and\s+)?now\s+(?:it's|it\s+is|is|we\s+have|we\s+use)?|现在(?:是|换成|改成|用)?|目前是)\s*\S",
    re.I,
)


def _topic_change_hits(sentence: str) -> list[Hit]:
    """A single-valued topic whose value changed, the new value told after the change."""
    if not _TOPIC_CHANGE_RE.search(sentence):
        return []
    slot = topic_slot(sentence)
    if slot is None or _is_asked(sentence):
        return []
    if en_blocked(sentence, len(sentence)) and zh_blocked(sentence, len(sentence)):
        return []
    lang = detect_lang(sentence)
    content = zh_content(sentence) if lang == "zh" else sentence_case(third_person(sentence))
    value = re.sub(r"[\W_]+", " ", content.casefold()).strip()[:120]
    cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.WORTH, confidence=0.8,
                     source_event_ids=(), slot=slot, value=value, lang=lang, rule=f"{lang}.topic.change")  # fmt: skip
    return [(cand, 0, len(sentence))]


# What a clause-opening rule starts with, in either language: a prohibition, a standing rule, a request about
# memory, a correction, or a thing named first ("ORM 就别用了").
_CLAUSE_OPENER_RE = re.compile(
    r"^(?:(?:and|but|so|also|plus|oh|ok|okay|btw|then|just)[\s,]+)*(?:please|pls|kindly|don't|dont|do\s+not|never|"
    r"always|avoid|stop|no\b|not\b|use\b|remember|forget|keep|make\s+sure|be\s+sure|from\s+now|going\s+forward|"
    r"in\s+(?:the\s+)?future|actually|correction|i\s+meant|can\s+you|could\s+you|would\s+you|you\s+(?:should|must|"
    r"need|keep|always|still)|i'd\s+rather|we\s+(?:don't|never|do\s+not)|rules?\b|only\b)"
    r"|^(?:还有|另外|而且|然后|对了|顺便)?\s*(?:请|麻烦|别|不要|不许|不准|不能|禁止|严禁|永远|千万|一定|必须|务必|以后|今后|"
    r"之后|从现在|记住|记得|别忘|忘掉|忘了|删|其实|不是|纠正|更正|我说的是|应该是|叫我|称呼|用|一律|都用|统一|只能|"
    r"所有|[A-Za-z][\w.+#-]*\s*(?:就|也|都|千万|一定|以后)?(?:别|不要|不许|不准|禁止))",
    re.I,
)


_REJECTED_RE = re.compile(
    r"\b(?:rejected|ruled\s+out|decided\s+against|passed\s+on|not\s+going\s+with|backed\s+out|dropped|ditched|"
    r"abandoned|gave\s+up\s+on)\b|没选|没用|没上|放弃|否掉|弃用|不考虑",
    re.I,
)


def _blocked(text: str, at: int) -> bool:
    return en_blocked(text, at) or zh_blocked(text, at)


def _mixed(text: str) -> bool:
    return has_han(text) and len(_LATIN_WORD_RE.findall(text)) >= 2


def _language_hits(text: str) -> list[Hit]:
    english, chinese = en.sentence_hits, zh.sentence_hits
    first, second = (chinese, english) if detect_lang(text) == "zh" else (english, chinese)
    hits = first(text)
    if _mixed(text):
        hits += second(text)  # a mixed sentence ("请记住 my name is Alice"): both sets, folded by dedupe
    return hits


def _generic_hits(clause: str, sentence: str, *, whole: bool = False, inherited: bool = False) -> list[Hit]:
    """A lasting statement the specific rules did not name, in the clause's language; one that names the
    current value of a slot ("everything deploys to Railway now") fills that slot, so that it supersedes
    the value it replaces however each was said."""
    rules = en.ENGLISH if detect_lang(clause) == "en" else zh.CHINESE
    if not whole:
        stack = stack_hits(clause, lang=rules.lang, inherited=inherited)
        if len(stack) == 1:  # one tool: the clause's own words ("定了用 Go 重写网关") say more than "uses Go"
            cand, start, end = stack[0]
            words = zh_content(clause) if rules.lang == "zh" else sentence_case(third_person(clause.strip()))
            return [(dataclasses.replace(cand, content=words), start, end)]
        if stack:
            return stack
    hits = rules.generic(clause, sentence, whole)
    if not hits and (_mixed(clause) or (rules is en.ENGLISH and has_han(clause))):  # "没上 k8s": Chinese too
        other = zh.CHINESE if rules is en.ENGLISH else en.ENGLISH
        hits = other.generic(clause, sentence, whole)
    out: list[Hit] = []
    for cand, start, end in hits:
        rejected = _REJECTED_RE.search(clause) is not None  # "MongoDB was considered and rejected": no value
        tool = (
            current_tool(clause)
            if cand.kind is Kind.SEMANTIC and cand.slot is None and not rejected
            else None
        )
        topic = topic_slot(clause) if cand.slot is None and tool is None else None
        if tool is not None:
            cand = dataclasses.replace(cand, slot=tool.slot, value=tool.canonical, confidence=0.8)
        elif topic is not None:  # one current statement per topic: its value is the statement itself
            value = re.sub(r"[\W_]+", " ", cand.content.casefold()).strip()[:120]
            cand = dataclasses.replace(cand, slot=topic, value=value)
        out.append((cand, start, end))
    return out


def _sentence_hits(sentence: str) -> list[Hit]:
    """The sentence's hits, then those of each clause no hit accounts for: a fact stated in passing inside
    a request ("this service is on Go 1.22, can you check the build?"), a rule after a fact ("数据库用
    PostgreSQL，不要用 ORM"). A clause after a hypothetical or reported one is not the user's statement."""
    hits = _language_hits(sentence)
    clauses = split_clauses(sentence) or [(0, sentence)]
    if len(clauses) > 1:
        # The sentence's own pass found every fact rule (they search anywhere); a clause adds what a question
        # hid, and the rules that open a clause ("..., don't use X", "…，不要用 ORM").
        asked = _is_asked(sentence)
        spans = [(start, end) for _, start, end in hits]
        for start, clause in clauses:
            end = start + len(clause)
            if any(s <= start and end <= e for s, e in spans):
                continue
            if not (asked or _CLAUSE_OPENER_RE.match(clause)):
                continue
            if start and (en_blocked(sentence, start) or zh_blocked(sentence, start)):
                continue
            hits += shift(_language_hits(clause), start)
    spans = [(start, end) for _, start, end in hits]
    for start, clause in clauses:  # a change already made names the slot's new value, even in a question
        end = start + len(clause)
        slots = {cand.slot for cand, s, e in hits if cand.slot and s < end and start < e}
        if start and (en_blocked(sentence, start) or zh_blocked(sentence, start)):
            continue
        asked = en.ENGLISH.is_question(clause) or zh.CHINESE.is_question(clause)
        for cand, s, e in change_hits(clause, lang=detect_lang(clause), blocked=_blocked):
            if cand.slot not in slots:  # told inside a question: too unsure to replace a value on its own
                cand = dataclasses.replace(cand, confidence=0.6) if asked else cand
                hits.append((cand, s + start, e + start))
    if not hits:  # a lesson is one memory of the whole sentence
        hits = _generic_hits(sentence, sentence, whole=True)
    if not hits:  # a topic's value changed, the new one in a later clause: "我们组换 leader 了，现在是李娜"
        hits = _topic_change_hits(sentence)
    spans = [(start, end) for _, start, end in hits]
    inherited = False  # after "The product is ...:" / "技术栈：" the clauses speak for the user's setup
    for start, clause in clauses:  # what no rule named: a lasting statement of the clause, if it is one
        end = start + len(clause)
        opens = sentence[end : end + 2].lstrip()[:1] in (":", "：") and opens_stack(clause)
        if any(s < end and start < e for s, e in spans):
            inherited = inherited or opens
            continue
        if start and (en_blocked(sentence, start) or zh_blocked(sentence, start)):
            continue
        hits += shift(_generic_hits(clause, sentence, inherited=inherited), start)
        inherited = inherited or opens
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
    previous: tuple[str, int] | None = None  # the last sentence and where its candidates start
    following = False  # a "remember these:" request came before: each later sentence is MUST
    for sentence in split_sentences(text):
        if len(sentence) > MAX_SENTENCE_CHARS:
            residual.append(sentence)
            previous = None
            continue
        if _REMEMBER_FOLLOWING_RE.match(
            sentence
        ):  # "记住几件事：" / "remember these:" points at what follows
            following = True
            previous = None
            continue
        if following and _CLOSER_RE.match(sentence):
            following = False  # "好，先这些。" / "that's all": the list is over
            continue
        if following and len(sentence) >= 6 and not _is_asked(sentence):
            found = [dataclasses.replace(c, source_event_ids=sources, source_turn_ids=turn_ids)
                     for c, _, _ in _sentence_hits(sentence)]  # fmt: skip
            candidates += _raised(found, sentence, sources, turn_ids)
            continue
        if previous is not None and _REMEMBER_THAT_RE.match(sentence):
            # "Remember that." / "Don't forget it." / "记住这一点": the request is about the sentence before
            candidates[previous[1] :] = _raised(candidates[previous[1] :], previous[0], sources, turn_ids)
            previous = None
            continue
        start_index = len(candidates)
        hits = _sentence_hits(sentence)
        for cand, _, _ in hits:
            if not _WORD_RE.search(cand.content):
                continue  # a request with nothing to keep ("remember -、"): its span is accounted for, no memory
            candidates.append(dataclasses.replace(cand, source_event_ids=sources, source_turn_ids=turn_ids))
        rest = _uncovered(sentence, [(start, end) for _, start, end in hits]) if hits else sentence
        if rest:
            residual.append(rest)
        previous = (sentence, start_index)
    return TurnAnalysis(tuple(dedupe(candidates)), lang, text, " | ".join(residual))


_REMEMBER_THAT_RE = re.compile(
    r"^(?:(?:ok|okay|so|and|please|pls|also)[\s,]+)*(?:please\s+)?(?:remember|don't\s+forget|do\s+not\s+forget|"
    r"never\s+forget|keep\s+(?:that|this|it)\s+in\s+mind|bear\s+(?:that|this|it)\s+in\s+mind|note\s+that|"
    r"make\s+a\s+note(?:\s+of\s+(?:that|it|this))?|save\s+(?:that|this|it))(?:\s+(?:that|this|it))?"
    r"(?:\s+(?:please|for\s+(?:later|next\s+time|the\s+future)))?[\s.!]*$"
    r"|^(?:请|麻烦)?(?:你)?(?:记住|记一下|记下|记着|别忘了|不要忘了|千万别忘了)(?:这个|这点|这一点|这件事|它|哦|啊|了|哈)*"
    r"[\s.!~]*$",
    re.I,
)


_REMEMBER_FOLLOWING_RE = re.compile(
    r"^.{0,30}?(?:remember|don't\s+forget|note|keep\s+in\s+mind)\s+(?:(?:these|the\s+following|a\s+few|some|two|three|"
    r"four|several)\s+)?(?:things|points|facts|items|rules|details|notes)?\s*(?:about\s+me\s*)?[:：]\s*$"
    r"|^.{0,30}?(?:记住|记一下|记下|记着|别忘了)\s*(?:以下|下面|这|这几|几|两|三|四)\s*(?:件事|点|条|个事|几点|几件事|内容)?"
    r"(?:情|哦|啊)?\s*[:：]?\s*$",
    re.I,
)


_CLOSER_RE = re.compile(
    r"^(?:(?:好|行|嗯|ok|okay|so|alright)[\s,.!]*)?(?:先|就|暂时)?(?:这些|这样|这么多)|^that'?s\s+(?:all|it)\b|^(?:ok|okay)[\s,.!]*$",
    re.I,
)


def _is_asked(sentence: str) -> bool:
    return en.ENGLISH.is_question(sentence) or zh.CHINESE.is_question(sentence)


def _raised(
    found: list[Candidate], sentence: str, sources: tuple[str, ...], turn_ids: tuple[str, ...]
) -> list[Candidate]:
    """The candidates of the sentence a "remember that" points back to, raised to MUST; the sentence itself
    as an explicit memory when no rule named anything in it."""
    if found:
        return [dataclasses.replace(c, tier=Tier.MUST, confidence=max(c.confidence, 0.9),
                                    rule=f"remember_that+{c.rule}") for c in found]  # fmt: skip
    lang = detect_lang(sentence)
    content = zh_content(sentence) if lang == "zh" else sentence_case(third_person(sentence))
    cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.MUST,
                     confidence=0.9, source_event_ids=sources, source_turn_ids=turn_ids, lang=lang,
                     rule=f"{lang}.remember_that")  # fmt: skip
    return [cand]


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
