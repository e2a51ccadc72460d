"""When a search query is about, in English and Chinese: the time frame a query names. Pure.

`query_timeframe(query, reference)` reads expressions of time in a query ("what did I decide last month",
"in July 2023", "on 13 October, 2023", "two years ago", "去年", "上个月", "2023年5月", "6月的时候") and returns
the span of event time it names, with the phrase that set it; None when the query names no time. The
search uses it as a signal, not a filter: the turns and memories of that span are fetched as an extra
candidate list and fused with the others (`store.search`), so a wrong reading costs a little ranking, never
a result.

Relative expressions count from `reference`: the time the query is asked (or the `as_of` it is asked
for). Calendar spans are in UTC, widened by a day on each side, so a day named in any time zone within a
day of UTC is covered. A month named without a year ("in June", "6月") is a month of any year
(`month_of_year`), since the year is not known. "Before X" / "after X" with X an event ("before the
move", "搬家之前") is an anchor: `anchor` is X and `relation` says which side; the search finds X's time
itself.

Not read as time: durations that are not a point in time ("for two years", "两年了"), clock times, and
numbers that are no dates (versions, prices).
"""

from __future__ import annotations

import re
from calendar import monthrange
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from core.temporal import MONTHS_EN, NUMBERS_EN

SLACK = timedelta(days=1)  # calendar spans are widened by this on each side (unknown time zone)


@dataclass(frozen=True)
class TimeFrame:
    phrase: str  # the expression, as written
    start: datetime | None = None  # inclusive
    end: datetime | None = None  # exclusive
    month_of_year: int | None = None  # 1-12: a month named without its year
    anchor: str | None = None  # "before/after <anchor>": an event whose time bounds the frame
    relation: str | None = None  # "before" | "after" (with anchor)


# month names and their usual abbreviations, and number words (shared with core.temporal)
_MONTHS = {name: i for i, name in enumerate(MONTHS_EN, 1)} | {
    name[:3]: i for i, name in enumerate(MONTHS_EN, 1)
} | {"sept": 9}
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_NUMBER_WORDS = NUMBERS_EN | {"eleven": 11, "twelve": 12, "several": 3}
_ZH_NUMBERS = dict(zip("一两二俩三四五六七八九十", (1, 2, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10), strict=True))

# --- English ---------------------------------------------------------------------------------------------

_EN_ISO = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)\b")
_EN_MONTH_DAY_YEAR = re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + r"\b", re.I)
_EN_DAY_MONTH_YEAR = re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + r"\b", re.I)
_EN_MONTH_YEAR = re.compile(r"\b" + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + r"\b", re.I)
_EN_MONTH_ALONE = re.compile(
    r"\b(?:in|during|early|mid|late|back\s+in|last|this)\s+(?:-\s*)?" + _MONTH + r"\b(?!\s+[0-3]?\d\b)", re.I
)
_EN_YEAR = re.compile(r"\b(?:in|during|of|back\s+in|around)\s+" + _YEAR + r"\b(?![.\d])", re.I)
_EN_RELATIVE = re.compile(
    r"\b(?P<which>last|this|past|previous|current)\s+(?P<unit>week|weekend|month|year|summer|winter|spring|fall|"
    r"autumn)\b",
    re.I,
)
_EN_AGO = re.compile(
    r"\b(?P<n>\d{1,2}|a couple of|a few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
    r"twelve)\s+(?P<unit>day|week|month|year)s?\s+ago\b",
    re.I,
)
_EN_IN_LAST = re.compile(
    r"\b(?:in|over|during|within)\s+the\s+(?:last|past)\s+(?P<n>\d{1,2}|few|couple\s+of|two|three|four|five|"
    r"six|seven|eight|nine|ten|twelve)?\s*(?P<unit>day|week|month|year)s?\b",
    re.I,
)
_EN_DAYS = re.compile(r"\b(?P<w>yesterday|today|tonight|this\s+morning|the\s+day\s+before\s+yesterday)\b", re.I)
_EN_ANCHOR = re.compile(
    r"\b(?P<rel>before|after|since|prior\s+to|following)\s+(?P<anchor>(?:the|my|our|his|her|their|your|that|"
    r"this)\s+[^,.;?!]{2,60})",
    re.I,
)

# where an anchor's noun phrase ends: a clause or question word, a verb of the question, a subject; its
# prepositional phrases stay ("the move to Berlin", "the outage in payments")
_EN_ANCHOR_END = re.compile(
    r"\s+(?:what|where|when|who|whom|which|why|how|did|do|does|was|were|is|are|has|have|had|will|would|and|but|"
    r"so|that|we|i|you|he|she|they)\b",
    re.I,
)

# --- Chinese ---------------------------------------------------------------------------------------------

