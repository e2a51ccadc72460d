"""A sentence's rule passes, in order (the classes are in ARCHITECTURE.md, "Rules by grammar"). Pure: no I/O.

`sentence_hits(sentence)` -> every rule hit of one normalised sentence:
1. the whole sentence in its language (and in the other when it mixes scripts);
2. each clause no hit accounts for, where a clause can open a rule or the sentence was a question (a fact
   in passing inside a request, a rule after a fact: "数据库用 PostgreSQL，不要用 ORM");
3. changes already made, even inside a question ("升到 Node 22 以后 ..."): told inside a question they are
   unsure (a lower confidence: they never replace a value on their own word);
4. with nothing yet: a lesson over the whole sentence, or a topic whose value changed in a later clause;
5. each clause still unaccounted for: a stack of tools, or a lasting statement in the user's words, in the
   slot of the value it names (a tool or a single-valued topic).
A clause after a hypothetical or reported one is never the user's statement, nor is anything in a sentence
told as hearsay ("apparently", "好像").
"""

from __future__ import annotations

import dataclasses
import functools
import re

from core.extraction.candidates import Candidate, Category, Kind, Operation, Tier
from core.extraction.lang import detect_lang, has_han
from core.extraction.rules import en, zh
from core.extraction.rules.dispatch import (
    CHANGE_VERBS_EN,
    bare_state_hits,
    change_hits,
    change_match,
    is_question_like,
    left_then_current,
    names_change,
    noun_change_hits,
    noun_state_hits,
    opens_stack,
    others_change,
    stack_hits,
)
from core.extraction.rules.en.grammar import blocked as en_blocked
from core.extraction.rules.en.grammar import hearsay as en_hearsay
from core.extraction.rules.en.grammar import sentence_case, third_person
from core.extraction.rules.en.grammar import with_subject as en_with_subject
from core.extraction.rules.en.statements import team_hits as en_team_hits
from core.extraction.rules.hits import Hit, shift, tool_hit
from core.extraction.rules.sentences import split_clauses
from core.extraction.rules.vocab import (
    TOPICS_OVER_TOOLS,
    ZH_OTHERS,
    Tool,
    current_tool,
    find_tools,
    is_tool,
    named_as_left,
    only_left,
    topic_match,
    topic_noun_first,
    topic_slot,
)
from core.extraction.rules.zh.grammar import BIE, zh_content
from core.extraction.rules.zh.grammar import blocked as zh_blocked
from core.extraction.rules.zh.grammar import hearsay as zh_hearsay
from core.extraction.rules.zh.grammar import with_subject as zh_with_subject

_LATIN_WORD_RE = re.compile(r"[A-Za-z]{2,}")


@functools.lru_cache(maxsize=2048)  # pure, and asked of the same clause by several passes
def is_asked(sentence: str) -> bool:
    """A question in either language (without Han characters, the Chinese test is only its question mark)."""
    if en.ENGLISH.is_question(sentence):
        return True
    return zh.CHINESE.is_question(sentence) if has_han(sentence) else sentence.rstrip(" .!~").endswith("?")


_TOPIC_CHANGE_RE = re.compile(
    r"(?:\b(?:changed|switched|replaced|rotated|moved|new)\b|换了|换成|改成|改为|调成|调整为|变成|换)[^,;]*[,;]\s*"
    r"(?:(?:and\s+)?now\s+(?:it's|it\s+is|is|we\s+have|we\s+use)?|现在(?:是|换成|改成|用)?|目前是)\s*\S",
    re.I,
)


def topic_value(content: str) -> str:
    """A topic slot's value: the statement itself, case and punctuation folded (so a restatement reinforces)."""
    return re.sub(r"[\W_]+", " ", content.casefold()).strip()[:120]


def _topic_change_hits(sentence: str) -> list[Hit]:
    """A single-valued topic whose value changed, the new value told after the change."""
    if not _TOPIC_CHANGE_RE.search(sentence):
        return []
    slot = topic_slot(sentence)
    if slot is None or is_asked(sentence):
        return []
    if _blocked(sentence, len(sentence)):
        return []
    lang = detect_lang(sentence)
    content = zh_content(sentence) if lang == "zh" else sentence_case(third_person(sentence))
    value = topic_value(content)
    cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.WORTH, confidence=0.8,
                     source_event_ids=(), slot=slot, value=value, lang=lang, rule=f"{lang}.topic.change")  # fmt: skip
    return [(cand, 0, len(sentence))]


# A change of the user's own situation that no slot names, told with its new value ("we moved on-call paging to
# Opsgenie", "got an iPhone 16 last week", "back to a 5-day week", "组长换成 Linda 了", "女儿上一年级了",
# "公司搬去中关村了"): one memory in the clause's words, in no slot (nothing it would replace is known), so that
# the newest statement is there to be found.
# a value a change moves something to, besides a name or a number: a part of the day or week ("moved my runs to
# the evenings", "standup shifted to mondays"), shared by the English change patterns below
_WHEN_VALUE_EN = (
    r"(?:the\s+)?(?:early\s+|late\s+)?(?:mornings?|evenings?|afternoons?|nights?|weekends?|weekdays?|lunchtime|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?|january|february|march|april|may|june|july|august|september|"
    r"october|november|december|next\s+(?:week|month|year|quarter|sprint))\b"
)
# a verb that moves a time, an amount or a level to a new value: "got pushed to Tuesday", "went up to 100mg",
# "cutting eating out to $150", "rescheduled to the 9th"
_MOVED_TO_EN = (
    r"(?:(?:push|bump|reschedul|shift|mov|chang|rais|lower|increas|reduc|upp|cutt|dropp|slipp|delay|postpon)"
    r"(?:ed|ing)|cut|"
    r"(?:went|going|gone)\s+(?:up|down))\b(?:\s+(?:back|up|down|forward))?[^,;?]{0,30}?\bto\b"
)
_CHANGE_STATEMENT_EN = re.compile(
    r"\b(?:switched|moved|migrated|changed|renamed|upgraded|replaced|transferred|relocated|got\s+(?:a|an|my)\s+new|"
    r"got\s+(?:a|an|my)|bought\s+(?:a|an|my)|(?:i'm|we're|i\s+am|we\s+are)\s+(?:now\s+)?back\s+to|back\s+to|started\s+at|"
    r"joined|(?:i'm|we're)\s+(?:now\s+)?(?:on|at|in|using))\b[^,;?]{0,40}?(?-i:[A-Z][\w.+#-]+|\d)"
    rf"|\b{_MOVED_TO_EN}\s+(?:[^,;?]{{0,12}}?\d|{_WHEN_VALUE_EN})",
    re.I,
)
_CHANGE_STATEMENT_ZH = re.compile(
    r"(?:换成|改成|改名叫|改叫|改名为|升到|升级到|升了|升入|升上|调到|调去|转岗到|转到|搬到|搬去|迁到|挪到|换到|跳槽到|入职|"
    # an English verb of change with a Chinese complement: "已经 migrate 到 Keycloak", "rate limit bump 到 500 rps"
    r"(?i:bump(?:ed)?|mov(?:e|ed)|switch(?:ed)?|migrat(?:e|ed)|upgrad(?:e|ed)|chang(?:e|ed)|updat(?:e|ed))\s*(?:到|成)|"
    # a time, an amount or a level moved to a new value: "改到周日上午了", "加到每月 3000 了", "提高到 7 分"
    r"改到|改为|改回|换回|加到|提到|提高到|升高到|降到|降低到|减到|减少到|涨到|增加到|跳槽去|"
    # a tool or a role taken instead, a date or an amount moved: "改用 Vector 了", "换 Mac 了",
    # "推迟到下周五了", "被砍到 6000", "转岗做 SRE"
    r"改用|推迟到|延到|延期到|延后到|砍到|缩到|扩到|切到|切换到|迁移到|转岗做|接手了?|升为|升任|晋升为|晋升到|当上了?|"
    r"升(?=[\u4e00-\u9fff]{2,5}了)|"
    r"换(?=\s*[A-Za-z][\w.+#-]*(?:\s+[\w.+#-]+)?\s*了)|"
    # a habit changed to another: "改喝茶", "改打胰岛素了", "改坐地铁"
    r"改(?=[喝吃打练学坐骑开住])|"
    r"(?:上了?|升)(?=[一二三四五六]年级|初[一二三]|高[一二三]|大[一二三四]|小学|初中|高中|大学))"
    r"了?\s*(?:[A-Za-z][\w.+#-]*|(?:每[月周天年]|一个月)?\s*\d|[一二三四五六]年级|初[一二三]|高[一二三]|大[一二三四]|小学|初中|高中|大学|"
    r"[\u4e00-\u9fff]{2,6}(?=了|$|[,.!~]))"
)
_CHANGE_SUBJECT_EN = re.compile(r"\b(?:i|i'm|i've|we|we're|we've|my|our)\b|^(?:just\s+|finally\s+)?(?:switched|moved|"
                                r"got|bought|back|started|joined|upgraded|migrated)\b", re.I)  # fmt: skip
# The current value told with "now", the user's own: "I'm driving a Model 3 now", "alarm is 5:45 now", "billing
# is on 3.12 now", "doing Korean now" (a name or a number before the "now"; "the price is 30 now" has an article)
_NOW_STATE_EN = re.compile(
    r"(?:\b(?:i'm|we're|i\s+am|we\s+are)\s+(?:now\s+)?[a-z]+ing\b"
    r"|^\W*(?:(?:and|so|ok|also|update|fyi)\b\W*)*(?:doing|using|driving|learning|studying|taking|playing|riding)\b"
    r"|^\W*(?:(?:and|so|ok|also|update|fyi|btw)\b\W*)*(?:my\s+|our\s+)?(?!(?:the|a|an|it|its|this|that|there|he|she|"
    r"they|his|her|their|price|prices|stock|rate|weather|time)\b)[a-z][\w'-]*(?:\s+[a-z][\w'-]*)?\s*"
    r"(?:\s(?:is|are)|'s|'re)(?:\s+(?:on|at|in))?)"
    r"[^,;?]{0,30}?(?-i:\b[A-Z][\w.+#-]*|\b\d)[^,;?]{0,20}?\bnow\b(?!\s+(?:and\s+)?(?:that|then))"
    # a habit kept for days or more, to now: "I've been going to bed by 11 for a month now" (not a wait: "I've been
    # waiting 20 minutes now")
    r"|\b(?:i|we)(?:'ve|\s+have)\s+been\s+(?!(?:waiting|trying|meaning|thinking|wondering|looking|debugging|"
    r"struggling|sitting|staring|fighting|stuck)\b)[a-z]+ing\b[^,;?]{1,40}?\bfor\s+(?:a|an|one|two|three|four|five|"
    r"six|a\s+few|a\s+couple(?:\s+of)?|several|\d+)\s+(?:days?|weeks?|months?|years?)\s+now\b"
    # "now" before the verb: "we now push all images to GHCR", "I now live in Ghent"
    r"|\b(?:i|we)\s+now\s+(?!(?:need|want|know|think|reali[sz]e|see|understand|wonder|remember|get|feel|have\s+to|"
    r"have\s+a|have\s+an)\b)[a-z]+\b[^,;?]{0,40}?(?-i:\b[A-Z][\w.+#-]*|\b\d)",
    re.I,
)
# a clause that opens with what the user is doing ("cutting ...", "doing Korean now"), not a noun ("billing is ...")
_ING_FIRST = re.compile(r"\w+ing\b(?!\s+(?:is|are|was|were|has|got)\b|'s)", re.I)


def _owned_zh(content: str) -> str:
    """A Chinese state told with "现在" whose subject was dropped ("现在住闵行") is the user's: said so, in the
    words the user's other memories and a search for them use ("用户住在哪")."""
    return content if not content or "用户" in content else "用户" + content


