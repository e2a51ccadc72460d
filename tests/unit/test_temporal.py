"""TTL inference (issue #16, item 6): temporary states in English and Chinese expire relative to the event
time; lasting statements, changes, starts, habits and past times get no expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.context import ContextItem, build_context
from core.temporal import infer_expiry

SAID = datetime(2026, 11, 4, 15, 0, tzinfo=UTC)  # a Wednesday afternoon
MIDNIGHT = datetime(2026, 11, 4, tzinfo=UTC)


@pytest.mark.parametrize(
    ("statement", "expires_at"),
    [
        ("The user is in Tokyo this week.", SAID + timedelta(days=7)),
        ("用户这周在出差。", SAID + timedelta(days=7)),
        ("本周我都在远程办公。", SAID + timedelta(days=7)),
        ("The user is working from home today.", SAID + timedelta(days=1)),
        ("今天下午我不在。", SAID + timedelta(days=1)),
        ("The user has a dentist appointment tomorrow.", SAID + timedelta(days=2)),
        ("我明天请假。", SAID + timedelta(days=2)),
        (
            "The deploy freeze lasts until the release on Friday.",
            MIDNIGHT + timedelta(days=3),
        ),  # end of Friday
        ("Staging is locked till Monday.", MIDNIGHT + timedelta(days=6)),
        ("到周五之前都别发版。", MIDNIGHT + timedelta(days=3)),
        ("The user is on call for the next two days.", SAID + timedelta(days=2)),
        ("接下来三天我都在上海。", SAID + timedelta(days=3)),
        ("这两天在休假。", SAID + timedelta(days=2)),
        ("The user is travelling for a couple of weeks.", SAID + timedelta(days=14)),
        ("月底前都在赶项目。", datetime(2026, 12, 1, tzinfo=UTC)),
        ("The team is in a code freeze until the end of the month.", datetime(2026, 12, 1, tzinfo=UTC)),
        ("The user is away until March 3rd.", datetime(2027, 3, 4, tzinfo=UTC)),
        ("到12月1号之前都冻结发布。", datetime(2026, 12, 2, tzinfo=UTC)),
        ("The user is on vacation next week.", SAID + timedelta(days=14)),
        ("下周在休假。", SAID + timedelta(days=14)),
        ("The user is busy this weekend.", datetime(2026, 11, 9, tzinfo=UTC)),  # through Sunday
    ],
)
def test_temporary_states_expire_relative_to_the_event_time(statement, expires_at):
    expiry = infer_expiry(statement, SAID)
    assert expiry is not None, statement
    assert expiry.expires_at == expires_at
    assert expiry.phrase and expiry.phrase in statement


@pytest.mark.parametrize(
    "statement",
    [
        "The user lives in Berlin.",
        "我们项目用 pnpm。",
        "We switched to pnpm this week.",  # a change made this week lasts
        "Our team has moved to Buildkite this month.",
        "We moved offices to King's Cross this month.",  # the move is dated, the new office lasts
        "健身改到周二和周四了。",  # a time moved to another: the new time, not "until Tuesday"
        "周会挪到周五下午了。",
        "从这周开始我们用 pnpm。",  # a start
        "Starting today, always use tabs.",
        "From now on, reply in English.",
        "以后都用中文回答。",
        "The user goes to the gym every week.",  # a habit
        "我每周五下午开周会。",
        "The user works from Monday until Friday.",  # a schedule, not a limit
        "The user was in Tokyo last week.",  # a past time
        "我上周在上海。",
        "For the time being the user prefers vim.",  # no date: not guessed
    ],
)
def test_lasting_statements_get_no_expiry(statement):
    assert infer_expiry(statement, SAID) is None


def test_the_latest_expression_wins():
    expiry = infer_expiry("The user is in Tokyo today and for the rest of the week.", SAID)
    assert expiry is not None and expiry.expires_at == SAID + timedelta(days=7)


def test_the_context_block_marks_temporary_memories():
    block = build_context(
        standing=[ContextItem(id="a", text="The user lives in Berlin.", category="profile")],
        relevant=[
            ContextItem(id="b", text="The user is in Tokyo this week.", expires_at=SAID + timedelta(days=7))
        ],
        working_memory="",
        max_tokens=500,
    )
    assert "- The user is in Tokyo this week. (temporary, until 2026-11-11)" in block.text
    assert "- The user lives in Berlin.\n" in block.text + "\n" and "Berlin. (temporary" not in block.text