_ZH_FULL = re.compile(r"(?P<year>(?:19|20)\d\d)\s*年\s*(?P<m>[01]?\d)\s*月(?:\s*(?P<d>[0-3]?\d)\s*[日号])?")
_ZH_YEAR = re.compile(r"(?P<year>(?:19|20)\d\d)\s*年(?!\s*[01]?\d\s*月)")
_ZH_MONTH_DAY = re.compile(r"(?<![\d年])(?P<m>[01]?\d)\s*月\s*(?:(?P<d>[0-3]?\d)\s*[日号]|份|的时候|那会|那时)")
_ZH_RELATIVE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"大前天"), "day-3"),
    (re.compile(r"前天"), "day-2"),
    (re.compile(r"昨天|昨晚|昨日"), "day-1"),
    (re.compile(r"今天|今日|今早|今晚"), "day-0"),
    (re.compile(r"上上(?:周|个?星期|个?礼拜)"), "week-2"),
    (re.compile(r"上(?:周|个?星期|个?礼拜)"), "week-1"),
    (re.compile(r"(?:这|本)(?:周|个?星期|个?礼拜)"), "week-0"),
    (re.compile(r"上上个?月"), "month-2"),
    (re.compile(r"上个?月"), "month-1"),
    (re.compile(r"(?:这个?|本)月"), "month-0"),
    (re.compile(r"大前年"), "year-3"),
    (re.compile(r"前年"), "year-2"),
    (re.compile(r"去年|上一年"), "year-1"),
    (re.compile(r"今年|本年"), "year-0"),
)
_ZH_AGO = re.compile(
    r"(?P<n>\d{1,2}|[一两二俩三四五六七八九十])\s*(?:个)?(?P<unit>天|周|星期|礼拜|月|年)(?:以前|之前|前)"
)
_ZH_ANCHOR = re.compile(r"(?P<anchor>[\u4e00-\u9fffA-Za-z0-9]{2,12}?)(?P<rel>之前|以前|之后|以后)")
_ZH_NOT_ANCHOR = re.compile(r"^(?:很久|不久|好久|以|之|[天周月年]|几[天周月年])")


def _day_span(day: datetime) -> tuple[datetime, datetime]:
    return day - SLACK, day + timedelta(days=1) + SLACK


def _month_span(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = start + timedelta(days=monthrange(year, month)[1])
    return start - SLACK, end + SLACK


def _year_span(year: int) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=UTC) - SLACK, datetime(year + 1, 1, 1, tzinfo=UTC) + SLACK


def _date(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _midnight(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _shift_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _number(word: str) -> int | None:
    word = " ".join(word.lower().split())
    if word.isdigit():
        return int(word)
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    return _ZH_NUMBERS.get(word)


def _unit_span(unit: str, back: int, reference: datetime) -> tuple[datetime, datetime]:
    """The calendar unit `back` units before the one holding `reference` (0: the current one)."""
    today = _midnight(reference)
    if unit == "day":
        day = today - timedelta(days=back)
        return _day_span(day)
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=back)
        return monday - SLACK, monday + timedelta(days=7) + SLACK
    if unit == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7) - timedelta(weeks=back)
        return saturday - SLACK, saturday + timedelta(days=2) + SLACK
    if unit == "month":
        year, month = _shift_months(reference.year, reference.month, -back)
        return _month_span(year, month)
    return _year_span(reference.year - back)


