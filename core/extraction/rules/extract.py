"""Turns in, rule candidates out: the rule extractor's entry points (the contract is the package's docstring).

Each sentence is matched in its own language ("zh" when Han characters outweigh Latin words), then in the
other too when it mixes scripts; `dedupe` folds a window's duplicate candidates into the latest one.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.extraction.candidates import Candidate, Category, Kind, Operation, Tier, Turn
from core.extraction.lang import detect_lang
from core.extraction.rules.dispatch import stack_hits
from core.extraction.rules.en.grammar import sentence_case, third_person
from core.extraction.rules.hits import Hit, make
from core.extraction.rules.passes import (
    IRONY_EMPHASIS,
    ironic,
    irony_mark,
    is_asked,
    sentence_hits,
    unsaid_prefix,
)
from core.extraction.rules.sentences import clean_text, split_sentences
from core.extraction.rules.vocab import find_tools
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
    setup = False  # a "setup notes:" header came before: each short item after it speaks for the user's setup
    correcting = False  # a bare correction ("no I said Thursday.") came before: the next sentence is the fact
    emphasised = frozenset(  # "I *adore* YAML": praise in emphasis, dropped by the cleaning, read as irony
        word.lower() for word in (IRONY_EMPHASIS.findall(turn.content) if "*" in turn.content else ())
    )
    carried_irony = False  # an earlier sentence of the turn bore an irony mark ("oh great, another ...")
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
        if _SETUP_HEADER_RE.match(sentence):
            # "setup notes for you:" / "环境说明：": the items that follow are the setup
            setup = True
            previous = None
            continue
        if setup and (len(sentence) > 80 or is_asked(sentence)):
            setup = False
        elif setup:
            items = sentence_hits(sentence) or stack_hits(
                sentence, lang=detect_lang(sentence), inherited=True
            )
            candidates += _sourced(items, sources, turn_ids)
            previous = None
            continue
        if following and _CLOSER_RE.match(sentence):
            following = False  # "好，先这些。" / "that's all": the list is over
            continue
        if following and len(sentence) >= 6 and not is_asked(sentence):
            found = _sourced(sentence_hits(sentence), sources, turn_ids)
            candidates += _raised(found, sentence, sources, turn_ids)
            continue
        if previous is not None and _REMEMBER_THAT_RE.match(sentence):
            # "Remember that." / "Don't forget it." / "记住这一点": the request is about the sentence before
            candidates[previous[1] :] = _raised(candidates[previous[1] :], previous[0], sources, turn_ids)
            previous = None
            continue
        tail = _REMEMBER_THAT_TAIL_RE.search(sentence)
        if tail and len(sentence[: tail.start()]) >= 8 and not is_asked(sentence[: tail.start()]):
            # "the pre-prod cluster is called orca-pp-2, remember that so I don't have to look it up"
            said = sentence[: tail.start()]
            found = _sourced(sentence_hits(said), sources, turn_ids)
            candidates += _raised(found, said, sources, turn_ids)
            previous = None
            continue
        if correcting and not is_asked(sentence):
            # "no I said Thursday. standup moved to Thursdays in the new year": the fact after the "no"
            found = _sourced(sentence_hits(sentence), sources, turn_ids)
            if not found and _NAMED_AFTER_RE.match(sentence):
                # 'You keep calling it "the API gateway". It's Kong, ...': the value named is the correction
                found = _sourced(sentence_hits(f"actually, {sentence}"), sources, turn_ids)
            correcting = False
            if found or _STATES_RE.search(sentence):
                candidates += _raised(found, sentence, sources, turn_ids)
                previous = None
                continue
        fragment = _NEGATED_FRAGMENT_RE.match(sentence) if sentence[:1] in "NnDd" else None
        if fragment and not _NOT_A_RULE_RE.match(sentence):
            last = candidates[-1] if candidates else None
            if last is not None and last.tier is Tier.MUST and last.slot is None and last.lang == "en":
                # "Always use UTC. Never local time." / "open it as a draft. Never merge.": a verbless or bare
                # negated fragment restates the rule before it, and is kept with it, not alone
                joined = f"{last.content.rstrip('.!')}; {fragment.group(0).strip().rstrip('.!').lower()}."
                candidates[-1] = dataclasses.replace(last, content=joined)
                previous = None
                continue
            body = fragment.group("body").rstrip(".")
            tools = find_tools(body)
            whole = len(tools) == 1 and tools[0][1] == 0 and tools[0][2] == len(body)
            if whole and fragment.group("neg").lower() == "no":
                # "No jQuery. I mean it.": a bare "no <tool>" is a prohibition of that tool
                said = f"Do not use {tools[0][0].display}."
                cand = make(said, Kind.PROCEDURAL, Category.CONSTRAINT, Tier.MUST, rule="en.rule.no_tool",
                            confidence=0.8, lang="en")  # fmt: skip
                candidates.append(
                    dataclasses.replace(cand, source_event_ids=sources, source_turn_ids=turn_ids)
                )
                previous = (sentence, len(candidates) - 1)
                continue
        zh_fragment = _ZH_NEGATED_FRAGMENT_RE.match(sentence) if lang == "zh" or not sentence.isascii() else None
        if zh_fragment and candidates and _carries(candidates[-1], "zh"):
            # "缩进用 tab。不要空格。": a bare "不要 X" restates the rule before it, and is kept with it, not alone
            candidates[-1] = _joined(candidates[-1], zh_fragment.group(0))
            previous = None
            continue
        start_index = len(candidates)
        hits = _context_joined(
            sentence,
            _contrast_joined(
                sentence,
                _ellipses_joined(sentence_hits(sentence, emphasised=emphasised, carried_irony=carried_irony)),
            ),
        )
        # an ironic sentence, or a clause that states nothing ("I didn't say ...", "..., not mine"), is no
        # statement for the residual filter either: only what the rules kept of it is read
        unsaid = len(sentence) if ironic(sentence, carried=carried_irony) else unsaid_prefix(sentence)
        carried_irony = carried_irony or irony_mark(sentence)
        correcting = not hits and _CORRECTION_OPENER_RE.match(sentence) is not None
        for cand, _, _ in hits:
            if not _WORD_RE.search(cand.content):
                continue  # a request with nothing to keep ("remember -、"): its span is accounted for, no memory
            candidates.append(dataclasses.replace(cand, source_event_ids=sources, source_turn_ids=turn_ids))
        spans = [(start, end) for _, start, end in hits] + ([(0, unsaid)] if unsaid else [])
        rest = _uncovered(sentence, spans) if spans else sentence
        if rest:
            residual.append(rest)
        previous = (sentence, start_index)
    return TurnAnalysis(tuple(_drop_contained(dedupe(candidates))), lang, text, " | ".join(residual))


# A clause that is only 不要 / 别 / 禁止 ... and what it forbids, with no verb of its own: "不要繁体", "别用空格",
# "禁止浮点"
_ZH_NEGATED_FRAGMENT_RE = re.compile(
    r"^\s*(?:不要|别|不用|禁止|不许|不准|勿)(?:用|使用)?\s*(?:[A-Za-z0-9][\w.+#-]{0,20}|[\u4e00-\u9fff]{1,4})\s*[。！!.～~]*\s*$"
)


def _carries(cand: Candidate, lang: str) -> bool:
    """A rule an elliptical negation may continue: a MUST rule of no slot, in the same language."""
    return cand.tier is Tier.MUST and cand.slot is None and cand.lang == lang and cand.op is Operation.REMEMBER


def _joined(rule: Candidate, fragment: str) -> Candidate:
    body = fragment.strip().rstrip("。！!.～~ ")
    if rule.lang == "en":
        return dataclasses.replace(rule, content=f"{rule.content.rstrip('.! ')}; {body[:1].lower()}{body[1:]}.")
    return dataclasses.replace(rule, content=f"{rule.content.rstrip('。.!！ ')}，{body}。")


def _ellipses_joined(hits: list[Hit]) -> list[Hit]:
    """A sentence's rule and the bare negation after it, one memory: "回复用简体中文，不要繁体" gives one rule, not
    "…用简体中文" and a lone "不要繁体". The other hits keep their order."""
    if len(hits) < 2:
        return hits
    out = list(hits)
    for cand, start, end in hits:
        lang = cand.lang or ""
        fragment = _ZH_NEGATED_FRAGMENT_RE if lang == "zh" else _EN_NEGATED_CONTENT_RE
        if not _carries(cand, lang) or fragment.match(cand.content) is None:
            continue
        before = [i for i, (c, _s, e) in enumerate(out) if e <= start and c is not cand and _carries(c, lang)]
        if not before:
            continue
        i = max(before, key=lambda j: out[j][2])
        rule, rule_start, _ = out[i]
        out[i] = (_joined(rule, cand.content), rule_start, end)
        out = [h for h in out if h[0] is not cand]
    return out


# What a contrast opens with, before its negated half: a bare noun phrase ("Headlines in sentence case", "Dates in
# ISO format", "single quotes", "用 dayjs") with no subject, verb of saying, question or other statement of its own
_EN_CONTRAST_HEAD_RE = re.compile(
    r"^(?!(?:i|we|you|he|she|they|it|this|that|there|my|our|so|and|but|or|if|when|ok|okay|yes|yeah|sure|thanks)\b)"
    r"[a-z0-9][\w./+#-]*(?:\s+[\w./+#-]+){0,5}$",
    re.I,
)
_EN_NOT_HEAD_RE = re.compile(
    r"\b(?:is|are|was|were|be|been|am|'s|'re|have|has|had|do|does|did|will|would|can|could|should|"
    r"please|thanks|sorry|maybe|probably|today|tonight|tomorrow|yesterday|now|this|that|it)\b",
    re.I,
)
_ZH_CONTRAST_HEAD_RE = re.compile(
    r"^(?:用|使用|统一用|一律用)?\s*(?:[A-Za-z0-9][\w.+#-]{0,20}|[\u4e00-\u9fff]{2,8})(?:\s*[A-Za-z0-9][\w.+#-]{0,20})?$"
)


def _contrast_joined(sentence: str, hits: list[Hit]) -> list[Hit]:
    """A contrast said in one sentence, its positive half a bare noun phrase no rule read and its negated half a
    bare rule: "Headlines in sentence case, never Title Case", "Dates in ISO format, never US style", "变量名用
    camelCase，不要下划线": one rule with both halves, not a lone "Never title case." that has lost what to do
    instead."""
    if len(hits) != 1:
        return hits
    cand, start, end = hits[0]
    lang = cand.lang or ""
    fragment = _ZH_NEGATED_FRAGMENT_RE if lang == "zh" else _EN_NEGATED_CONTENT_RE
    if not _carries(cand, lang) or fragment.match(cand.content) is None or start == 0:
        return hits
    head = sentence[:start].strip().rstrip(",，;；:：-—– ").strip()
    if lang == "zh":
        if _ZH_CONTRAST_HEAD_RE.match(head) is None or any(w in head for w in ("我", "你", "吗", "呢", "吧")):
            return hits
        return [(dataclasses.replace(cand, content=f"{head}，{cand.content.rstrip('。.!！ ')}。"), 0, end)]
    if _EN_CONTRAST_HEAD_RE.match(head) is None or _EN_NOT_HEAD_RE.search(head) or len(head) < 4:
        return hits
    body = cand.content.rstrip(".! ")
    return [(dataclasses.replace(cand, content=f"{head[:1].upper()}{head[1:]}; {body[:1].lower()}{body[1:]}."), 0, end)]


# A Chinese prohibition whose clauses before it say what it is about: it points back at them ("checkpoint 每 500 步存
# 一次，别改这个频率", "晚上十点以后脑子就不转了，别在那之后给我排学习计划"), or they name the thing to use instead
# ("组件都从 @lotus/ui 引，不要自己再造 button"). Alone, "不要改这个频率" has lost its object.
_ZH_POINTS_BACK_RE = re.compile(
    r"这个|那个|这些|那些|这样|那样|这么|那么|那之后|这之后|那以后|这点|这一点|这种|那种|此"
)
_ZH_HEAD_VALUE_RE = re.compile(r"[A-Za-z@][\w@./+#-]*\d*|\d+")
_ZH_HEAD_MAX = 48


def _context_joined(sentence: str, hits: list[Hit]) -> list[Hit]:
    """A Chinese prohibition after clauses no rule read that it points back at or that name what to use
    instead: one rule, with them (see `_ZH_POINTS_BACK_RE`)."""
    if len(hits) != 1:
        return hits
    cand, start, end = hits[0]
    if not _carries(cand, "zh") or start == 0 or not cand.content.startswith(("不要", "别", "禁止", "不许", "不准")):
        return hits
    head = sentence[:start].strip().rstrip(",，;；:：-—– ").strip()
    points_back = _ZH_POINTS_BACK_RE.search(cand.content) is not None
    names_value = _ZH_HEAD_VALUE_RE.search(head) is not None and not any(
        value in cand.content for value in _ZH_HEAD_VALUE_RE.findall(head)
    )
    if (
        len(head) < 4
        or len(head) > _ZH_HEAD_MAX
        or not (points_back or names_value)
        or re.search(r"[?？吗呢]|帮我|请你|能不能|可以", head)
    ):
        return hits
    head = zh_content(head).rstrip("。")  # in the third person, as the rule is
    return [(dataclasses.replace(cand, content=f"{head}，{cand.content.rstrip('。.!！ ')}。"), 0, end)]


# a rule's content that is only "Never / No / Not" and a word or two: "Never local time." after "... in UTC"
_EN_NEGATED_CONTENT_RE = re.compile(r"^(?:never|no|not)\s+[\w./+#-]+(?:\s+[\w./+#-]+)?\.?$", re.I)


# A sentence that is only a negated noun phrase or bare verb: "Never local time.", "Not merge.", "No jQuery."
_NEGATED_FRAGMENT_RE = re.compile(
    r"(?P<neg>never|not|no|don't|do\s+not)\s+(?P<body>[\w./+#-]+(?:\s+[\w./+#-]+)?)\s*[.!]*\s*$", re.I
)
_NOT_A_RULE_RE = re.compile(
    r"(?:never|not|no)\s+(?:mind|problem|worries|worry|sure|yet|really|thanks|idea|way|rush|biggie|luck|clue|"
    r"need|one|more|big\s+deal|at\s+all|that|this|it|now|today|again|quite|exactly|much|me|you|i|we)\b",
    re.I,
)
_CONTRACTION_RE = re.compile(r"n't\b", re.I)
_TOKENS_RE = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


def _tokens(content: str) -> set[str]:
    return set(_TOKENS_RE.findall(_CONTRACTION_RE.sub(" not", content.casefold())))


def _drop_contained(candidates: list[Candidate]) -> list[Candidate]:
    """A slotless candidate whose words all lie in a longer slotless one of the same turn, of a tier as high, is
    a piece of it ("so no migrations on it during business hours" inside the remembered sentence): dropped."""
    free = [c for c in candidates if c.slot is None and c.op is not Operation.END]  # an end stores nothing
    if len(free) < 2:
        return candidates
    words = {id(c): _tokens(c.content) for c in free}
    dropped: set[int] = set()
    for short in free:
        mine = words[id(short)]
        if len(mine) < 3:
            continue
        for long in free:
            theirs = words[id(long)]
            if (
                long is not short
                and id(long) not in dropped
                and len(theirs) > len(mine)
                and (long.tier is Tier.MUST or short.tier is not Tier.MUST)
                and mine <= theirs
            ):
                dropped.add(id(short))
                break
    return [c for c in candidates if id(c) not in dropped] if dropped else candidates


_REMEMBER_THAT_TAIL_RE = re.compile(
    r"\s*[,;:-]\s*(?:and\s+)?(?:pls\s+|please\s+)?(?:remember|don't\s+forget|note|keep)\s+(?:that|this|it)\b"
    r"(?:\s+in\s+mind)?(?:\s+(?:so|because|for|please|pls)\b[^.]*)?[\s.!]*$"
    # "staging URL: https://stg.example.dev (remember this)", "(记住这个)": the request in an aside at the end
    r"|\s*[(（]\s*(?:pls\s+|please\s+)?(?:remember|don't\s+forget|note|keep)\s+(?:that|this|it)(?:\s+in\s+mind)?"
    r"[\s.!]*[)）][\s.!]*$|\s*[(（](?:请|麻烦)?(?:记住|记一下|记下|记着|别忘了)(?:这个|这点|它)?[)）][\s.!。]*$"
    r"|\s*[,，]\s*(?:请|麻烦)?(?:你)?(?:记住|记一下|记下|记着|别忘了)(?:这个|这点|这一点|它)?[^。.!?]{0,20}$",
    re.I,
)
_CORRECTION_OPENER_RE = re.compile(
    r"^(?:no|nope|nah|wrong|not\s+quite|actually|correction|i\s+said|i\s+meant|"
    r"you\s+keep\s+(?:calling|saying|writing|spelling|naming))\b|^(?:不是|不对|错了|搞错了|纠正)",
    re.I,
)
# the value named after a bare correction: "It's Kong, ...", "it is Tyk"
_NAMED_AFTER_RE = re.compile(r"^(?:it's|it\s+is|that's|that\s+is)\s+(?-i:[A-Z])", re.I)
_STATES_RE = re.compile(
    r"\b(?:is|are|am|was|were|moved|changed|starts?|ends?|runs?|lives?|works?|uses?|has|have)\b|是|在|改|换|搬|用",
    re.I,
)
_REMEMBER_THAT_RE = re.compile(
    r"^(?:(?:ok|okay|so|and|please|pls|also)[\s,]+)*(?:please\s+)?(?:remember|don't\s+forget|do\s+not\s+forget|"
    r"never\s+forget|keep\s+(?:that|this|it)\s+in\s+mind|bear\s+(?:that|this|it)\s+in\s+mind|note\s+that|"
    r"make\s+a\s+note(?:\s+of\s+(?:that|it|this))?|save\s+(?:that|this|it))(?:\s+(?:that|this|it))?"
    r"(?:\s+(?:please|for\s+(?:later|next\s+time|the\s+future)))?[\s.!]*$"
    r"|^(?:请|麻烦)?(?:你)?(?:记住|记一下|记下|记着|别忘了|不要忘了|千万别忘了)(?:这个|这点|这一点|这件事|它|哦|啊|了|哈)*"
    r"[\s.!~]*$",
    re.I,
)


# A header over a list of the user's setup ("setup notes for you:", "our stack:", "环境说明：", "技术栈如下：")
_SETUP_HEADER_RE = re.compile(
    r"^(?:(?:my|our|the|some|quick)\s+)?(?:tech\s+stack|stack|setup|environment|env|dev\s+environment|tooling|infra)"
    r"(?:\s+(?:notes|details|info|overview))?(?:\s+for\s+you)?\s*[:：]\s*$"
    r"|^(?:我的|我们的?|项目的?)?(?:环境说明|开发环境|运行环境|环境|技术栈|技术选型|配置)(?:说明|信息|情况)?(?:如下)?\s*[:：]\s*$",
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


def _sourced(hits: list[Hit], sources: tuple[str, ...], turn_ids: tuple[str, ...]) -> list[Candidate]:
    """The candidates of rule hits, with the turn's event and source turn ids."""
    return [dataclasses.replace(c, source_event_ids=sources, source_turn_ids=turn_ids) for c, _, _ in hits]


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
    if cand.op is Operation.END:  # one per thing left: "replaced black, flake8 and isort" is three
        return (cand.op.value, (cand.value or "").casefold())
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