# A single event as the subject of a move ("会议改到下午三点了", "the call got pushed to 4pm"): one occasion, not
# a lasting value, unless what moved recurs ("周会", "每周的例会", "our weekly call", "standup", "1:1s")
_ONE_OFF_MOVED = re.compile(
    r"\b(?:meeting|call|interview|appointment|flight|delivery|dinner|lunch)s?\b|会议|(?<![周例晨早站班])会|电话|面试|饭局|航班|快递|"
    r"约(?!定)",
    re.I,
)
_RECURRING = re.compile(
    r"\b(?:weekly|daily|monthly|every|standups?|1:1s?|retros?|recurring|regular)\b|周会|例会|晨会|早会|站会|班会|每[周天月日]",
    re.I,
)
# "this year" tells when, not which piece of work; so does a change's start ("starting this week", "from this
# sprint on", "as of this month"): the change lasts from then
_THIS_LONG_RE = re.compile(
    r"\bthis\s+(?:year|term|semester|quarter|season)\b|\b(?:starting|from|as\s+of|beginning|effective)\s+this\s+"
    r"(?:week|month|sprint|cycle|release|year|term|semester|quarter|season)\b",
    re.I,
)
_FILLER_EN = re.compile(r"^\W*(?:(?:update|heads\s+up|fyi|btw|ok|okay|ugh|oh|also|and|so)\b\W*)+", re.I)


# A time or an amount of the user's own moved, its subject a bare noun or dropped ("demo got pushed to Tuesday",
# "standup moved to 10:30", "cutting takeaway to $80 a month"): no article nor someone else's pronoun before the
# verb ("the price changed to 30", "it got pushed to Friday", "her shift moved to nights" are not the user's)
_BARE_SUBJECT_MOVED_EN = re.compile(
    r"^\W*(?:(?:update|heads\s+up|fyi|btw|so|and|ok|okay|ugh|oh|also|just)\b\W*)*"
    r"(?:(?!(?:the|a|an|it|its|this|that|these|those|there|he|she|they|his|her|their|someone|somebody|price|prices|"
    r"stock|stocks|rate|rates|market)\b)[a-z][\w'-]*(?:\s+(?!(?:got|has|have|was|were)\b)[a-z][\w'-]*)?\s+"
    r"(?:got\s+|has\s+been\s+|have\s+been\s+|was\s+|were\s+)?)?" + _MOVED_TO_EN,
    re.I,
)
_TASK_WORDS = re.compile(
    r"\b(?:this|that|these|those|it|the\s+(?:file|function|button|test|variable|code|order|line|column|component|"
    r"method|class|argument|arguments|param|params|query|script|snippet|loop|cell|page|div)|let's|try|for\s+now|"
    r"this\s+time|can\s+you|could\s+you|please)\b|这个|这段|那个|变量|函数|按钮|文件|代码里|参数|这行|这里|帮我|帮用户|帮忙|"
    r"这次|先把|试试|看看|一下|估",
    re.I,
)


# the words every change statement has one of: most sentences are spared the patterns by substring tests
# (cheaper than a case-insensitive alternation, which the regex engine tries at every character)
_CHANGE_STATEMENT_WORDS = (
    "switched", "moved", "migrated", "changed", "renamed", "upgraded", "replaced", "transferred", "relocated",
    "got ", "bought", "back to", "started at", "joined", "i'm now", "i'm on", "i'm at", "i'm in", "i'm using",
    "we're now", "we're on", "we're at", "we're in", "we're using", "push", "bump", "resched", "shift", "moving",
    "chang", "rais", "lower", "increas", "reduc", "upped", "upping", "cut", "up to", "down to", "dropp", "slipp",
    "delay", "postpon",
)  # fmt: skip
_CHANGE_STATEMENT_HAN = re.compile(
    # (and an English verb with a Chinese complement: "migrate 到 Keycloak")
    r"[换改升调转搬迁挪加提降减涨推延砍缩扩切]|跳槽|入职|接手|上了|上[一二三四五六初高大小]|[A-Za-z]\s*[到成]"
)


# The subject of a change is someone else: "a guy on my floor just moved to Denver", "one of my friends switched
# to Arch", "her team moved to Linear": not the user's own change, whatever "my" says further on
_OTHERS_SUBJECT = re.compile(
    r"^\W*(?:(?:so|and|but|btw|fyi|lol)[\s,]+)*(?:a|an|some|someone|somebody|one\s+of|his|her|their|they|he|she|"
    r"(?:a|my|our)\s+(?:(?:older|younger|big|little|baby|best)\s+)?(?:friend|friends|colleague|colleagues|coworker|"
    r"coworkers|co-worker|neighbou?r|guy|girl|cousin|classmate|roommate|flatmate|"
    # siblings and the wider family: their news is theirs ("my sister just got a job at Spotify"); a spouse's, a
    # child's or a parent's may be the household's, and is left to the other rules
    r"sister|sisters|brother|brothers|sibling|siblings|uncle|aunt|auntie|niece|nephew|grandma|grandpa|grandmother|"
    r"grandfather|brother-in-law|sister-in-law))\b",
    re.I,
)


def others_subject(prefix: str) -> bool:
    """The words before a change verb make someone else its subject (see `_OTHERS_SUBJECT`)."""
    if _OTHERS_SUBJECT.match(prefix) is None:
        return False
    return (
        re.search(r"\b(?:i|we|i'm|we're|i've|we've|i'd|we'd)\b", prefix, re.I) is None
    )  # "a while ago we ..."


# a clause that says what the user stopped, right before a change: "现在不喝咖啡了，", "已经不用 Notion 了，"
_ZH_STOPPED_RE = re.compile(
    r"(?:^|[,，;；])\s*(?P<what>(?:我|我们)?(?:现在|已经|早就|也)?(?:不再|不|没再)"
    r"(?!知道|确定|清楚|好意思|过|然|管|是|太|行|对|一定|小心|懂)[\u4e00-\u9fffA-Za-z0-9 .+#-]{1,12}?了?)\s*[,，]\s*$"
)
_ZH_AHEAD_RE = re.compile(r"下周|下星期|下个?月|下半年|明天|后天|明年|下次|回头|过几天|过段时间|月底前|年底前")
# "my new iPhone 16 keeps dropping wifi", "our new Grafana dashboards ...": the user's own thing, new, is its slot's
# current value (the one before it is past), whatever the sentence then asks
_MY_NEW_RE = re.compile(r"\b(?:my|our)\s+(?:brand[\s-]+)?new\s+", re.I)


def _slotted_tool_at(text: str, at: int) -> tuple[Tool, int] | None:
    """The slotted tool that starts at `at` in `text`, with where it ends."""
    return next(((tool, end) for tool, start, end in find_tools(text) if start == at and tool.slot), None)


def _my_new_hits(sentence: str) -> list[Hit]:
    for match in _MY_NEW_RE.finditer(sentence):
        found = None if _blocked(sentence, match.start()) else _slotted_tool_at(sentence, match.end())
        if found is not None:
            tool, end = found
            lang = detect_lang(sentence)
            return [tool_hit(tool, match.start(), end, rule=f"{lang}.tool.my_new", lang=lang, confidence=0.8)]
    return []


_GOT_RE = re.compile(r"^(?:got|bought)\s+(?:a|an|my)\s+(?:new\s+)?", re.I)


def _got(clause: str, at: int) -> Tool | None:
    """The slotted thing right after "got / bought a (new) ..." at `at`, unless it came back ("got my MacBook
    back from repair")."""
    verb = _GOT_RE.match(clause[at:])
    found = _slotted_tool_at(clause, at + verb.end()) if verb is not None else None
    if found is None or re.match(r"\s+back\b", clause[found[1] :], re.I):
        return None
    return found[0]


def _may_tell_change(sentence: str) -> bool:
    low = sentence.lower()
    for word in _CHANGE_STATEMENT_WORDS:
        if word in low:
            return True
    return not sentence.isascii() and _CHANGE_STATEMENT_HAN.search(sentence) is not None


def _change_statement_hits(sentence: str) -> list[Hit]:
    if not _may_tell_change(sentence):
        return []
    if (_CHANGE_STATEMENT_EN.search(sentence) or _CHANGE_STATEMENT_ZH.search(sentence)) is None:
        return []  # one search of the sentence spares the clauses of most
    for start, clause in split_clauses(sentence) or [(0, sentence)]:
        lang = detect_lang(clause)
        pattern = _CHANGE_STATEMENT_ZH if lang == "zh" else _CHANGE_STATEMENT_EN
        match = pattern.search(clause)
        if match is None and lang == "en" and not clause.isascii():
            # mostly Latin letters, a Chinese grammar: "rate limit 已经 bump 到 500 rps"
            match = _CHANGE_STATEMENT_ZH.search(clause)
            lang = "zh" if match is not None else lang
        if match is None or is_asked(clause) or _TASK_WORDS.search(_THIS_LONG_RE.sub("", clause)):
            continue  # ("this week" alone is a passing state)
        if only_left(clause):
            continue  # "we moved off Vercel": what is gone, no statement of what is now
        if lang == "zh" and _ZH_AHEAD_RE.search(clause[: match.start()]):
            continue  # "下周 move 到 new cluster", "明年调到上海": a change ahead, not made
        if _ONE_OFF_MOVED.search(clause[: match.start()]) and not _RECURRING.search(clause):
            continue  # "会议改到下午三点了", "meeting got pushed to 4pm": one event moved, no lasting value
        if lang == "en" and not (_CHANGE_SUBJECT_EN.search(clause) or _BARE_SUBJECT_MOVED_EN.match(clause)):
            continue  # "the price changed to 30": not the user's own situation
        if _blocked(sentence, start + match.start()) or is_question_like(clause[: match.start()]):
            continue
        if lang == "en" and others_subject(clause[: match.start()]):
            continue
        said = clause.strip()
        if lang == "en":
            said = _FILLER_EN.sub("", said) or said  # "update: demo got pushed ...": the filler says nothing
        if lang == "en" and not re.search(r"\b(?:i|i'm|i've|we|we're|we've|my|our)\b", said, re.I):
            # "got an iPhone 16 last week": the subject dropped; "demo got pushed to ...": a bare noun, the user's
            verb_first = re.match(r"(?:\w+ing|\w+ed|got|bought|joined|back)\b", said, re.I)
            back = re.match(r"back\b", said, re.I) is not None  # "back to a 5-day week": the user is back
            owner = "the user is " if _ING_FIRST.match(said) or back else "the user " if verb_first else "the user's "
            said = owner + said[:1].lower() + said[1:]
        if lang == "zh":
            # "现在不喝咖啡了，改喝茶": what stopped, said just before the change, is part of it (and its topic)
            stopped = _ZH_STOPPED_RE.search(sentence[:start])
            content = zh_content(f"{stopped.group('what')}，{clause}" if stopped else clause)
        else:
            content = sentence_case(third_person(said))
        cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.WORTH,
                         confidence=0.75, source_event_ids=(), lang=lang, rule=f"{lang}.statement.change")  # fmt: skip
        topic = topic_slot(clause)
        got = _got(clause, match.start())
        if (
            topic is not None
        ):  # "网关端口改成 9000 了": the topic's one current value, replacing the one before
            cand = dataclasses.replace(cand, slot=topic, value=topic_value(content))
        elif got is not None:
            # "I got an iPhone 15 last week", "since I got my iPhone ...": the thing got is its slot's new value
            cand = dataclasses.replace(cand, slot=got.slot, value=got.canonical)
        return [(cand, start, start + len(clause))]
    return []


# The current state told with "now" / "现在" in a clause no other rule read: "现在住闵行", "现在用 iPhone 16 了",
# "现在 base 深圳", "现在 72 公斤了", and the English forms of `_NOW_STATE_EN`: one memory in the clause's words,
# so that the newest statement is there to be found.
_NOW_STATE_ZH = re.compile(
    r"现在\s*(?:都|已经|全|主要)?(?:住在|住|用|叫|开|base\s*在?|在用|做|负责|接手|带)\s*(?!什么|啥|哪|怎么|多少|几)"
    r"(?:[A-Za-z][\w.+#-]*|\d|[\u4e00-\u9fff]{2,6}(?=了|$|[,.!~]))"
    # a role or a state: "现在是架构师了" (not a time: "现在是下午三点了", "现在是周五")
    r"|现在\s*是\s*(?:[A-Za-z]|(?![\u4e00-\u9fff]*(?:[点时周月年天号]|时候|早上|上午|中午|下午|晚上))[\u4e00-\u9fff]{2,6}了)"
    r"|现在\s*\d[\d.]*\s*(?:公斤|斤|kg|块|元|万|k\b)"
)


