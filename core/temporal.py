"""Temporary states told with a time limit, in English and Chinese: when a statement stops being true. Pure.

`infer_expiry(text, event_time)` reads a statement ("The user is in Tokyo this week.", "用户这周在出差。",
"The team is frozen until the release on Friday.") and returns when it expires, relative to the event time
(the time the user said it, not the time it was processed), with the phrase that set it; None for a lasting
statement. Durations are counted from the event time, so the result does not depend on a time zone we do not
know: "this week" ends 7 days after it was said, "today" 1 day, "tomorrow" 2 days, "for the next three
days" 3 days; calendar ends ("this month", "月底前", "until Friday", "until March 3") end the day after the
named day at 00:00 UTC (the whole named day is kept, in any time zone within a day of UTC).

Precision first: a wrong expiry would archive a lasting fact, a missed one only leaves a stale state for the
user to correct. So nothing is inferred from a statement that reports a change or a start ("we switched to
pnpm this week", "we moved offices to King's Cross this month", "例会改到周二", "starting today", "从这周开始",
"以后都用"), a habit ("every week", "每周"), or a past time ("last week", "yesterday", "上周"); and a weekday
range ("Monday until Friday") is a schedule, not a limit. When several expressions are found, the latest
expiry wins (the least that can be lost).
"""

from __future__ import annotations

import re
from calendar import monthrange
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class Expiry:
    expires_at: datetime
    phrase: str  # the expression that set it, as written


# --- what rules a statement out ---------------------------------------------------------------------------

_EN_LASTING = re.compile(
    r"\b(?:switch(?:ed|es)?|mov(?:ed|es)\s+(?:\w+\s+){0,3}?(?:to|from|over|off|into|out)|migrat(?:ed|es)|chang(?:ed|es)|replac(?:ed|es)|"
    r"upgrad(?:ed|es)|downgrad(?:ed|es)|decid(?:ed|es)|adopt(?:ed|s)|join(?:ed|s)|hired|bought|started|"
    r"starting|from\s+now\s+on|going\s+forward|onwards?|as\s+of|since|ever\s+since|"
    r"every|each|weekly|daily|monthly|usually|always|never|"
    r"last\s+(?:week|month|year|night|time)|yesterday|ago|"
    r"(?:have|has|had)\s+(?:been\s+)?\w+ed)\b",
    re.IGNORECASE,
)
_ZH_LASTING = re.compile(
    r"换成|换到|换了|改用|改成|改为|迁到|迁移|升到|升级|降级|搬到|搬家|决定|开始|起就|以后|往后|今后|从此|"
    # a time moved to another ("例会改到周二", "周会挪到周五下午了"): the new time, not a limit
    r"改到|挪到|调到|推到|移到|改回|换回|调整到|调成|"
    r"不再|已经|每周|每天|每月|每个|每次|平时|一直|总是|上周|上个|昨天|前天|去年|之前就"
)

# --- English ---------------------------------------------------------------------------------------------

_WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS_EN = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
NUMBERS_EN = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
}
_UNIT_DAYS = {"hour": 1 / 24, "day": 1, "night": 1, "week": 7, "month": 30}

