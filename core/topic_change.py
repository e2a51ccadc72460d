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


def topic_weight(change: str, other: str) -> float:
    """How much of a topic two statements share: their shared topic words, a time word counting half."""
    return sum(_weight(word) for word in topic_words(change) & topic_words(other))


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