def _now_state_hits(clause: str) -> list[Hit]:
    if "now" not in clause.lower() and "现在" not in clause:
        return []
    lang = detect_lang(clause)
    match = (_NOW_STATE_ZH if lang == "zh" else _NOW_STATE_EN).search(clause)
    if match is None or is_asked(clause) or _TASK_WORDS.search(clause) or only_left(clause):
        return []
    if _blocked(clause, match.start()) or is_question_like(clause[: match.start()]):
        return []
    if lang == "en" and others_subject(clause[: match.start()]):
        return []
    said = clause.strip()
    if lang == "en":
        said = _FILLER_EN.sub("", said) or said
        if not re.search(r"\b(?:i|i'm|i've|we|we're|we've|my|our)\b", said, re.I):
            owner = "the user is " if _ING_FIRST.match(said) else "the user's "
            said = owner + said[:1].lower() + said[1:]
    content = _owned_zh(zh_content(said)) if lang == "zh" else sentence_case(third_person(said))
    cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.WORTH,
                     confidence=0.75, source_event_ids=(), lang=lang, rule=f"{lang}.statement.now")  # fmt: skip
    topic = topic_slot(clause)
    if topic is not None:
        cand = dataclasses.replace(cand, slot=topic, value=topic_value(content))
    elif (tool := _now_tool(clause, match.start())) is not None:
        # "换手机了，现在用 iPhone 15", "it's Vitest now": the tool told as the state now is its slot's value
        cand = dataclasses.replace(cand, slot=tool.slot, value=tool.canonical)
    return [(cand, 0, len(clause))]


def _now_tool(clause: str, at: int) -> Tool | None:
    """The one slotted tool the state told from `at` names, when it names exactly one and not as the subject of
    what is told ("so JS is 2-space indentation now" is about indentation, not the language)."""
    tools = {
        tool.canonical: tool
        for tool, start, end in find_tools(clause)
        if start >= at and tool.slot and not _COPULA_AFTER.match(clause, end)
    }
    return next(iter(tools.values())) if len(tools) == 1 else None


_COPULA_AFTER = re.compile(r"\s*(?:is|are|'s|was|were|has|have)\b|\s*(?:是|的|都是|也是|已经是)(?!\s*$)", re.I)


# A value set right against the one it replaces, with no rule's subject around it: "it's Florence not Rome",
# "the bucket is acme-logs-eu, not acme-log-eu", "we're not on Redis, it's Valkey 8", "是周五，不是周四",
# "不是 3 楼，是 5 楼": a correction (MUST) in the sentence's words. Both values must be of one sort (two names,
# two days, two identifiers or two numbers), so that "coffee, not tea" or "Friday, not a big deal" are left alone.
_DAY_EN = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_VALUE_EN = (
    rf"(?:{_DAY_EN}|(?-i:[A-Z][\w.+#-]*)(?:\s+(?-i:[A-Z0-9][\w.+#-]*)){{0,2}}(?:\s+\d[\w.]*)?|"
    r"[a-z0-9]+(?:[-_.:/][a-z0-9]+)+|\d[\d.,:]*(?:\s*(?:am|pm|mg|kg|gb|mb|k|%))?)"
)
_AGAINST_EN = re.compile(
    # what leads in ("sorry, typo earlier -", "oh I should've said,"): one short clause, left out of the memory
    r"^(?:[^.?!]{0,40}?(?:[,:\u2014\u2013]|\s-\s)\s*)??(?P<body>"
    r"(?:(?:it's|its|it\s+is|that's|that\s+is)\s+|(?:the|my|our)\s+[\w\s-]{1,24}?\s+(?:is|are|'s)\s+)?"
    rf"(?P<new>{_VALUE_EN})[\s!.,]*\s(?:and\s+)?not\s+(?:the\s+)?(?P<old>{_VALUE_EN}))\W*$"
    r"|^\W*(?P<body2>(?:we're|we\s+are|i'm|i\s+am|it's|it\s+is)\s+not\s+(?:on|in|at|using)?\s*"
    rf"(?P<old2>{_VALUE_EN})\s*[,;]\s*(?:it's|its|it\s+is|we're\s+on|we\s+use|i'm\s+on)\s+(?P<new2>{_VALUE_EN}))",
    re.I,
)
_VALUE_ZH = (
    r"(?:周[一二三四五六日天]|星期[一二三四五六日天]|(?:\d[\d.:]*|[A-Za-z][\w.+#-]*)\s*[\u4e00-\u9fff]{0,2})"
)
_AGAINST_ZH = re.compile(
    rf"^(?:[^。？！?]{{0,12}}?[,，]\s*)??(?P<body>(?:[\u4e00-\u9fff]{{0,8}}?是)?\s*(?P<new>{_VALUE_ZH})\s*[,，]\s*不是\s*"
    rf"(?P<old>{_VALUE_ZH}))\W*$"
    rf"|^(?:[^。？！?]{{0,12}}?[,，]\s*)??(?P<body2>(?:[\u4e00-\u9fff]{{0,8}}?)?不是\s*(?P<old2>{_VALUE_ZH})\s*[,，]\s*(?:而)?是\s*"
    rf"(?P<new2>{_VALUE_ZH}))\W*$"
)


def _sort_of_value(value: str) -> str:
    low = value.casefold()
    if re.fullmatch(_DAY_EN, low) or re.fullmatch(r"(?:周|星期)[一二三四五六日天]", value):
        return "day"
    if value[:1].isdigit():
        return "number"
    if re.search(r"[-_.:/]", value) and value.isascii() and not value[:1].isupper():
        return "identifier"
    return "name"


# A version corrected: the tool named with one version as not (or no longer) so, and a bare version given as what
# it is ("I said Postgres 14 earlier but it's actually 15", "不是 Python 3.8 啊，生产上已经是 3.11 了").
_CORRECTION_CUE_RE = re.compile(
    r"\b(?:not|isn't|aren't|wasn't|said|wrote|meant|actually|correction|wrong|typo)\b|不是|说错|写错|打错|其实|更正",
    re.I,
)
_BARE_VERSION_RE = re.compile(
    r"(?:\b(?:it's|it\s+is|is|it's\s+actually|actually|now|really)|已经是|现在是|其实是|应该是|是|升到了?|升级到了?)"
    r"\s*(?:actually\s+|now\s+|already\s+)?v?(?P<v>\d+(?:\.\d+){0,2})(?![\d.]*\s*(?:%|年|月|天|个|人|岁|点|号|"
    r"days?|years?|months?|hours?|people|times|gb|mb|ms|s\b))",
    re.I,
)
_VERSION_TAIL_RE = re.compile(r"\s+v?\d+(?:\.\d+){0,2}$")


def _version_corrected_hits(sentence: str) -> list[Hit]:
    versioned = [(t, s, e) for t, s, e in find_tools(sentence) if t.slot and _VERSION_TAIL_RE.search(t.canonical)]
    if len(versioned) != 1 or is_asked(sentence):
        return []
    tool, _start, end = versioned[0]
    old = _VERSION_TAIL_RE.search(tool.canonical)
    assert old is not None
    old_v = old.group().strip().lstrip("v")
    for match in _BARE_VERSION_RE.finditer(sentence):
        new_v = match.group("v")
        if new_v == old_v or ("." in old_v) != ("." in new_v) or match.start() < end - 1:
            continue  # the same value, another kind of number ("3.11" for "14"), or before the tool's name
        base = tool.canonical[: old.start()]
        said = _VERSION_TAIL_RE.sub("", tool.said or tool.display)
        fixed = tool._replace(canonical=f"{base} {new_v}", display=f"{_VERSION_TAIL_RE.sub('', tool.display)} {new_v}",
                              said=f"{said} {new_v}")  # fmt: skip
        lang = detect_lang(sentence)
        return [tool_hit(fixed, 0, len(sentence), rule=f"{lang}.tool.version_corrected", lang=lang,
                         category=Category.DECISION, tier=Tier.MUST, confidence=0.85)]  # fmt: skip
    return []


def _value_against_value_hits(sentence: str) -> list[Hit]:
    if "not" not in sentence.lower() and "不是" not in sentence:
        return []
    lang = detect_lang(sentence)
    match = (_AGAINST_ZH if lang == "zh" else _AGAINST_EN).search(sentence.strip())
    if match is None or is_asked(sentence) or _blocked(sentence, 0):
        return []
    new, old = match.group("new") or match.group("new2"), match.group("old") or match.group("old2")
    if new is None or old is None or new.casefold() == old.casefold():
        return []
    if _sort_of_value(new) != _sort_of_value(old):
        return []
    said = match.group("body") or match.group("body2")
    if lang == "zh":
        content = "更正：" + zh_content(said)
    else:
        content = "Correction: " + sentence_case(third_person(_FILLER_EN.sub("", said) or said))
    cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.MUST, confidence=0.8,
                     source_event_ids=(), lang=lang, rule=f"{lang}.correction.against")  # fmt: skip
    return [(cand, 0, len(sentence))]


# What the user said before, corrected: the thing named, what was said of it (optional) and what it really is.
# "I told you the deadline was the 15th, it's actually the 25th", "earlier I said the server IP was 10.0.0.5 but it
# should be 10.0.0.7", "我之前说 deadline 是 15 号，其实是 25 号", "上次说的服务器 IP 不对，应该是 10.20.3.14": a
# correction (MUST) of whatever memory holds the thing's words (`core.topic_change`), in the sentence's words.
# Only the user's own earlier words ("I said", "我之前说"): "he said the build was green, it's actually red" is
# someone else's.
_SAID_CORRECTED_EN = re.compile(
    r"\b(?:i|we)\s+(?:(?:just|already|previously|originally)\s+)?(?:said|told\s+you|wrote|mentioned|gave\s+you|typed)"
    r"\s+(?:(?:earlier|before|yesterday|above)\s+)?(?:that\s+)?"
    r"(?P<what>(?:the|my|our)\s+[a-z][\w'/-]*(?:\s+[a-z][\w'/-]*){0,3}?)\s+(?:was|is|were|are|would\s+be)\s+"
    r"(?P<old>[^,;!?]{1,30}?)(?:\s+(?:earlier|before|yesterday|above))?\s*(?:[,;]|\.\s|\s-+|\s—|\s+but)\s*(?:but\s+)?"
    r"(?:it's|it\s+is|it|that's|it\s+was|they're|they\s+are)?\s*(?:actually|really|in\s+fact|should\s+(?:be|have\s+been)|"
    r"supposed\s+to\s+be)\s+(?:be\s+)?(?P<new>[^,;!?]{1,30}?)\s*(?:[,;!?]|\.(?:\s|$)|$)",
    re.I,
)
_SAID_CORRECTED_ZH = re.compile(
    r"(?:(?:之前|上次|刚才|刚刚|前面|昨天|早上)我?|我(?:之前|上次|刚才|刚刚|前面|昨天)?)(?:跟你)?(?:说|讲|写|告诉你)(?:的|过的|过)?"
    r"\s*(?P<what>[^,，。！？?是]{1,16}?)\s*(?:是\s*(?P<old>[^,，。！？?]{1,16}?))?\s*(?:不对|错了|有误|写错了|说错了)?\s*"
    r"[,，]\s*(?:其实|应该|实际上|正确的|准确地说|实际)(?:应该)?是\s*(?P<new>[^,，。！？?]{1,30})"
)


_SAID_CUE_RE = re.compile(r"\b(?:said|told|wrote|mentioned|gave|typed)\b|说|讲|写|告诉", re.I)