_EN_FIXED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", re.I), "day"),
    (re.compile(r"\btomorrow\b", re.I), "tomorrow"),
    (re.compile(r"\b(?:this|the)\s+weekend\b", re.I), "weekend"),
    (
        re.compile(
            r"\b(?:this\s+week|for\s+the\s+(?:rest\s+of\s+the\s+)?week|until\s+the\s+end\s+of\s+the\s+week|"
            r"(?:until|till|through)\s+(?:the\s+)?end\s+of\s+(?:the\s+)?week)\b",
            re.I,
        ),
        "week",
    ),
    (re.compile(r"\bnext\s+week\b", re.I), "next_week"),
    (
        re.compile(
            r"\b(?:this\s+month|(?:until|till|by|through)\s+(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?month|"
            r"for\s+the\s+rest\s+of\s+the\s+month)\b",
            re.I,
        ),
        "month",
    ),
    (re.compile(r"\bnext\s+month\b", re.I), "next_month"),
)
_EN_DURATION = re.compile(
    r"\b(?:for|over|during|within)\s+(?:the\s+)?(?:next\s+|coming\s+)?"
    r"(?P<n>\d{1,3}|a\s+couple\s+of|a\s+couple|couple\s+of|a\s+few|few|an?|one|two|three|four|five|six|seven|"
    r"eight|nine|ten)\s+(?P<unit>hour|day|night|week|month)s?\b",
    re.I,
)
_EN_NEXT_UNIT = re.compile(r"\b(?:for|over)\s+the\s+(?:next|coming)\s+(?P<unit>day|week|month)\b", re.I)
_EN_UNTIL = re.compile(r"\b(?:until|till|til|through|thru|up\s+to)\b(?P<rest>[^.;!?]{0,60})", re.I)
_EN_WEEKDAY = re.compile(r"\b(" + "|".join(_WEEKDAYS_EN) + r")\b", re.I)
_EN_DATE = re.compile(r"\b(" + "|".join(MONTHS_EN) + r")\s+(\d{1,2})(?:st|nd|rd|th)?\b", re.I)
_EN_RANGE = re.compile(r"\bfrom\s+(?:" + "|".join(_WEEKDAYS_EN) + r")\b", re.I)

# --- Chinese ---------------------------------------------------------------------------------------------

_ZH_DIGITS = {
    "一": 1,
    "二": 2,
    "两": 2,
    "俩": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_FIXED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"今天|今晚|今日|今儿|今早|今天晚上"), "day"),
    (re.compile(r"明天|明日|明晚|明儿"), "tomorrow"),
    (re.compile(r"后天"), "day_after_tomorrow"),
    (re.compile(r"(?:这个?|本)周末|这个?礼拜天"), "weekend"),
    (re.compile(r"(?:这|本)(?:周|个?星期|个?礼拜)(?!末)|周末前|周末之前"), "week"),
    (re.compile(r"下(?:周|个?星期|个?礼拜)"), "next_week"),
    (re.compile(r"(?:这个?|本)月|月底(?:之?前|以前)?|到月底"), "month"),
    (re.compile(r"下个?月"), "next_month"),
)
_ZH_DURATION = re.compile(
    r"(?:接下来|未来|这|近|之后的|后面)(?:的)?(?P<n>\d{1,3}|[一二两俩三四五六七八九十])"
    r"(?:个)?(?P<unit>小时|天|晚|周|星期|礼拜|月)"
)
_ZH_UNTIL_WEEKDAY = re.compile(
    r"(?:到|直到|一直到|截至)(?:下)?(?:周|星期|礼拜)(?P<d>[一二三四五六日天])|"
    r"(?:下)?(?:周|星期|礼拜)(?P<d2>[一二三四五六日天])(?:之前|以前|前)"
)
_ZH_DATE = re.compile(r"(?:到|直到|截至)?(?P<m>\d{1,2})月(?P<d>\d{1,2})(?:日|号)(?:之前|以前|前)?")
_ZH_UNIT = {
    "小时": "hour",
    "天": "day",
    "晚": "night",
    "周": "week",
    "星期": "week",
    "礼拜": "week",
    "月": "month",
}


def _midnight_after(day: datetime) -> datetime:
    """00:00 UTC of the day after `day`'s date: the whole named day is kept."""
    d = day.astimezone(UTC)
    return datetime(d.year, d.month, d.day, tzinfo=UTC) + timedelta(days=1)


def _next_weekday(now: datetime, weekday: int) -> datetime:
    ahead = (weekday - now.astimezone(UTC).weekday()) % 7 or 7
    return now + timedelta(days=ahead)


def _month_end(now: datetime, months_ahead: int = 0) -> datetime:
    d = now.astimezone(UTC)
    year, month = d.year, d.month + months_ahead
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return _midnight_after(datetime(year, month, monthrange(year, month)[1], tzinfo=UTC))


