"""A change of the user's situation that no slot names, and the memories it replaces (pure).

The rules put a change of a known attribute in its slot ("we moved CI to Buildkite" -> `project.ci`), and the
slot keeps one current value. Many changes name no slot: "moved standup to 10:15", "my dose went up to 100mg",
"billing is on 3.12 now", "闹钟改到六点了". The rule extractor marks those statements (rules
`<lang>.statement.change`, `<lang>.statement.now`, and the corrections `<lang>.correction.statement` and
`.against`); here such a statement is matched with the user's earlier memories on the same topic: the content
words they share once the words every change statement has are set aside (who: "the user", "our team"; the
change itself: "moved", "now", "换成"; values: anything with a digit). "The user's alarm is 5:45 now" and "Moved
the user's alarm to 6:00" share "alarm"; "The user's team switched to 1-week sprints" and "The user is on the
Growth team" share nothing once "team" is set aside.

Time words ("day", "week", "morning", "每天", "下午") are half a topic word: "works four days a week" and "back to
five days a week" share two of them, "standup every week" and "gym twice a week" only one.

A value of one specific kind counts as one shared word (`value_kinds`): a version ("upgraded the cluster to
1.29" and "Kubernetes 1.27"), a cloud region, a dose in mg, a rate limit, a team's size in people. Kinds a user
holds many facts of (money, sizes, durations, percentages) and bare numbers do not.

`reconcile.decide` uses `shares_topic` for an unslotted change statement (it supersedes the older memory it
shares the most of its topic with, and is itself history when a newer one is current), and `tells_change`
for the reverse order: an older plain statement that arrives after the change became current is history,
not a second current value.
"""

from __future__ import annotations

import re

from core.keywords import tokens

# the rules whose candidates are changes in no slot (see core.extraction.rules.passes): a change already made,
# a current state told with "now", and a correction ("it's 5 brokers now, not 3", "是周四，不是周三"), which
# replaces what was said before by definition
CHANGE_RULE_SUFFIXES = (".statement.change", ".statement.now", ".correction.statement", ".correction.against")


def is_change_rule(rule: str | None) -> bool:
    """The candidate came from a rule that reads a change of the user's situation in no slot."""
    return bool(rule) and any(part.endswith(CHANGE_RULE_SUFFIXES) for part in (rule or "").split("+"))


# Words that say who changed something, that it changed and when, in the form `core.keywords.tokens` gives
# them (lower case, lightly stemmed); they never make two statements about one topic.
_GENERIC_EN = (
    "user users team teams project projects company everyone everything all whole new now since then currently "
    "anymore already finally just again last this next got get gets getting moved move moves moving switched "
    "switch switching changed change changes changing migrated migrate replaced replace upgraded upgrade went go "
    "goes going gone up down back over off instead started start starting using use uses used done doing "
    "made make bumped bump pushed push shifted shift cut raised lowered increased reduced dropped been being "
    "not no more less also too very really some any each other one two three four five six seven eight nine "
    "ten first second about like set per"
)
_GENERIC = frozenset(tokens(_GENERIC_EN))
# In Chinese the words are cut out before the text is read as character pairs, so that no pair straddles one
# ("用户现在用" would give "户现", "现用", shared by any two statements of the user's)
_GENERIC_HAN = re.compile(
    r"用户|我们|我|团队|项目|公司|大家|现在|目前|已经|早就|终于|正式|开始|以后|之后|不再|最近|一直|全部|全都|"
    r"换成|换到|换了|改成|改为|改到|改回|改用|升到|升级到|升级|升了|调到|搬到|迁到|加到|降到|减到|提到|涨到|转到|"
    r"使用|用的是|在用|就是|都是|还是|[的了是在用都也就把被给跟和与又再还很太要能让得着过呢吗吧啊嘛呀个些这那]"
)
_TIME_EN = (
    "day days week weeks month months year years morning mornings evening evenings night nights weekend weekends "
    "hour hours minute minutes time times daily weekly monthly"
)
_TIME = frozenset(tokens(_TIME_EN)) | frozenset(
    "每天 每周 每月 每年 天天 上午 下午 中午 晚上 早上 早晨 凌晨 半夜 夜里 周末 平时 今天 明天 昨天 今年 去年 "
    "明年 本周 上周 下周 本月 上月 下月 月底 月初 年底 时候 时间 小时 分钟".split()
)
_HAS_DIGIT = re.compile(r"[\d零〇一二三四五六七八九十百千万两半]")  # a value: a number, in either script