def _said_corrected_hits(sentence: str) -> list[Hit]:
    lang = detect_lang(sentence)
    match = (_SAID_CORRECTED_ZH if lang == "zh" else _SAID_CORRECTED_EN).search(sentence)
    if match is None or sentence[match.end("new") :].lstrip()[:1] in ("?", "？") or _blocked(sentence, match.start()):
        return []  # "... it's actually 7?" asks
    what, new = match.group("what").strip().lstrip("的").strip(), match.group("new").strip().rstrip(".。了啦")
    if len(what) < 2:
        return []  # "我说的是 A 方案，其实是 B 更好": no thing named, an opinion revised
    old = (match.group("old") or "").strip()
    if not new or new.casefold() == old.casefold():
        return []
    if lang == "zh":
        content = f"更正：{what}是{new}" + (f"，不是{old}" if old else "") + "。"
    else:
        what = re.sub(r"^(?:my|our)\b", "the user's", what, flags=re.I)
        content = f"Correction: {what[:1].upper()}{what[1:]} is {new}" + (f", not {old}" if old else "") + "."
    cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.MUST, confidence=0.8,
                     source_event_ids=(), lang=lang, rule=f"{lang}.correction.statement")  # fmt: skip
    return [(cand, 0, len(sentence))]


# A single-valued topic given its new or current value: a change verb or "now" on a clause that names the
# topic ("release day moved to Thursday", "we moved offices to King's Cross", "许可证自即日起变更为 Apache 2.0",
# "我现在都是五点半起床了", "瑜伽不练了，现在改练普拉提"): the clause in the topic's slot, so that it replaces the
# topic's earlier statement however each was worded.
_TOPIC_NEW_VALUE_RE = re.compile(
    r"\b(?:moved|changed|switched|shifted|pushed|bumped|went|is\s+now|are\s+now|now\s+(?:is|are|on|at|in))\b"
    r"|\bnow\b(?=.{0,40}$)|\binstead\b|\bsince\s+(?:i|we)\s+(?:started|switched|moved|began)\b|改成|改为|变更为|变更成|变成|换成|调成|调整为|改到|换到|挪到|搬到|迁到|迁移到|改练|改考|改学|"
    r"改在|现在(?:都|是|改|每天)?",
    re.I,
)


# "this month" / "this week" tell when, not which piece of work ("moved offices to King's Cross this month")
# also a spoken filler before the subject ("嗯最近换了作息那个我现在都是五点半起床了"): no thing pointed at
_TIME_THIS_RE = re.compile(
    r"\bthis\s+(?:week|month|year|quarter|spring|summer|autumn|fall|winter|morning|weekend|sprint|term|semester)\b"
    r"|那个(?=\s*我)",
    re.I,
)
# a sentence that drops its first-person subject and opens with what the user did ("dropped the bootcamp, ...")
_VERB_FIRST_EN = re.compile(
    r"^\s*(?:(?:so|and|oh|ok|anyway|update|fyi)[\s,:]+)*(?:dropped|quit|ditched|stopped|started|switched|moved|"
    r"signed\s+up|enrolled|gave\s+up|finished|left)\b",
    re.I,
)


def _topic_statement_hits(sentence: str) -> list[Hit]:
    if not _may_name_topic(sentence):
        return []
    for start, clause in split_clauses(sentence) or [(0, sentence)]:
        slot = topic_slot(clause)
        cue = _TOPIC_NEW_VALUE_RE.search(clause) if slot else None
        if cue is None or is_asked(clause) or _TASK_WORDS.search(_TIME_THIS_RE.sub("", clause)):
            continue
        if _blocked(sentence, start + cue.start()) or is_question_like(clause[: cue.start()]):
            continue
        lang = detect_lang(clause)
        if lang == "en" and not (
            _CHANGE_SUBJECT_EN.search(clause) or topic_noun_first(clause) or _VERB_FIRST_EN.match(sentence)
        ):
            continue  # "the price moved to 30": not the user's own topic
        said = clause.strip()
        content = zh_content(said) if lang == "zh" else sentence_case(third_person(said))
        cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.WORTH,
                         confidence=0.75, source_event_ids=(), slot=slot, value=topic_value(content), lang=lang,
                         rule=f"{lang}.topic.now")  # fmt: skip
        return [(cand, start, start + len(clause))]
    return []


# The state of a topic, the topic its subject: "订单服务端口是 7001", "日志都进 Graylog", "the license is BSD-3",
# "我在练拳击": after the topic's words, a verb of being or use and a name or a number (a Han value only after a
# topic that is the user's own doing, "我在练" / "我在备考"); what the clause states is the topic's value.
_TOPIC_STATE_ZH = re.compile(
    r"^\s*(?:都|全|全部|全都|一直|目前|现在|主要|统一|默认)*(?:是|用的是|用的|用|采用|进|打到|走|放在|在)\s*[A-Za-z0-9]"
)
_TOPIC_STATE_EN = re.compile(
    r"^\s*(?:is|are|=|:|to|in|into|(?:go|goes|live|lives|land|lands|ship|ships)\s+(?:to|in|into))\s+(?:on\s+|in\s+|the\s+)?"
    r"(?-i:[A-Z0-9])",
    re.I,
)
_TOPIC_DOING_ZH = re.compile(r"^(?:我|我们)(?:现在|目前|一直|最近)?(?:在|正在)?$")


def _topic_state_hits(clause: str) -> list[Hit]:
    found = topic_match(clause) if _may_name_topic(clause) else None
    if found is None or is_asked(clause) or _TASK_WORDS.search(_TIME_THIS_RE.sub("", clause)):
        return []
    slot, match = found
    lang = detect_lang(clause)
    after = clause[match.end() :]
    if lang == "zh":
        doing = _TOPIC_DOING_ZH.match(clause[: match.start()]) and re.match(
            r"\s*[\u4e00-\u9fffA-Za-z]{2}", after
        )
        if not (doing or (match.start() <= 10 and _TOPIC_STATE_ZH.match(after))):
            return []
    elif match.start() > 24 or not _TOPIC_STATE_EN.match(after):
        return []
    if _blocked(clause, match.start()):
        return []
    said = clause.strip()
    content = zh_content(said) if lang == "zh" else sentence_case(third_person(said))
    cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.WORTH,
                     confidence=0.75, source_event_ids=(), slot=slot, value=topic_value(content), lang=lang,
                     rule=f"{lang}.topic.state")  # fmt: skip
    return [(cand, 0, len(clause))]


def _topics_named(hits: list[Hit]) -> list[Hit]:
    """A lasting fact in no slot whose words name a single-valued topic ("用户在备考 CPA", "the user drives to
    work"): the topic's slot, so that a later statement of the topic replaces it."""
    out: list[Hit] = []
    for cand, start, end in hits:
        if (
            cand.slot is None
            and cand.kind is Kind.SEMANTIC
            and cand.tier is Tier.WORTH
            and _may_name_topic(cand.content)
        ):
            topic = topic_slot(cand.content)
            if topic is not None:
                cand = dataclasses.replace(cand, slot=topic, value=topic_value(cand.content))
        out.append((cand, start, end))
    return out


def _may_name_topic(sentence: str) -> bool:
    """The words some topic of `topic_slot` needs, at the start of a word (one search, not one per topic)."""
    low = sentence.lower()
    for word in _TOPIC_WORDS:  # substring tests first: most sentences name no topic at all
        if word in low:
            return _TOPIC_GATE.search(sentence) is not None
    return not sentence.isascii() and _TOPIC_GATE.search(sentence) is not None


_TOPIC_WORDS = ("back", "monitor", "alert", "manager", "boss", "lead", "skip", "release", "deploy", "ship", "call",
                "office", "licen", "connection", "log", "port", "wake", "get up", "bik", "cycl", "driv", "walk",
                "commut", "studying", "training", "marathon", "triathlon", "k race", "k run", "approv", "review",
                "bootcamp", "course", "speciali", "advis", "supervis", "note")  # fmt: skip


# a word each English topic pattern opens with ("port", not "support"; "ship", not "relationship"), and the
# Han words of the Chinese ones
_TOPIC_GATE = re.compile(
    r"\b(?:back|monitor|alert|manager|boss|lead|skip|release|deploy|ship|on-?call|oncall|office|licen|connection|"
    r"log|port|wake|get\s+up|bik|cycl|driv|walk|commut|studying|training|marathon|triathlon|\d+k\b|"
    r"approv|review|bootcamp|course|speciali|advis|supervis|notes|note)"
    r"|公司|办公|许可证|协议|连接池|日志|端口|起床|点起|通勤|上班|备考|改考|报考|练|课|培训|导师|发版|上线|发布|值班|"
    r"备份|监控|告警|马拉松|半马|全马|批|审|review|笔记|领导|老板|经理|老大|负责人|leader|直属",
    re.I,
)


# What a clause-opening rule starts with, in either language: a prohibition, a standing rule, a request about
# memory, a correction, or a thing named first ("ORM 就别用了").
_CLAUSE_OPENER_RE = re.compile(
    r"^(?:(?:and|but|so|also|plus|oh|ok|okay|btw|then|just)[\s,]+)*(?:please|pls|kindly|don't|dont|do\s+not|never|"
    r"always|avoid|stop|no\b|not\b|use\b|remember|forget|keep|make\s+sure|be\s+sure|from\s+now|going\s+forward|"
    r"in\s+(?:the\s+)?future|actually|correction|i\s+meant|can\s+you|could\s+you|would\s+you|you\s+(?:should|must|"
    r"need|keep|always|still)|i'd\s+rather|we\s+(?:don't|never|do\s+not)|rules?\b|only\b|when\b|whenever\b|"
    r"if\s+you\b)"
    r"|^(?:还有|另外|而且|然后|对了|顺便|所以|因此|那就|求求你|拜托你?)?\s*(?:请|麻烦|别|少用|少写|少加|多用|尽量|不要|不许|不准|不能|禁止|严禁|永远|千万|一定|必须|务必|以后|今后|"
    r"之后|从现在|记住|记得|别忘|忘掉|忘了|删|其实|不是|纠正|更正|我说的是|应该是|叫我|称呼|用|一律|都用|统一|只能|"
    r"所有|[A-Za-z][\w.+#-]*\s*(?:就|也|都|千万|一定|以后)?(?:别|不要|不许|不准|禁止))"
    # a topic, then a rule word: "任何变更都不能在 10 点以后上线", "注释别用拼音"
    r"|^[^,]{1,16}?(?:不许|不准|不能|禁止|不允许|不得|严禁|必须|一律|务必|一定要|只能|只许|少用|少写|少加|多用|"
    + BIE
    + r"|不要)",
    re.I,
)


# A change the sentence takes as given, whatever it then asks: "now that the lambdas are on Node 22, can I ...?",
# "ever since we moved to X ...", "after we moved the db to Neon ...", "自从迁到 X 以后…", "升到 17 之后…怎么办"
_PRESUPPOSED_RE = re.compile(
    r"\bnow\s+that\b|\b(?:ever\s+)?since\s+(?:we|i|the|our|they)\b|\bafter\s+(?:we|i)\s+(?:moved|switched|migrated|"
    r"upgraded|ported|bumped|landed)\b|\bafter\s+(?:the|our)\s+[\w.+#-]+(?:\s+[\w.+#-]+)?\s+(?:upgrade|migration|move|"
    r"switch)\b|自从|(?:换成|改用|迁到|迁移到|升到|升级到|切到|搬到|挪到)[^,?？]{1,24}?(?:以后|之后|后)",
    re.I,
)
_SO_REQUEST_RE = re.compile(
    r"^(?:so|therefore|hence)\s+(?:please\s+|pls\s+)?(?:give|keep|show|write|use|send|answer|reply|don't|do\s+not|"
    r"never|always|avoid|stop|no\s+more)\b",
    re.I,
)
_TASK_AT_HAND_RE = re.compile(
    r"\b(?:for\s+now|this\s+time|for\s+this\s+(?:one|snippet|demo|file|function|script|query|test|pr|ticket|task)|"
    r"throwaway|right\s+now|at\s+the\s+moment|today|tonight|just\s+this\s+once)\b|这段|这次|这一次|这回|先用|先别|暂时|这个(?:文件|函数|组件|脚本|接口|页面)|"
    r"方便我|调试",
    re.I,
)
_REJECTED_RE = re.compile(
    r"\b(?:rejected|ruled\s+out|decided\s+against|passed\s+on|not\s+going\s+with|backed\s+out|dropped|ditched|"
    r"abandoned|gave\s+up\s+on)\b|没选|没用|没上|放弃|否掉|弃用|不考虑",
    re.I,
)