def _date_ahead(now: datetime, month: int, day: int) -> datetime | None:
    d = now.astimezone(UTC)
    for year in (d.year, d.year + 1):
        try:
            candidate = datetime(year, month, day, tzinfo=UTC)
        except ValueError:
            return None
        if candidate.date() >= d.date():
            return _midnight_after(candidate)
    return None


def _fixed(name: str, now: datetime) -> datetime:
    if name == "day":
        return now + timedelta(days=1)
    if name == "tomorrow":
        return now + timedelta(days=2)
    if name == "day_after_tomorrow":
        return now + timedelta(days=3)
    if name == "weekend":  # through Sunday
        return (
            _midnight_after(_next_weekday(now, 6))
            if now.astimezone(UTC).weekday() != 6
            else _midnight_after(now)
        )
    if name == "week":
        return now + timedelta(days=7)
    if name == "next_week":
        return now + timedelta(days=14)
    if name == "month":
        return _month_end(now)
    return _month_end(now, 1)  # next_month


def _number(word: str) -> int | None:
    word = re.sub(r"\s+", " ", word.strip().lower())
    if word.isdigit():
        return int(word)
    return NUMBERS_EN.get(word) or _ZH_DIGITS.get(word)


def infer_expiry(text: str, event_time: datetime) -> Expiry | None:
    """When the statement stops being true, from its temporal expressions and the event time; None when it
    is lasting (no expression, or a change, a start, a habit or a past time: see the module's note)."""
    if not text or _EN_LASTING.search(text) or _ZH_LASTING.search(text):
        return None
    found: list[Expiry] = []
    for pattern, name in (*_EN_FIXED, *_ZH_FIXED):
        for match in pattern.finditer(text):
            found.append(Expiry(_fixed(name, event_time), match.group(0)))
    for match in _EN_DURATION.finditer(text):
        n = _number(match.group("n"))
        if n:
            found.append(
                Expiry(
                    event_time + timedelta(days=n * _UNIT_DAYS[match.group("unit").lower()]), match.group(0)
                )
            )
    for match in _EN_NEXT_UNIT.finditer(text):
        found.append(
            Expiry(event_time + timedelta(days=_UNIT_DAYS[match.group("unit").lower()]), match.group(0))
        )
    if not _EN_RANGE.search(text):
        for match in _EN_UNTIL.finditer(text):
            rest = match.group("rest")
            if weekday := _EN_WEEKDAY.search(rest):
                day = _next_weekday(event_time, _WEEKDAYS_EN.index(weekday.group(1).lower()))
                phrase = text[match.start() : match.start("rest") + weekday.end()]
                found.append(Expiry(_midnight_after(day), phrase))
            elif date := _EN_DATE.search(rest):
                at = _date_ahead(event_time, MONTHS_EN.index(date.group(1).lower()) + 1, int(date.group(2)))
                if at:
                    found.append(Expiry(at, date.group(0)))
    for match in _ZH_DURATION.finditer(text):
        n = _number(match.group("n"))
        if n:
            found.append(
                Expiry(
                    event_time + timedelta(days=n * _UNIT_DAYS[_ZH_UNIT[match.group("unit")]]), match.group(0)
                )
            )
    for match in _ZH_UNTIL_WEEKDAY.finditer(text):
        d = match.group("d") or match.group("d2")
        found.append(Expiry(_midnight_after(_next_weekday(event_time, _ZH_WEEKDAY[d])), match.group(0)))
    for match in _ZH_DATE.finditer(text):
        if match.group(0).startswith(("到", "直到", "截至")) or match.group(0).endswith(
            ("前", "以前", "之前")
        ):
            at = _date_ahead(event_time, int(match.group("m")), int(match.group("d")))
            if at:
                found.append(Expiry(at, match.group(0)))
    if not found:
        return None
    return max(found, key=lambda e: e.expires_at)