def _ago_span(unit: str, n: int, reference: datetime) -> tuple[datetime, datetime]:
    """"n days / weeks ago": that day, widened by a quarter of the distance (at least a day) each side, as
    such counts are loose; "n months / years ago": that calendar month or year."""
    if unit in ("day", "week"):
        days = n * (7 if unit == "week" else 1)
        centre = _midnight(reference) - timedelta(days=days)
        spread = timedelta(days=max(1, days // 4))
        return centre - spread, centre + timedelta(days=1) + spread
    return _unit_span(unit, n, reference)


_SEASONS = {"spring": (3, 3), "summer": (6, 3), "fall": (9, 3), "autumn": (9, 3), "winter": (12, 3)}


def _season_span(season: str, back: int, reference: datetime) -> tuple[datetime, datetime]:
    """Northern-hemisphere meteorological seasons: "last summer" is the latest one that has ended (or the
    one before, `back`), "this summer" the one of the reference's year."""
    first, length = _SEASONS[season]
    year = reference.year - (1 if first == 12 and reference.month < 12 else 0)
    start = datetime(year, first, 1, tzinfo=UTC)
    if back:
        ends = datetime(*_shift_months(year, first, length), 1, tzinfo=UTC)
        if ends > reference:
            year -= 1
        year -= back - 1
        start = datetime(year, first, 1, tzinfo=UTC)
    end = datetime(*_shift_months(start.year, first, length), 1, tzinfo=UTC)
    return start - SLACK, end + SLACK


def _english(query: str, reference: datetime) -> TimeFrame | None:
    for pattern in (_EN_MONTH_DAY_YEAR, _EN_DAY_MONTH_YEAR):
        m = pattern.search(query)
        if m:
            day = _date(int(m["year"]), _MONTHS[m["mon"].lower()], int(m["day"]))
            if day is not None:
                return TimeFrame(m.group(0), *_day_span(day))
    m = _EN_ISO.search(query)
    if m:
        day = _date(int(m["year"]), int(m["m"]), int(m["d"]))
        if day is not None:
            return TimeFrame(m.group(0), *_day_span(day))
    m = _EN_MONTH_YEAR.search(query)
    if m:
        return TimeFrame(m.group(0), *_month_span(int(m["year"]), _MONTHS[m["mon"].lower()]))
    m = _EN_DAYS.search(query)
    if m:
        word = " ".join(m["w"].lower().split())
        back = {"yesterday": 1, "the day before yesterday": 2}.get(word, 0)
        return TimeFrame(m.group(0), *_unit_span("day", back, reference))
    m = _EN_AGO.search(query)
    if m:
        n = _number(m["n"])
        unit = m["unit"].lower()
        if n is not None:
            return TimeFrame(m.group(0), *_ago_span(unit, n, reference))
    m = _EN_IN_LAST.search(query)
    if m:
        n = _number(m["n"]) if m["n"] else 1
        unit = m["unit"].lower()
        days = {"day": 1, "week": 7, "month": 31, "year": 366}[unit] * (n or 1)
        return TimeFrame(m.group(0), reference - timedelta(days=days) - SLACK, reference + SLACK)
    m = _EN_RELATIVE.search(query)
    if m:
        back = 0 if m["which"].lower() in ("this", "current") else 1
        unit = m["unit"].lower()
        if unit in _SEASONS:
            return TimeFrame(m.group(0), *_season_span(unit, back, reference))
        return TimeFrame(m.group(0), *_unit_span(unit, back, reference))
    m = _EN_YEAR.search(query)
    if m:
        return TimeFrame(m.group(0), *_year_span(int(m["year"])))
    m = _EN_MONTH_ALONE.search(query)
    if m and not (m["mon"].lower() == "may" and not m.group(0).lower().startswith(("in", "during"))):
        return TimeFrame(m.group(0), month_of_year=_MONTHS[m["mon"].lower()])
    m = _EN_ANCHOR.search(query)
    if m:
        relation = "before" if m["rel"].lower() in ("before", "prior to") else "after"
        anchor = _EN_ANCHOR_END.split(m["anchor"], maxsplit=1)[0].strip()
        if len(anchor.split()) >= 2:  # a determiner and at least one word
            return TimeFrame(f"{m['rel']} {anchor}", anchor=anchor, relation=relation)
    return None


def _chinese(query: str, reference: datetime) -> TimeFrame | None:
    m = _ZH_FULL.search(query)
    if m:
        year, month = int(m["year"]), int(m["m"])
        if 1 <= month <= 12:
            if m["d"]:
                day = _date(year, month, int(m["d"]))
                if day is not None:
                    return TimeFrame(m.group(0), *_day_span(day))
            return TimeFrame(m.group(0), *_month_span(year, month))
    m = _ZH_YEAR.search(query)
    if m:
        return TimeFrame(m.group(0), *_year_span(int(m["year"])))
    for pattern, code in _ZH_RELATIVE:
        m = pattern.search(query)
        if m:
            unit, back = code.split("-")
            return TimeFrame(m.group(0), *_unit_span(unit, int(back), reference))
    m = _ZH_AGO.search(query)
    if m:
        n = _number(m["n"])
        unit = {"天": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month", "年": "year"}[m["unit"]]
        if n is not None:
            return TimeFrame(m.group(0), *_ago_span(unit, n, reference))
    m = _ZH_MONTH_DAY.search(query)
    if m and 1 <= int(m["m"]) <= 12:
        return TimeFrame(m.group(0), month_of_year=int(m["m"]))
    m = _ZH_ANCHOR.search(query)
    if m and not _ZH_NOT_ANCHOR.match(m["anchor"]):
        anchor = re.sub(r"^(?:在|是|从|自从|自|打|我|我们|他|她|用户)+", "", m["anchor"])
        if len(anchor) >= 2:
            relation = "before" if m["rel"] in ("之前", "以前") else "after"
            return TimeFrame(m.group(0), anchor=anchor, relation=relation)
    return None


def query_timeframe(query: str, reference: datetime) -> TimeFrame | None:
    """The time frame `query` names, counted from `reference` (aware); None when it names none. When several
    expressions are present, the most specific kind wins: a date, then a month, a relative span, a year, a
    month of any year, and an event anchor last."""
    if reference.tzinfo is None:
        raise ValueError("reference must be timezone-aware")
    try:
        if re.search(r"[\u4e00-\u9fff]", query):
            found = _chinese(query, reference)
            if found is not None:
                return found
        return _english(query, reference)
    except (ValueError, OverflowError):  # a span past what a datetime holds (year 1 or 9999): none to search
        return None