# A clause that goes on with the subject of the one before it (Chinese topic chains, English ellipsis):
# "我们部署在 k8s 上，用 ArgoCD 做 GitOps", "we're on Postgres, using pgbouncer in front".
_CHAIN_RE = re.compile(
    r"^\s*(?:(?:也|还|都|再|并且|同时)\s*)?(?:用|用的是|采用|基于|跑在|部署在|托管在|放在|存在|走|(?:deploy(?:ed)?|"
    r"host(?:ed)?|run)\s*在)\s*[A-Za-z]"
    r"|^\s*(?:and\s+|also\s+|plus\s+)?(?:using|with|hosted\s+on|deployed\s+(?:on|to)|running\s+on|backed\s+by)\s+"
    r"(?-i:[A-Z])"
    # "I'm a data engineer at a logistics co, mostly Airflow + dbt": what the user works with, the subject kept
    r"|^\s*(?:mostly|mainly|primarily)\s+(?=[A-Za-z][\w.+#-]*(?:\s*(?:\+|/|and|,)\s*[A-Za-z][\w.+#-]*)*\s*$)",
    re.I,
)
# A clause the speaker gives as the ground of what follows ("given that our app is Flutter, ...", "since we're
# all on VS Code, can you ...", "既然我们前端是 React，…"): what it states is told, not asked, whatever follows.
_PREMISE_RE = re.compile(
    r"^\s*(?:(?:and|so|but|ok|okay)[\s,]+)?(?:given\s+that|seeing\s+(?:as|that)|since|because)\s+(?=(?:i|i'm|we|we're|"
    r"our|my|the|this|everything|everyone)\b)|^\s*(?:既然|因为|由于|鉴于)\s*(?=我们|咱们|我|项目|公司|团队|组里|这个|[A-Za-z])",
    re.I,
)
# "Vue 2 here (yeah, still), can you ...", "Rails shop here": the user's own tool, named as where they stand
_HERE_RE = re.compile(
    r"^\s*(?P<name>[A-Za-z][\w.+#-]*(?:\s+[A-Za-z][\w.+#-]*)?(?:\s+v?\d[\w.]*)?)\s+(?:user\s+|dev\s+|shop\s+|team\s+)?"
    r"here\b(?!\s+(?:is|are|was|were)\b)",
    re.I,
)


def _here_hits(clause: str, lang: str) -> list[Hit]:
    match = _HERE_RE.match(clause) if " here" in clause.lower() and not is_asked(clause) else None
    tools = find_tools(match.group("name")) if match else []
    if not match or len(tools) != 1 or tools[0][1] != 0 or tools[0][0].slot is None:
        return []  # the name must be one tool, all of it: "the error here" names nothing
    return [tool_hit(tools[0][0], 0, len(clause), rule=f"{lang}.tool.here", lang=lang)]


_NO_REFERENT_RE = re.compile(r"^\s*(?:(?:and|so|but)\s+)?(?:it's|it\s+is)\b", re.I)


_WHERE_SLOTS = frozenset({"project.cloud", "project.hosting", "project.orchestration"})
# a noun whose value is the provider itself, not a place it runs on: "DNS moved to Cloudflare" is the DNS
_PROVIDER_SLOTS = frozenset({"project.dns", "project.region"})


def _blocked(text: str, at: int) -> bool:
    # without Han characters the Chinese test adds nothing to the English one (its words are all Han)
    return en_blocked(text, at) or (has_han(text) and zh_blocked(text, at))


def _dropped_subject(clause: str) -> bool:
    """A clause whose first-person subject was dropped ("now on the payments team", "搬到杭州了"): a statement
    of its own, like one that opens with a subject."""
    return (en_with_subject(clause) or zh_with_subject(clause)) is not None


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
        # "CI is Drone", "调度用的是 DolphinScheduler": a slot named by its noun
        state = noun_state_hits(clause, lang=rules.lang)
        if state and not is_asked(clause):
            return state
        stack = stack_hits(clause, lang=rules.lang, inherited=inherited)
        # one slot named (with tools in none beside it, or a second value of it: "Django with HTMX"), or
        # only tools in no slot: one memory in the clause's own words ("定了用 Go 重写网关" says more than "uses
        # Go"), unless its subject names nothing ("it's all Zustand now")
        slots = {cand.slot for cand, _, _ in stack if cand.slot}
        if stack and len(slots) <= 1 and not _NO_REFERENT_RE.match(clause):
            cand, start, end = next((hit for hit in stack if hit[0].slot), stack[0])
            words = zh_content(clause) if rules.lang == "zh" else sentence_case(third_person(clause.strip()))
            cand = dataclasses.replace(cand, content=words)
            topic = topic_slot(clause)
            if topic is not None and (cand.slot is None or topic in TOPICS_OVER_TOOLS):
                # "日志都打到 ELK": tools in no slot, on a topic with one current value; "a course on Rust": the
                # course, not the project's language
                cand = dataclasses.replace(cand, slot=topic, value=topic_value(words))
            return [(cand, start, end)]
        if stack:
            return stack
    hits = rules.generic(clause, sentence, whole)
    if not hits and (_mixed(clause) or (rules is en.ENGLISH and has_han(clause))):  # "没上 k8s": Chinese too
        other = zh.CHINESE if rules is en.ENGLISH else en.ENGLISH
        hits = other.generic(clause, sentence, whole)
    if not hits:
        return hits
    # "MongoDB was considered and rejected" names no value; "备份到阿里云 OSS" is a backup policy, not the cloud
    clause_topic = topic_slot(clause)
    rejected = _REJECTED_RE.search(clause)
    if clause_topic in TOPICS_OVER_TOOLS:
        clause_tool = None
    elif (
        rejected
    ):  # "we dropped MySQL, everything is on Postgres now": the one value named after the rejection
        after = {
            (tool.slot, tool.canonical): tool
            for tool, start, end in find_tools(clause)
            if tool.slot and start >= rejected.end() and not named_as_left(clause, start, end)
        }
        clause_tool = next(iter(after.values())) if len(after) == 1 else None
    else:
        clause_tool = current_tool(clause)
    out: list[Hit] = []
    for cand, start, end in hits:
        tool = clause_tool if cand.kind is Kind.SEMANTIC and cand.slot is None else None
        topic = clause_topic if cand.slot is None and tool is None else None
        if tool is not None:
            cand = dataclasses.replace(cand, slot=tool.slot, value=tool.canonical, confidence=0.8)
        elif topic is not None:  # one current statement per topic: its value is the statement itself
            cand = dataclasses.replace(cand, slot=topic, value=topic_value(cand.content))
        out.append((cand, start, end))
    return out


def _old_values_folded(sentence: str, hits: list[Hit]) -> list[Hit]:
    """A sentence that gives a slot its current value and also names the value it replaces ("换成 pnpm 了，以后
    别再写 npm install", "we got rid of Jenkins, it's all Buildkite now"): a rule about the old value keeps the
    whole sentence, so that it names the new one too; a statement that only names the old value is dropped
    (the slotted value tells the change, and the old value must not stay current beside it)."""
    if len(hits) < 2:
        return hits
    current = {cand.slot: cand.value or "" for cand, _, _ in hits if cand.slot and cand.value}
    if not current or not names_change(sentence):  # "Django with HTMX": two values in use, nothing left
        return _one_value_per_slot(hits)
    out: list[Hit] = []
    for cand, start, end in hits:
        left = cand.slot is None and any(
            tool.slot in current and not current[tool.slot].startswith(tool.canonical)
            for tool, _, _ in find_tools(cand.content)
        )
        if left and cand.tier is Tier.MUST:
            lang = detect_lang(sentence)
            words = (
                zh_content(sentence).replace(",", "，")
                if lang == "zh"
                else sentence_case(third_person(sentence))
            )
            cand = dataclasses.replace(cand, content=words)
        elif left:
            continue
        out.append((cand, start, end))
    return out


def _one_value_per_slot(hits: list[Hit]) -> list[Hit]:
    """Two values of one slot in one sentence that names no change ("I'm on Windows with WSL", "Django with
    HTMX"): both are in use, so they are one memory in the slot, valued by the first, that names both (a
    later value of the slot retires them together; neither replaces the other)."""
    first: dict[str, int] = {}
    out: list[Hit] = []
    for cand, start, end in hits:
        if cand.slot is None or cand.slot not in first:
            if cand.slot:
                first[cand.slot] = len(out)
            out.append((cand, start, end))
            continue
        kept, kept_start, kept_end = out[first[cand.slot]]
        if cand.value == kept.value:
            out.append((cand, start, end))
            continue
        named = cand.value or ""
        tool = find_tools(cand.content)
        name = tool[-1][0].display if tool else named
        if name.casefold() not in kept.content.casefold():
            end_mark = "。" if kept.content.endswith("。") else "."
            extra = f"（和 {name}）" if end_mark == "。" else f" (with {name})"
            kept = dataclasses.replace(kept, content=kept.content.rstrip("。.") + extra + end_mark)
        out[first[cand.slot]] = (kept, min(kept_start, start), max(kept_end, end))
    return out


# A request for the agent's conduct from now on, asked politely as a question ("would you mind writing tests
# first from now on?", "能不能以后都用英文回复？"): a standing rule, the same as the imperative it asks for.
_MIND_ING_RE = re.compile(
    r"^(?:(?:ok|okay|so|also|and|hey|btw)[\s,]+)*(?:please\s+)?(?:would|do)\s+you\s+mind\s+(?P<verb>[a-z]+)ing\b"
    r"(?P<rest>[^?]*?)\s*\??\s*$",
    re.I,
)
_ZH_CAN_YOU_RE = re.compile(
    r"^(?:你)?(?:能不能|能否|可不可以|可以|能)(?:请你?|麻烦你?)?\s*(?P<rest>.+?)(?:吗|呢|吧)?\s*[?？]?\s*$"
)
_FROM_NOW_RE = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|from\s+here\s+on)\b"
    r"|以后|今后|往后|从现在(?:起|开始)|之后都",
    re.I,
)


def _base_verb(stem: str) -> str:
    """The base form of a verb whose "-ing" was cut off ("writ" -> "write", "putt" -> "put")."""
    from core.extraction.rules.en.behaviour import IMPERATIVE_VERBS

    stem = stem.lower()
    for base in (stem + "e", stem, stem[:-1]):
        if base in IMPERATIVE_VERBS:
            return base
    return stem


def _asked_standing_request(sentence: str) -> str | None:
    """The imperative a polite question asks for from now on, or None."""
    low = sentence.lower()
    said = "now on" in low or "forward" in low or "future" in low or "here on" in low
    if not (said or "后" in sentence or "从现在" in sentence) or not _FROM_NOW_RE.search(sentence):
        return None  # substring tests first (以后, 今后, 往后, 之后都 all end in 后)
    mind = _MIND_ING_RE.match(sentence)
    if mind:
        return _base_verb(mind.group("verb")) + mind.group("rest")
    can = _ZH_CAN_YOU_RE.match(sentence) if has_han(sentence) else None
    if can and _FROM_NOW_RE.search(can.group("rest")):
        return can.group("rest")
    return None


# A complaint about what the agent keeps doing, then the bare imperative that corrects it ("你怎么老是用 print，
# 说了多少遍了，用 logger！", "you keep using moment, how many times, use date-fns"): the imperative is standing.
_COMPLAINT_RE = re.compile(
    r"\byou\s+(?:keep|always|still)\b|\b(?:how\s+many\s+times|i\s+(?:already\s+)?told\s+you|again)\b|你(?:怎么)?(?:老是|总是|"
    r"又|还是|每次都)|说了(?:多少|几|好几)(?:遍|次)|说过(?:多少|几|好几)(?:遍|次)|跟你说过",
    re.I,
)
_BARE_USE_RE = re.compile(
    r"^\s*(?:(?:just|please|pls|so)\s+)?(?:use|switch\s+to)\s+(?P<en>[A-Za-z][\w.+#/-]*)[\s.!]*$"
    r"|^\s*(?:请|就|给我|都|改)?(?:用|换成|改用)\s*(?P<zh>[A-Za-z][\w.+#/-]*)\s*(?:啊|吧|好吗|行吗)?[\s.!~]*$",
    re.I,
)


