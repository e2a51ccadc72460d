"""Updates stated in passing (issue #12). What the user has left, told as done ("we ripped out Datadog for
Honeycomb", "I left Shopify", "Jenkins 不用了"): one `end` candidate per named thing, storing nothing itself;
the near misses (plans, questions, someone else's doings, a name that only modifies a noun) yield none. A
change's start point ("starting this week") is when it lasts from, not the work at hand. Where the user lives
now with the subject dropped ("现在住闵行") is the location slot's value."""

from __future__ import annotations

import pytest

from core.extraction.candidates import Operation, Turn
from core.extraction.rules import analyze_turn, extract_turn


def _ended(text: str) -> list[str]:
    return [c.value or "" for c in extract_turn(Turn("e1", "user", text)) if c.op is Operation.END]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("we tore out Sentry last quarter, errors go to Bugsnag now", "Sentry"),
        ("I quit Duolingo, the streak anxiety wasn't worth it", "Duolingo"),
        ("finally uninstalled Slack from my phone", "Slack"),
        ("no longer on Heroku, everything's on Fly", "Heroku"),
        ("we got rid of the Jenkins box in March", "Jenkins"),
        ("sold my Kindle to a coworker", "Kindle"),
        ("we moved off Vercel over the summer", "Vercel"),
        ("Terraform Cloud is gone, we run plain terraform in CI", "Terraform Cloud"),
        ("left Atlassian in May and joined a startup", "Atlassian"),
        ("我们已经弃用了 Yarn", "Yarn"),
        ("Mongo 早就不用了，全在 Postgres 里", "Mongo"),
        ("上个月把 Notion 退订了", "Notion"),
    ],
)
def test_a_named_thing_the_user_left_gives_one_end(text: str, name: str) -> None:
    assert _ended(text) == [name]


@pytest.mark.parametrize(
    "text",
    [
        "should we drop Redux?",  # a question
        "we might ditch Heroku next year",  # a plan
        "thinking about cancelling Netflix",
        "my sister left Google last year",  # someone else
        "he sold the Civic to pay for the trip",
        "if we dropped Kafka, what would break?",
        "I left Slack open overnight",  # left where it was
        "I cancelled the Zoom call with Dana",  # the call, not Zoom
        "we never replaced Jenkins",  # not done
        "I left a comment on the PR",  # no name
        "要不要把 Redis 换掉",  # a question
        "我打算不用 Jira 了",  # a plan
    ],
)
def test_no_end_for_plans_questions_others_or_a_name_that_modifies_a_noun(text: str) -> None:
    assert _ended(text) == []


def test_an_end_leaves_its_clause_to_the_rest_of_extraction() -> None:
    """The end's span is empty: the clause that names the new value stays in the residual for the LLM."""
    analysis = analyze_turn(Turn("e1", "user", "we ripped out Datadog for Honeycomb, the bill was insane"))
    assert [c.value for c in analysis.candidates if c.op is Operation.END] == ["Datadog"]
    assert "Honeycomb" in analysis.residual


@pytest.mark.parametrize(
    "text",
    [
        "standup moved to 10:15 starting this week",
        "we moved the retro to Thursdays from this sprint on",
        "as of this month my gym days moved to Tuesdays",
    ],
)
def test_a_change_that_starts_this_week_lasts(text: str) -> None:
    assert any(c.rule and "change" in c.rule for c in extract_turn(Turn("e1", "user", text)))


def test_this_week_alone_is_a_passing_state() -> None:
    assert extract_turn(Turn("e1", "user", "moved the meeting to 3pm this week")) == []


@pytest.mark.parametrize(
    ("text", "place"),
    [("搬家了，现在住闵行，通勤变长了", "闵行"), ("目前住在望京", "望京"), ("如今定居大理了", "大理")],
)
def test_where_the_user_lives_now_with_the_subject_dropped_fills_the_location(text: str, place: str) -> None:
    found = [(c.slot, c.value) for c in extract_turn(Turn("e1", "user", text))]
    assert ("user.location", place) in found


@pytest.mark.parametrize("text", ["他现在住闵行", "现在住宿舍", "现在住酒店，下周回家"])
def test_someone_elses_place_or_a_room_is_not_the_users_location(text: str) -> None:
    assert all(c.slot != "user.location" for c in extract_turn(Turn("e1", "user", text)))
