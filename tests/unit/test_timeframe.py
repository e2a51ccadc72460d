"""Time frames read from search queries (`core.timeframe`): which span of event time a query names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.timeframe import SLACK, query_timeframe

REF = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)  # a Wednesday


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        # absolute dates, in the forms people write them (a day either side for the unknown time zone)
        ("what did we ship on March 4, 2025?", day(2025, 3, 4), day(2025, 3, 5)),
        ("the outage of 17 January 2026", day(2026, 1, 17), day(2026, 1, 18)),
        ("notes from 2024-08-30 standup", day(2024, 8, 30), day(2024, 8, 31)),
        ("which runner did CI use in Sept 2025", day(2025, 9, 1), day(2025, 10, 1)),
        ("what did I decide in 2024", day(2024, 1, 1), day(2025, 1, 1)),
        ("2025年3月定的方案", day(2025, 3, 1), day(2025, 4, 1)),
        ("2026年1月17日的事故", day(2026, 1, 17), day(2026, 1, 18)),
        ("2024年用的什么云", day(2024, 1, 1), day(2025, 1, 1)),
        # relative to the reference (the time asked, or as_of)
        ("what did I say yesterday", day(2026, 12, 1), day(2026, 12, 2)),
        ("what did we agree last week", day(2026, 11, 23), day(2026, 11, 30)),
        ("decisions from last month", day(2026, 11, 1), day(2026, 12, 1)),
        ("where did we host it last year", day(2025, 1, 1), day(2026, 1, 1)),
        ("the stack two years ago", day(2024, 1, 1), day(2025, 1, 1)),
        ("昨天说的那个报错", day(2026, 12, 1), day(2026, 12, 2)),
        ("上周定的规则", day(2026, 11, 23), day(2026, 11, 30)),
        ("上个月换的数据库", day(2026, 11, 1), day(2026, 12, 1)),
        ("去年用的什么 CI", day(2025, 1, 1), day(2026, 1, 1)),
        ("前年的架构", day(2024, 1, 1), day(2025, 1, 1)),
        ("三个月前的事故", day(2026, 9, 1), day(2026, 10, 1)),
    ],
)
def test_a_named_span_becomes_event_time_bounds_with_a_day_of_slack(query, start, end):
    frame = query_timeframe(query, REF)
    assert frame is not None, query
    assert (frame.start, frame.end) == (start - SLACK, end + SLACK)
    assert frame.phrase and frame.phrase in query


@pytest.mark.parametrize(
    ("query", "reference", "start", "end"),
    [
        # "last summer" is the latest that has ended: in December the one just past, in July the year before's
        ("the trip last summer", REF, day(2026, 6, 1), day(2026, 9, 1)),
        ("the trip last summer", datetime(2026, 7, 15, tzinfo=UTC), day(2025, 6, 1), day(2025, 9, 1)),
        # a winter spans the turn of the year
        ("what broke this winter", datetime(2026, 2, 10, tzinfo=UTC), day(2025, 12, 1), day(2026, 3, 1)),
        ("what broke last winter", REF, day(2025, 12, 1), day(2026, 3, 1)),
    ],
)
def test_seasons_are_meteorological_and_last_means_the_latest_ended(query, reference, start, end):
    frame = query_timeframe(query, reference)
    assert frame is not None and (frame.start, frame.end) == (start - SLACK, end + SLACK)


def test_days_ago_centre_on_that_day_with_a_spread():
    frame = query_timeframe("the bug from 3 days ago", REF)
    assert frame is not None and frame.start is not None and frame.end is not None
    assert frame.start <= day(2026, 11, 29) < frame.end <= day(2026, 12, 1)


def test_in_the_last_n_counts_back_from_the_reference():
    frame = query_timeframe("what changed in the last 2 weeks", REF)
    assert frame is not None
    assert frame.start == REF - timedelta(days=14) - SLACK and frame.end == REF + SLACK


@pytest.mark.parametrize(("query", "month"), [("camping in June", 6), ("6月的时候在做什么", 6), ("in Oct", 10)])
def test_a_month_without_its_year_is_that_month_of_any_year(query, month):
    frame = query_timeframe(query, REF)
    assert frame is not None and frame.month_of_year == month and frame.start is None


@pytest.mark.parametrize(
    ("query", "anchor", "relation"),
    [
        ("what database did we use before the migration?", "the migration", "before"),
        ("where did she live before the move to Berlin", "the move to Berlin", "before"),
        ("since the reorg who is my manager", "the reorg", "after"),
        ("after the outage what did we change", "the outage", "after"),
        ("搬家之前住在哪", "搬家", "before"),
        ("换工作以后用什么语言", "换工作", "after"),
    ],
)
def test_before_or_after_an_event_is_an_anchor(query, anchor, relation):
    frame = query_timeframe(query, REF)
    assert frame is not None and (frame.anchor, frame.relation) == (anchor, relation)
    assert frame.start is None and frame.end is None


@pytest.mark.parametrize(
    "query",
    [
        "which database do we use",
        "may I ask what the CI runs on",  # "may" the verb
        "upgrade to version 2023.1",  # a version, no year
        "we have used Go for two years",  # a duration, not a point in time
        "用户在哪个组",
        "以前用什么",  # no event to anchor on
        "what time is the standup, 10:30?",
    ],
)
def test_queries_without_a_time_name_none(query):
    assert query_timeframe(query, REF) is None


def test_the_reference_must_be_aware():
    with pytest.raises(ValueError):
        query_timeframe("last week", datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("query", "reference"),
    [
        ("what did we use last year", datetime(1, 6, 1, tzinfo=UTC)),
        ("what happened yesterday", datetime(1, 1, 1, 12, tzinfo=UTC)),
        ("去年用的什么", datetime(1, 6, 1, tzinfo=UTC)),
        ("the plan this year", datetime(9999, 6, 1, tzinfo=UTC)),
    ],
)
def test_a_span_past_what_a_datetime_holds_names_none(query, reference):
    # the API refuses such times (shared.contract.ApiTime); the parser still never raises on them
    assert query_timeframe(query, reference) is None