def _complaint_rule_hits(sentence: str, clauses: list[tuple[int, str]]) -> list[Hit]:
    low = sentence.lower()
    if not ("use" in low or "switch" in low or "用" in sentence or "换" in sentence) or not (
        "you" in low or "again" in low or "times" in low or "你" in sentence or "说" in sentence
    ):
        return []  # the words every complaint and its imperative have: substring tests spare the pattern
    complaint = _COMPLAINT_RE.search(sentence)
    if complaint is None or _blocked(sentence, complaint.start()):
        return []  # "你怎么老是…" is a complaint, not a question: only the imperative's own clause must not ask
    for start, clause in clauses:
        use = _BARE_USE_RE.match(clause)
        if use is None or start < complaint.end() or is_asked(clause) or is_question_like(sentence[:start]):
            continue
        name = use.group("en") or use.group("zh")
        left = [t for t, s, _ in find_tools(sentence[:start]) if t.canonical != name.lower()]
        words = re.findall(
            r"(?<![A-Za-z0-9_.])(?:用|using|use)\s*([A-Za-z][\w.+#/-]*)", sentence[:start], re.I
        )
        old = left[0].display if left else next((w for w in words if w.lower() != name.lower()), None)
        lang = "en" if use.group("en") else "zh"
        if lang == "zh":
            content = f"用 {name}，不要用 {old}。" if old else f"始终用 {name}。"
        else:
            content = f"Use {name}, not {old}." if old else f"Always use {name}."
        cand = Candidate(content=content, kind=Kind.PROCEDURAL, category=Category.FEEDBACK, tier=Tier.MUST,
                         confidence=0.85, source_event_ids=(), lang=lang,
                         rule=f"{lang}.rule.complaint_use")  # fmt: skip
        return [(cand, start, start + len(clause))]
    return []


# Irony: praise the speaker does not mean ("I *adore* YAML, best language ever", "对对对，全部重写，多简单啊😅",
# "yeah sure，我最爱周末加班了，超开心的"). A strong mark alone, or two weak ones, make the sentence no statement.
_IRONY_STRONG = re.compile(
    r"\*(?:love|adore|enjoy|great|amazing|fantastic|wonderful|best|totally|definitely)\w*\*|said\s+no\s+one\s+ever|"
    r"(?:^|\s)/s\s*$|[\U0001F643\U0001F612]|多(?:简单|容易|轻松|方便)(?:啊|呀|哦)|(?:真是|可)太(?:棒|好)了吧",
    re.I,
)
_IRONY_WEAK = re.compile(
    r"^\W*(?:yeah|yea|oh|ah)\s*,?\s*(?:sure|right|great|totally|of\s+course)\b|\boh\s+(?:great|joy|wonderful)\b|"
    r"\bbest\s+[\w-]+(?:\s+[\w-]+)?\s+ever\b|\bjust\s+love\s+(?:it\s+)?when\b|[\U0001F605\U0001F644]|对对对|是是是|呵呵|"
    r"超开心|太开心了|开心死了|我最(?:爱|喜欢)[^,，。!！]{1,10}了|\bjust\s+adore\b|\btruly\s+my\s+fav(?:ou)?rite\b|"
    r"简直是人生(?:乐趣|赢家)|^\W*是啊是啊|^\W*好好好",
    re.I,
)
_IRONY_CHARS = re.compile(
    r"[*/\U0001F600-\U0001F64F]|best|said|sure|right|great|joy|love|adore|truly|"
    r"对对|是是|是啊|好好|呵呵|开心|最爱|最喜欢|多",
    re.I,
)
# Said to be no part of the user's own work or setup ("纯属练手，跟工作没关系", "just a tutorial I'm following,
# nothing to do with work"): the tools it names are not the user's.
_NOT_OWN = re.compile(
    r"纯属练手|只是练手|练手用的|跟工作没关系|和工作没关系|与工作无关|跟项目没关系|不是工作上的|"
    r"\b(?:nothing\s+to\s+do\s+with\s+(?:my\s+|our\s+)?(?:work|job|project)|not\s+for\s+work|"
    r"(?:just|only|purely)\s+(?:for\s+)?(?:practice|practicing|learning|fun)\b.{0,40}\b(?:not|nothing)\b)",
    re.I,
)


def _may_disown(sentence: str) -> bool:
    """The words `_NOT_OWN` needs, by substring tests (cheaper than its alternation at every character)."""
    low = sentence.lower()
    if "work" in low or "job" in low or "project" in low or "practi" in low or "fun" in low or "learn" in low:
        return True
    if sentence.isascii():
        return False
    return "练手" in sentence or "没关系" in sentence or "无关" in sentence or "工作上" in sentence


def ironic(sentence: str, *, carried: bool = False) -> bool:
    """The sentence praises what the speaker does not mean (see `_IRONY_STRONG`); `carried`: an earlier
    sentence of the turn bore an irony mark ("oh great, another YAML error. I just adore YAML"), which counts
    as one of the two weak marks."""
    if _IRONY_CHARS.search(sentence) is None:
        return False
    weak = len(_IRONY_WEAK.findall(sentence)) + (1 if carried else 0)
    return _IRONY_STRONG.search(sentence) is not None or weak >= 2


def irony_mark(sentence: str) -> bool:
    """The sentence bears at least one irony mark, strong or weak (carried to the turn's next sentence)."""
    if _IRONY_CHARS.search(sentence) is None:
        return False
    return _IRONY_STRONG.search(sentence) is not None or _IRONY_WEAK.search(sentence) is not None


# A leading clause that states nothing of the user's: a denial of having said something ("I didn't say we're
# migrating to Go, ...", "我没说要换成 Vue，..."), or a habit whose only object is a pronoun ("I keep forgetting
# this, ...", "I always blank on it", "我老是忘了这个"). The clause is read as no statement; the rest of the
# sentence still is ("I didn't say Tuesday, I said Thursday").
_UNSAID_CLAUSE = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|well|look|no|nah|um+)\s*,?\s*){0,3}"
    r"(?:(?:i|we)\s+(?:didn'?t|did\s+not|never|have\s+never|haven'?t)\s+(?:say|said|mean|meant|claim|claimed|tell|told)\b"
    r"|i\s+(?:keep|always|often|constantly|usually|still)\s+(?:\w+\s+){1,2}?(?:it|this|that|them)(?![\w'-])"
    r"|我(?:们)?(?:并|也)?(?:没|没有|从没|从来没|从来没有)(?:说|讲)(?:过)?(?![清明完])"
    r"|我(?:老是|总是|经常|一直|每次都)[^，,。；;]{0,6}?(?:这个|那个|它)(?=[，,。；;！!\s]|$))"
    r"[^,，;；]*",
    re.I,
)
# A sentence that gives what it names to someone else ("that was my colleague's screenshot, not mine",
# "不是我，那是我同事的截图"): nothing in it is the user's.
_DISOWNED = re.compile(r"\bnot\s+(?:mine|ours)\b|不是我(?:们)?的?(?=[，,。；;！!\s]|$)", re.I)


def unsaid_prefix(sentence: str) -> int:
    """The length of the sentence's leading clause that states nothing (`_UNSAID_CLAUSE`), with the separator
    after it; the whole sentence when it disowns what it says (`_DISOWNED`); 0 when none."""
    if _DISOWNED.search(sentence):
        return len(sentence)
    found = _UNSAID_CLAUSE.match(sentence)
    if found is None:
        return 0
    end = found.end()
    while end < len(sentence) and sentence[end] in ",，;；—- ":
        end += 1
    return end


# A house convention with one current value ("indent with tabs" -> "4 spaces from now on", "提交信息用英文写" ->
# "以后用中文写"): told as standing (统一 / 以后 / now / from now on / in our ...), it is a rule in its topic's slot,
# so a later convention on the topic replaces it.
_CONVENTIONS = (
    (
        re.compile(
            r"缩进|\bindent(?:ation|ing|s)?\b|\b\d[- ]spaces?\b|\btabs?\b.{0,20}\bspaces\b|"
            r"\bspaces\b.{0,20}\btabs?\b|个空格",
            re.I,
        ),
        "project.indentation",
    ),
    (re.compile(r"提交信息|提交说明|\bcommit\s+(?:messages?|msgs?)\b", re.I), "project.commit_messages"),
)
_CONVENTION_CUE = re.compile(
    r"统一|以后|今后|一律|现在|改成|改为|改用|换成|\b(?:now|from\s+now\s+on|going\s+forward|always|in\s+(?:our|all)|"
    r"across\s+the|house\s+style|convention|voted)\b",
    re.I,
)


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|my|me)\b|我(?!们)", re.I)


def _convention_hits(sentence: str, hits: list[Hit]) -> list[Hit]:
    """A standing convention's rule in its topic's slot (see `_CONVENTIONS`); the hits as they were otherwise."""
    topic = next((slot for pattern, slot in _CONVENTIONS if pattern.search(sentence)), None)
    if (
        topic is None
        or is_asked(sentence)
        or not _CONVENTION_CUE.search(sentence)
        or _blocked(sentence, len(sentence))
    ):
        return hits
    ruled = [h for h in hits if h[0].tier is Tier.MUST and h[0].slot is None and h[0].kind is Kind.PROCEDURAL]
    if ruled:
        cand, start, end = ruled[0]
        slotted = dataclasses.replace(cand, slot=topic, value=topic_value(cand.content))
        return [(slotted, start, end) if h is ruled[0] else h for h in hits]
    if any(h[0].slot == topic or (h[0].tier is Tier.MUST and h[0].slot is None) for h in hits):
        return hits
    if _FIRST_PERSON.search(sentence):
        return hits  # "I always forget commit messages": the user's habit, not a convention for the agent
    lang = detect_lang(sentence)
    body = sentence.strip(" .!~。")
    content = zh_content(body) if lang == "zh" else sentence_case(third_person(body))
    cand = Candidate(content=content, kind=Kind.PROCEDURAL, category=Category.CONSTRAINT, tier=Tier.MUST,
                     confidence=0.8, source_event_ids=(), slot=topic, value=topic_value(content), lang=lang,
                     rule=f"{lang}.rule.convention_slot")  # fmt: skip
    return [*hits, (cand, 0, len(sentence))]


def sentence_hits(
    sentence: str, *, emphasised: frozenset[str] = frozenset(), carried_irony: bool = False
) -> list[Hit]:
    """`_sentence_hits`, where an ironic sentence (`ironic`, or praise the turn set in emphasis: "I *adore*
    YAML", `emphasised` holding "adore") keeps only its rules for the agent ("stop adding emojis 🙄"); a
    leading clause that states nothing (`unsaid_prefix`) yields nothing."""
    unsaid = unsaid_prefix(sentence)
    if unsaid:
        rest = sentence[unsaid:]
        return shift(sentence_hits(rest, emphasised=emphasised), unsaid) if rest.strip() else []
    low = sentence.lower()
    irony = ironic(sentence, carried=carried_irony) or any(word in low for word in emphasised)
    hits = _sentence_hits(sentence)
    if irony:
        return [hit for hit in hits if hit[0].tier is Tier.MUST]
    return _convention_hits(sentence, hits) if _may_name_convention(sentence) else hits


def _may_name_convention(sentence: str) -> bool:
    low = sentence.lower()
    return (
        "indent" in low
        or "space" in low
        or "tab" in low
        or "commit" in low
        or "缩进" in low
        or "空格" in low
        or ("提交" in low)
    )