def topic_words(text: str) -> set[str]:
    """The content words of a statement that can name its topic."""
    text = _GENERIC_HAN.sub(" ", text)
    return {
        word
        for word in tokens(text)
        if word not in _GENERIC and not _HAS_DIGIT.search(word) and (len(word) > 1 or word.isascii())
    }


def _weight(word: str) -> float:
    return 0.5 if word in _TIME else 1.0


# Typed values: two statements that each give a value of one specific kind ("1.27" and "1.29"; "50mg" and
# "100mg"; "us-east-1" and "eu-central-1"; "4 people" and "9 people") are about one topic as much as a shared word
# makes them: a value of such a kind answers one question about the user's situation. Kinds a user has many
# facts of are left out (money, percentages, sizes, durations: "rent $1,400 a month" is no update of a budget of
# "$500/mo"), and so is a bare number ("we're 6 now", "on 21"): it could be anything.
_NUMBER = r"\d+(?:[.,]\d+)*"
_VERSION_RE = re.compile(
    r"(?<![\w.$€£¥])v?\d{1,3}\.\d{1,3}(?:\.\d{1,4})?"
    r"(?![\w.]*\d|\s*(?:%|元|块|美元|万|倍|[kmgt]?b\b|[kmgt]ib\b|kg|km|mg|ms|mi\b|lbs?\b|[hsx]\b|hours?|hrs?|min|"
    r"years?|yrs?|months?|weeks?|days?|times|stars?|points?|小时|天|年|个月|公里|公斤|斤|号|日|月|分|星))",
    re.I,
)
_UNIT_RE = {
    name: re.compile(rf"(?<![\w.]){_NUMBER}\s*(?:{alternatives})(?![a-z])", re.I)
    for name, alternatives in {
        "mg": "mg|mcg|毫克",  # a dose
        "rate": r"rps|qps|tps|req/s|requests?\s+(?:per|a)\s+second",  # a rate limit
        "people": "people|persons|engineers|devs|developers|members|headcount|人|个人|名",  # a team's size
    }.items()
}
_REGION_RE = re.compile(
    r"\b(?:us|eu|ap|sa|ca|me|af|il|cn)-(?:east|west|north|south|central|northeast|southeast|northwest|southwest)-\d\b",
    re.I,
)


def value_kinds(text: str) -> set[str]:
    """The kinds of typed value a statement gives: "version", "region", "unit:<unit>" (see above)."""
    kinds = {"version"} if _VERSION_RE.search(text) else set()
    if _REGION_RE.search(text):
        kinds.add("region")
    kinds.update(f"unit:{name}" for name, pattern in _UNIT_RE.items() if pattern.search(text))
    return kinds


def topic_weight(change: str, other: str) -> float:
    """How much of a topic two statements share: their shared topic words, a time word counting half, and one
    more when they give a value of one kind (`value_kinds`)."""
    shared = sum(_weight(word) for word in topic_words(change) & topic_words(other))
    return shared + (1.0 if value_kinds(change) & value_kinds(other) else 0.0)


def shares_topic(change: str, other: str) -> bool:
    """`change` and `other` are about one topic: they share a topic word (two time words count as one)."""
    return topic_weight(change, other) >= 1.0


# The words a memory made from a change statement keeps ("moved", "switched", "now", "since", "现在", "换成"):
# an existing memory that has one told a change, so an older plain statement on its topic is its past.
_CHANGE_CUE = re.compile(
    r"\b(?:now|since|anymore|no\s+longer|switched|moved|migrated|changed|replaced|upgraded|relocated|"
    r"(?:went|gone|going)\s+(?:up|down)|bumped|pushed|shifted|raised|lowered|increased|reduced|dropped|cut|"
    r"back\s+to|started|joined)\b"
    r"|现在|目前|已经|不再|换成|改成|改为|改到|改用|升到|升级到|调到|搬到|迁到|换到|加到|降到|减到|提到|涨到|转到",
    re.I,
)


def tells_change(content: str) -> bool:
    """The memory's words tell a change or a current state ("... now", "moved ... to", "现在 ...")."""
    return _CHANGE_CUE.search(content) is not None