# "*adore*", "*love*": praise set in emphasis, which the cleaning drops (so it is found in the raw turn)
IRONY_EMPHASIS = re.compile(
    r"(?<![\w*])\*(love|adore|enjoy|great|amazing|fantastic|wonderful|best|totally)[a-z]*\*(?![\w*])", re.I
)


def _sentence_hits(sentence: str) -> list[Hit]:
    """The sentence's hits, then those of each clause no hit accounts for: a fact stated in passing inside
    a request ("this service is on Go 1.22, can you check the build?"), a rule after a fact ("数据库用
    PostgreSQL，不要用 ORM"). A clause after a hypothetical or reported one is not the user's statement."""
    if en_hearsay(sentence) or zh_hearsay(sentence):
        return []  # "our competitor runs on Elixir apparently", "竞品好像是用 Go 写的": nothing is the user's own
    if _may_disown(sentence) and _NOT_OWN.search(sentence):
        return []  # "教程用的是 Django + Celery，纯属练手，跟工作没关系": not the user's own
    asked_for = _asked_standing_request(
        sentence
    )  # substring tests first: most sentences say no "from now on"
    asked_for = asked_for if asked_for and is_asked(sentence) else None
    if asked_for:
        rules = [
            (cand, 0, len(sentence)) for cand, _, _ in _language_hits(asked_for) if cand.tier is Tier.MUST
        ]
        if rules:
            return rules
    hits = _language_hits(sentence)
    if not hits and is_asked(sentence) and ("manager" in sentence or "boss" in sentence):
        # "can you help me word a message to my manager, Oluwaseun, about ...?": the name in passing
        hits = [hit for hit in en_team_hits(sentence) if hit[0].slot == "user.manager"]
    if not hits and ":" in sentence[:24] and not is_asked(sentence):
        # "Editor: IntelliJ", "OS: macOS": a slot's noun as a label over its value (the colon splits clauses)
        hits = noun_state_hits(sentence, lang=detect_lang(sentence))
    clauses = split_clauses(sentence) or [(0, sentence)]
    known: dict[int, bool] = {}

    def blocked_at(start: int) -> bool:  # each clause's test is made once, not once per pass
        if start not in known:
            known[start] = _blocked(sentence, start)
        return known[start]

    task_at_hand: bool | None = None
    if len(clauses) > 1 or clauses[0][0] > 0:  # one clause left after a short one ("it's 2025, use X ...")
        # The sentence's own pass found every fact rule (they search anywhere); a clause adds what a question
        # hid, and the rules that open a clause ("..., don't use X", "…，不要用 ORM").
        asked = is_asked(sentence)
        spans = [(start, end) for _, start, end in hits]
        for start, clause in clauses:
            end = start + len(clause)
            # "we deploy on bare metal, so give me systemd units": a request drawn from the fact before it is
            # a clause of its own even where the fact's statement spans the sentence
            drawn = _SO_REQUEST_RE.match(clause) is not None
            covered = [cand for cand, s, e in hits if s <= start and end <= e]
            if covered and (not drawn or any(cand.tier is Tier.MUST for cand in covered)):
                continue  # ("remember that X, so don't Y": the request already holds the rule)
            opens = drawn or asked or _CLAUSE_OPENER_RE.match(clause) or _dropped_subject(clause)
            if opens and task_at_hand is None:
                task_at_hand = _TASK_AT_HAND_RE.search(sentence) is not None
            if not opens or task_at_hand:
                continue  # "这段先用普通 for 循环写，别用 stream": the rule is for this piece of work
            if start and blocked_at(start):
                continue
            hits += shift(_language_hits(clause), start)
    if not any(cand.tier is Tier.MUST for cand, _, _ in hits):
        hits += _complaint_rule_hits(sentence, clauses)
    for start, clause in clauses:  # a change already made names the slot's new value, even in a question
        end = start + len(clause)
        slots = {cand.slot for cand, s, e in hits if cand.slot and s < end and start < e}
        if start and blocked_at(start):
            continue
        asked = is_asked(clause)
        lang = detect_lang(clause)
        changes = change_hits(clause, lang=lang, blocked=_blocked)
        if (
            not changes
            and not asked
            and sentence[end : end + 2].strip()[:1] not in ("?", "？")
            and not _THEN_NEXT_RE.match(sentence, end)
        ):  # "Buildkite now" alone; "Buildkite now, then Jenkins ..." is a list of steps
            changes = bare_state_hits(clause, lang=lang)
        made = change_match(clause) if changes and lang == "en" else None
        if made is not None and others_subject(clause[: made.start()]):
            changes = []  # "one of my friends switched to Arch": someone else's change
        named = noun_change_hits(clause, lang=lang)
        if named and not (
            changes and changes[0][0].slot in _WHERE_SLOTS and named[0][0].slot not in _PROVIDER_SLOTS
        ):
            # "migrated the warehouse to Snowflake": the slot the noun names, not the tool's usual one (a place
            # it runs on keeps its own: "moved the database to AWS" is the cloud)
            changes = named
        if (
            not changes
            and only_left(clause)
            and change_match(clause) is not None
            and not is_asked(sentence)
            and not is_question_like(clause)
        ):
            # "we moved off Vercel，现在 self-host 在 Cloudflare Pages": the new value in a later clause
            after = left_then_current(sentence, end, [t for t, _, _ in find_tools(clause) if t.slot])
            if after is not None:
                tool, until = after
                hit = tool_hit(tool, 0, until - start, rule=f"{lang}.tool.change_after", lang=lang,
                               category=Category.DECISION, confidence=0.85)  # fmt: skip
                changes = [hit]
        topic = topic_slot(clause) if changes else None
        if (
            topic in TOPICS_OVER_TOOLS
        ):  # "we moved the nightly backups from Glacier to B2": the backups' new value
            words = zh_content(clause) if lang == "zh" else sentence_case(third_person(clause.strip()))
            changes = [
                (dataclasses.replace(cand, slot=topic, value=topic_value(words), content=words), s, e)
                for cand, s, e in changes
            ]
        for cand, s, e in changes:
            if cand.slot not in slots:  # told inside a question: too unsure to replace a value on its own,
                # unless the question takes the change as given ("now that we're on React 19, can I ...?")
                unsure = asked and _PRESUPPOSED_RE.search(clause) is None
                cand = dataclasses.replace(cand, confidence=0.6) if unsure else cand
                hits.append((cand, s + start, e + start))
    if not hits:  # a lesson is one memory of the whole sentence
        hits = _generic_hits(sentence, sentence, whole=True)
    if not hits:  # a topic's value changed, the new one in a later clause: "我们组换 leader 了，现在是李娜"
        hits = _topic_change_hits(sentence)
    if not hits:
        hits = _change_statement_hits(sentence)
    if not hits:
        hits = _topic_statement_hits(sentence)
    if not hits:
        hits = _value_against_value_hits(sentence)
    if not hits and _SAID_CUE_RE.search(sentence):
        hits = _said_corrected_hits(sentence)
    if not any(cand.slot for cand, _, _ in hits) and _CORRECTION_CUE_RE.search(sentence):
        hits += _version_corrected_hits(sentence)
    if not any(cand.slot for cand, _, _ in hits) and "new" in sentence.lower():
        hits += _my_new_hits(sentence)
    spans = [(start, end) for _, start, end in hits]
    inherited = False  # after "The product is ...:" / "技术栈：" the clauses speak for the user's setup
    before = ""  # "我们部署在 k8s 上，用 ArgoCD 做 GitOps": the next clause keeps the subject
    for start, clause in clauses:  # what no rule named: a lasting statement of the clause, if it is one
        end = start + len(clause)
        opens = sentence[end : end + 2].lstrip()[:1] in (":", "：") and opens_stack(clause)
        chained = bool(before) and _CHAIN_RE.match(clause) is not None and opens_stack(before)
        before = clause
        if any(s < end and start < e for s, e in spans):
            inherited = inherited or opens
            continue
        if start and blocked_at(start):
            continue
        here = _here_hits(clause, "en") if " here" in clause.lower() else []
        if here:
            hits += shift(here, start)
            continue
        premise = _PREMISE_RE.match(
            clause
        )  # "given that our app is Flutter, should ...?": the ground is told
        said, at = (clause[premise.end() :], start + premise.end()) if premise else (clause, start)
        generic = _generic_hits(said, sentence, inherited=inherited or chained)
        hits += shift(generic or _topic_state_hits(said) or _now_state_hits(said), at)
        inherited = inherited or opens
    return _topic_absorbs_tools(_topics_named(_old_values_folded(sentence, hits))) + left_hits(sentence)


# A named thing the user has left, told as done: "we ripped out Datadog for Honeycomb", "I left Shopify last
# month", "sold the Civic", "no longer using Winston anywhere", "FastAPI is gone", "Jenkins 不用了", "弃用了 Yarn".
# Its candidate (op `end`) stores nothing: reconciliation ends the user's current memories that name the thing
# (`core.reconcile`), so an old value does not stay current beside the new one when no slot holds both.
_NAME = r"(?P<name>(?-i:[A-Z][\w.+#-]*(?:\s(?-i:[A-Z0-9])[\w.+#-]*){0,2})|[A-Za-z][\w.+#-]*)"
_LEFT_VERB_EN = (
    r"(?:no\s+longer\s+(?:use|using|on|with|(?:work|working|live|living|stay|staying)\s+(?:at|for|in|with)|"
    r"own|run|lead|manage|drive|play|drink|take)|(?:stopped|quit)\s+using|ditched|dropped|dumped|scrapped|ripped\s+out|"
    r"tore\s+out|got\s+rid\s+of|cancell?ed|sold|uninstalled|moved\s+(?:off|away\s+from)|gave\s+up(?:\s+on)?|"
    r"phased\s+out|retired|decommissioned|traded\s+in|replaced|left|quit|outgr(?:ew|own))"
)
# the old side of a change told as "from X to Y": "we switched from npm to pnpm", "migrated everything from
# Heroku over to Render", "upgraded from Java 11 to 17" (a change verb first: "a flight from Berlin to Paris" is
# no change)
_FROM_EN = re.compile(
    rf"\b(?:{CHANGE_VERBS_EN}|downgraded|swapped|shifted|rebuilt)\s+(?:[\w'-]+\s+){{0,3}}?from\s+"
    r"(?:(?:the|my|our)\s+)?"
    rf"{_NAME}(?=\s*(?:,\s*)?(?:to|onto|into|over\s+to|for)\b)",
    re.I,
)
# more names after the first, in a list: "ruff replaced black, flake8 and isort"
# A name joins the list only where an item ends after it (a comma, "and", "or", a stop, "for / with / in favour of"
# the new one): "no longer use Vim, VS Code now" names VS Code as the new editor, not a second one left. A list of
# commas alone needs two of them ("black, flake8, isort with ruff"): one comma and a name is an apposition.
_MORE_NAMES_EN = re.compile(
    r"\s*(?P<sep>,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+|\s*[/+&]\s*)(?P<name>[A-Za-z][\w.+#-]*)", re.I
)
_ITEM_END_EN = re.compile(
    r"\s*(?:$|[,.;:!?)]|(?:and|or|for|with|to|in\s+favou?r\s+of|too|as\s+well)\b|[/+&])", re.I
)
_LEFT_EN = re.compile(rf"\b{_LEFT_VERB_EN}\s+(?:(?:the|my|our|all|of)\s+){{0,3}}{_NAME}", re.I)
# what may follow the name left: the end, a stop, or a word that is not a noun it modifies ("cancelled the
# Zoom call" left a call, not Zoom; "left Slack open" left nothing)
_AFTER_LEFT_EN = re.compile(
    r"\s*(?:$|[^\w\s]|(?:for|with|to|in|on|at|last|this|a|an|the|and|but|so|because|since|after|when|as|over|"
    r"yesterday|today|anymore|completely|entirely|altogether|anywhere|everywhere|already|finally|earlier|ago|"
    r"recently|now|then|too|lol|haha|btw|months?|years?|weeks?|from|off|out|onto|into|towards?|pretty|quickly|fast|"
    # the thing itself, named by what it is: "the Jenkins box", "my Netflix subscription"
    r"box|server|servers|instance|instances|cluster|account|subscription|membership|plan|setup|license|app)\b)",
    re.I,
)
# not any more: "we don't use Jenkins anymore", "I'm not on Windows any more", "don't live in Berlin anymore"
_ANYMORE_EN = re.compile(
    r"\b(?:don'?t|do\s+not|doesn'?t|does\s+not|(?:am|'m|are|'re|is|'s)\s+not|aren'?t|isn'?t)\s+"
    r"(?:(?:use|using|on|with|run|running|need|needing|(?:work|working)\s+(?:at|for)|(?:live|living)\s+in|"
    r"(?:based|stationed)\s+in|in|at)\s+)?(?:(?:the|my|our)\s+)?"
    rf"{_NAME}(?=[^.;!?\n]{{0,24}}?\bany\s?more\b)",
    re.I,
)
_GONE_EN = re.compile(rf"(?:^|\s){_NAME}\s+(?:is|are|'s|got|has\s+been)\s+(?:now\s+)?(?:gone|dead|retired|history|"
                      r"dropped|removed|decommissioned)\b", re.I)  # fmt: skip
_LEFT_ZH = re.compile(
    r"(?:不再用|不用|弃用了?|停用了?|卸载了?|退掉了?|卖掉了?|卖了|换掉了?|干掉了?|下掉了?|去掉了?|退订了?|离开了?)\s*"
    r"(?P<name>[A-Za-z][\w.+#-]*)"
    r"|(?:把\s*)?(?P<name2>[A-Za-z][\w.+#-]*)\s*(?:已经|早就|也|又|都|全都|全)?(?:不用了|换掉了|弃用了|停用了|退役了|下线了|"
    r"卸载了|卖了|退了|退订了|删了|删掉了|干掉了|下掉了|去掉了)"
)
# a change in Chinese and what it left: "从 React 换成 Vue", "从上海搬到深圳" (after 从 any name is the old side);
# "把 RabbitMQ 换成了 Kafka", "Redis Cluster 又换成 Dragonfly 了" (a Latin name: "把前端迁到 React" moves the
# front end, it does not leave it)
_ZH_MOVE_VERB = (
    r"(?:换成|换到|换为|改成|改为|改到|改用|迁到|迁移到|迁去|切到|切换到|切成|搬到|升级到|升到|转到|替换成|替换为|挪到)"
)
_FROM_ZH = re.compile(
    rf"从\s*(?P<name>[A-Za-z][\w.+#-]*(?:\s[A-Z0-9][\w.+#-]*)?|[\u4e00-\u9fff]{{2,6}}?)\s*(?:全部|全都|都|整体)?"
    rf"{_ZH_MOVE_VERB}"
    rf"|(?:^|(?<=[\s，,；;。把]))(?P<name2>[A-Za-z][\w.+#-]*(?:\s[A-Z0-9][\w.+#-]*)?)\s*(?:已经|又|也|都|全部|全都)?"
    rf"{_ZH_MOVE_VERB}"
)
# stopped taking or doing something, a person who left: "停了二甲双胍", "戒咖啡了", "老周调走了"
_STOPPED_ZH = re.compile(
    r"(?:停了|停掉了?|戒掉了?|戒了|戒)\s*(?P<name>[A-Za-z][\w.+#-]*|[\u4e00-\u9fff]{2,6}?)(?=了|[\s，,。；;！!]|$)"
    r"|(?:^|(?<=[\s，,；;。])|(?<=我们)|(?<=我们的)|(?<=我的))(?P<name2>[\u4e00-\u9fff]{2,3}?)\s*(?:已经)?"
    r"(?:调走了|离职了|辞职了|退休了)"
)
# no longer doing or having something: "我不再负责支付了", "不再去健身房了", "不管运维了" (不 alone needs 了)
_NO_LONGER_ZH = re.compile(
    r"不再\s*(?:是|负责|管理?|带|做|用|使用|吃|喝|抽|去|住在|在|跟|参与)?\s*(?:那家|这家|那个|这个)?\s*"
    r"(?P<name>[A-Za-z][\w.+#-]*|(?:(?!了)[\u4e00-\u9fff]){2,6}?)(?=了|[\s，,。；;！!]|$)"
    r"|不(?:负责|管|带|做)\s*(?P<name2>[A-Za-z][\w.+#-]*|(?:(?!了)[\u4e00-\u9fff]){2,6}?)(?:那块|这块|这边|的事)?了"
)
_OTHER_PERSON_ZH = re.compile(ZH_OTHERS)
_NOT_A_NAME_ZH = re.compile(
    r"^(?:他|她|它|我|你|大家|别人|同事|公司|这|那|哪|什么|一下|东西|今天|明天|昨天|今年|明年|去年|现在|以后|以前|下周|上周|本周|"
    r"下个|上个|周[一二三四五六日末]|星期|月底|月初|年底)"
    r"|^[\d零〇一二三四五六七八九十百千万两半几]+(?:个|天|周|月|年|次|小时|分钟|会|点|下|阵)"
)
# someone else the subject: "my sister left Google", "he sold the Civic" (besides `others_subject`'s friends)
_OTHER_PERSON_EN = re.compile(
    r"\b(?:he|she|they|his|her|their|(?:my|our)\s+(?:sister|brother|mom|mum|dad|mother|father|wife|husband|partner|"
    r"son|daughter|kid|kids|parents?|boss|manager|cousin|uncle|aunt|client|customer|landlord|team\s*mate|teammate))\b",
    re.I,
)
# not done, or not the user's: "we might drop X", "thinking about ditching X", "didn't cancel X", "if we left X"
_NOT_DONE_EN = re.compile(
    r"\b(?:not|never|n't|might|may|could|should|would|will|going\s+to|gonna|want\s+to|plan(?:ning)?\s+to|"
    r"thinking\s+(?:about|of)|consider(?:ing)?|about\s+to|if|unless|whether|before\s+we|until)\b",
    re.I,
)
_NOT_DONE_ZH = re.compile(r"要不要|打算|准备|考虑|可能|也许|如果|是否|会不会|想|没有?(?:再)?$|别|不要")
_LEFT_CUES = (
    "no longer", "stopped", "quit", "ditched", "dropped", "dumped", "scrapped", "ripped", "tore", "got rid",
    "cancel", "sold", "uninstalled", "moved off", "moved away", "gave up", "phased", "retired", "decommissioned",
    "traded", "replaced", "left", "gone", "dead", "history", "removed", "outgr", "from", "anymore", "any more",
)  # fmt: skip
_LEFT_CUES_HAN = re.compile(
    r"不再|不负责|不管|不带|不做|不用|弃用|停用|卸载|退掉|卖|换掉|干掉|下掉|去掉|退订|离开|退役|下线|退了|停了|停掉|戒|调走|离职|"
    r"辞职|退休|" + _ZH_MOVE_VERB
)
_NOT_A_NAME = frozenset(
    "it this that them these those one all everything something anything nothing some the a an my our your "
    "job work home office project plan idea meeting call team company city place car house apartment".split()
)


def _left_name(name: str) -> bool:
    """A name, not a common noun: capitalised, with a digit, or a tool of the vocabulary ("gitflow", "jest");
    in Han script, any word that is not a pronoun, a number or a placeholder."""
    if has_han(name):
        return len(name) >= 2 and _NOT_A_NAME_ZH.search(name) is None
    if name.casefold() in _NOT_A_NAME or len(name) < 2:
        return False
    return name[0].isupper() or any(c.isdigit() for c in name) or is_tool(name)


_THEN_NEXT_RE = re.compile(r"\W*(?:and\s+)?(?:then|after\s+that|next|afterwards)\b", re.I)
_LEFT_FORMS_ZH = (_LEFT_ZH, _FROM_ZH, _STOPPED_ZH, _NO_LONGER_ZH)
_LEFT_FORMS_EN = (_LEFT_EN, _GONE_EN, _FROM_EN, _ANYMORE_EN)


def _left_names(clause: str, lang: str) -> list[tuple[re.Match[str], str]]:
    """Each match of a leaving form in the clause, with the name it left."""
    patterns = _LEFT_FORMS_ZH if lang == "zh" else _LEFT_FORMS_EN
    found: list[tuple[re.Match[str], str]] = []
    for pattern in patterns:
        for match in pattern.finditer(clause):
            name = (match.group("name") or match.groupdict().get("name2") or "").strip()
            if not name or not _left_name(name):
                continue
            if pattern is _LEFT_EN and not _AFTER_LEFT_EN.match(clause, match.end()):
                continue
            if pattern is _FROM_ZH and match.group("name2") and name.isupper() and not is_tool(name):
                continue  # "CI 迁到 Buildkite": an acronym the vocabulary does not know is the topic, not a value
            found.append((match, name))
    return found


def _listed(text: str, pos: int, first: str) -> list[str]:
    """The names listed from `pos` on after a first one left: "ruff replaced black, flake8 and isort"."""
    names = [first]
    closed = 0  # names up to the last one joined by a word or a sign: a list closed there
    while (more := _MORE_NAMES_EN.match(text, pos)) is not None and _left_name(more.group("name")):
        if more.group("sep").strip() == ",":
            if not _ITEM_END_EN.match(text, more.end()):
                break  # "Vim, VS Code now": a name of more words, not an item
        else:
            closed = len(names) + 1
        names.append(more.group("name"))
        pos = more.end()
    if len(names) - max(closed, 1) == 1:  # one name after a comma, the list not closed: an apposition
        names = names[: max(closed, 1)]
    return names


def left_hits(sentence: str) -> list[Hit]:
    """The named things the user says they have left (see `_LEFT_EN`), one `end` candidate each."""
    low = sentence.lower()
    if not any(cue in low for cue in _LEFT_CUES) and not (has_han(sentence) and _LEFT_CUES_HAN.search(sentence)):
        return []
    hits: list[Hit] = []
    seen: set[str] = set()
    for start, clause in split_clauses(sentence) or [(0, sentence)]:
        lang = detect_lang(clause)
        if is_asked(clause):
            continue
        for found, first in _left_names(clause, lang):
            prefix = clause[: found.start()]
            if (_NOT_DONE_ZH if lang == "zh" else _NOT_DONE_EN).search(prefix):
                continue
            if _blocked(sentence, start + found.start()):
                continue
            if lang == "en" and (others_subject(prefix) or _OTHER_PERSON_EN.search(prefix)):
                continue
            if lang == "zh" and _OTHER_PERSON_ZH.search(prefix):
                continue
            if found.re in (_FROM_EN, _FROM_ZH) and others_change(prefix, lang):
                continue  # "Discord switched from Go to Rust": not what the user left
            said = clause.strip()
            content = zh_content(said) if lang == "zh" else sentence_case(third_person(said))
            listed = found.re is _LEFT_EN or found.re is _FROM_EN
            for name in _listed(sentence, start + found.end(), first) if listed else [first]:
                if name.casefold() in seen:
                    continue
                seen.add(name.casefold())
                cand = Candidate(content=content, kind=Kind.SEMANTIC, category=Category.FACT, tier=Tier.WORTH,
                                 confidence=0.75, source_event_ids=(), value=name, lang=lang,
                                 op=Operation.END, rule=f"{lang}.left")  # fmt: skip
                # an empty span: the clause stays in the residual, so a new value it names ("... for
                # Honeycomb") still reaches the LLM or the residual filter
                hits.append((cand, start, start))
    return hits


def _topic_absorbs_tools(hits: list[Hit]) -> list[Hit]:
    """A statement on a topic that names tools as what it is about ("we moved the weekly backups from Wasabi to
    R2") holds those tools: a tool's own slot value taken from the same words ("uses R2") is dropped, so that
    the storage slot does not claim the backups' destination."""
    topical = [c.content.casefold() for c, _, _ in hits if c.slot in TOPICS_OVER_TOOLS]
    if not topical:
        return hits
    return [
        (cand, start, end)
        for cand, start, end in hits
        if cand.slot is None
        or cand.slot in TOPICS_OVER_TOOLS
        or not cand.value
        or not any(cand.value.split(" ")[0] in text for text in topical)
    ]
