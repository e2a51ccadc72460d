"""Updates stated in passing (issue #12). What the user has left, told as done ("we ripped out Datadog for
Honeycomb", "I left Shopify", "Jenkins 不用了"): one `end` candidate per named thing, storing nothing itself;
the old side of a change ("from X to Y", "把 X 换成 Y", "replaced X, Y and Z") is one `end` per name; the
near misses (plans, questions, someone else's doings, a name that only modifies a noun) yield none. A
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


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # the old side of "from X to Y" after a change verb
        ("we migrated from CircleCI to GitHub Actions in March", ["CircleCI"]),
        ("I went from Vim to Helix and never looked back", ["Vim"]),
        ("upgraded the runners from Ubuntu 20.04 to 24.04", ["Ubuntu 20.04"]),
        # every name listed after the verb
        ("Ansible replaced Chef, Puppet and Salt on our fleet", ["Chef", "Puppet", "Salt"]),
        ("we dropped Redux and MobX for Zustand", ["Redux", "MobX"]),
        ("moved off Netlify onto Cloudflare Pages last month", ["Netlify"]),
        ("we outgrew SQLite pretty fast", ["SQLite"]),
        # Chinese: after 从 any name, after 把 or as the subject a Latin one
        ("我们从 MySQL 迁到 PostgreSQL 了", ["MySQL"]),
        ("去年从杭州搬到苏州了", ["杭州"]),
        ("把 Jira 换成了 Linear", ["Jira"]),
        ("GitLab CI 又换成 Drone 了", ["GitLab CI"]),
        ("Sentry 也下掉了，错误都进 Bugsnag", ["Sentry"]),
        # stopped taking something, a person who left
        ("医生让我停了布洛芬，改吃对乙酰氨基酚", ["布洛芬"]),
        ("戒奶茶了，喝白开水", ["奶茶"]),
        ("小王离职了，前端现在归我管", ["小王"]),
    ],
)
def test_the_old_side_of_a_change_and_every_name_listed_give_one_end_each(
    text: str, names: list[str]
) -> None:
    assert _ended(text) == names


@pytest.mark.parametrize(
    "text",
    [
        "a flight from Berlin to Paris",  # no change verb
        "要不要从 Jenkins 迁到 GitLab CI？",  # a question
        "我们考虑从 AWS 迁到 GCP",  # a plan
        "他从 Vue 换成了 React",  # someone else
        "CI 迁到 Buildkite 了",  # the topic moved, nothing named left
        "服务停了两天",  # a while, not a thing
    ],
)
def test_no_end_for_a_route_a_plan_someone_else_a_topic_or_a_while(text: str) -> None:
    assert _ended(text) == []


@pytest.mark.parametrize(
    "text",
    ["my sister switched from Android to iPhone", "他从 Vue 换成了 React", "我们考虑从 AWS 迁到 GCP"],
)
def test_someone_elses_switch_or_a_planned_one_fills_no_slot_of_the_users(text: str) -> None:
    assert all(c.slot is None for c in extract_turn(Turn("e1", "user", text)))


@pytest.mark.parametrize(
    "text",
    [
        "Slack switched from Electron to a native shell, or so it seems",  # a product named as the subject
        "apparently Basecamp went from Kubernetes to bare metal",
        "I read that Stripe moved from Mongo to Postgres",  # read about
        "看到一篇博客说 Notion 从 Postgres 迁到了 Mongo",
    ],
)
def test_a_change_of_a_named_company_or_one_read_about_is_not_the_users(text: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert [c.value for c in found if c.op is Operation.END] == []
    assert all(c.slot is None for c in found)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Switched from Yarn to Bun last week", "Yarn"),
        ("Last year we went from Angular to Svelte", "Angular"),
        (
            "our team at Initech moved from Bitbucket to GitLab",
            "Bitbucket",
        ),  # the name after "at" is no subject
        ("our docs site moved from Gatsby to Astro", "Gatsby"),
        ("跟你说，我们从 Oracle 迁到了 PostgreSQL", "Oracle"),  # the user telling, not hearsay
        ("Playwright replaced Cypress for us", "Cypress"),  # the new value as the subject of "replaced"
    ],
)
def test_the_users_own_switch_ends_the_old_value(text: str, name: str) -> None:
    assert _ended(text) == [name]


@pytest.mark.parametrize(
    "text",
    [
        "日志改用 Loki 了",  # a tool taken instead
        "发布推迟到下个月了",  # a date moved
        "预算又被砍到 3000，唉",  # an amount moved
        "我转岗做产品了",  # a role
        "换 Linux 了，之前那台太卡",  # a thing changed, the subject dropped
        "beta slipped to September",  # a date moved, the subject a bare noun
        "we now ship nightly builds to TestFlight",  # "now" before the verb
    ],
)
def test_a_change_told_in_other_verbs_is_a_memory(text: str) -> None:
    assert extract_turn(Turn("e1", "user", text)) != []


@pytest.mark.parametrize(
    "text",
    ["现在是产品经理了，天天写需求", "现在做 iOS 开发", "我现在负责增长团队", "升部门经理了，压力山大"],
)
def test_a_role_told_with_now_or_a_promotion_is_a_memory(text: str) -> None:
    assert extract_turn(Turn("e1", "user", text)) != []


@pytest.mark.parametrize("text", ["现在是晚上十点了", "现在做什么好", "现在用哪个版本比较稳"])
def test_the_time_now_or_a_question_about_now_is_no_memory(text: str) -> None:
    assert extract_turn(Turn("e1", "user", text)) == []


@pytest.mark.parametrize(
    "text", ["推到 main 分支了", "帮我把这段改用 async 写", "we now need to fix the flaky test"]
)
def test_a_push_a_task_or_a_need_is_no_change_of_the_users_situation(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.rule and "statement" in c.rule] == []


def test_an_end_leaves_its_clause_to_the_rest_of_extraction() -> None:
    """The end's span is empty: the clause that names the new value (a tool the vocabulary does not know) stays in
    the residual for the LLM."""
    analysis = analyze_turn(Turn("e1", "user", "we ripped out Datadog for Obsrvly, the bill was insane"))
    assert [c.value for c in analysis.candidates if c.op is Operation.END] == ["Datadog"]
    assert "Obsrvly" in analysis.residual


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


@pytest.mark.parametrize(
    ("text", "zone"),
    [
        ("we relocated to Boise in the spring, so Mountain time now", "Mountain"),
        ("I'm on Atlantic time since the move to Halifax", "Atlantic"),
        ("Central time from now on, I moved to Chicago", "Central"),
    ],
)
def test_a_us_zone_told_as_the_users_own_now_fills_the_timezone(text: str, zone: str) -> None:
    found = [(c.slot, c.value) for c in extract_turn(Turn("e1", "user", text)) if c.slot == "user.timezone"]
    assert found == [("user.timezone", zone)]


def test_a_zone_that_is_only_talked_about_is_no_timezone() -> None:
    assert all(
        c.slot != "user.timezone" for c in extract_turn(Turn("e1", "user", "Mountain time now is confusing"))
    )


def test_back_to_with_the_subject_dropped_reads_the_user_is_back() -> None:
    found = [
        c.content for c in extract_turn(Turn("e1", "user", "back to 3 days in the office from this month"))
    ]
    assert found == ["The user is back to 3 days in the office from this month."]


@pytest.mark.parametrize("text", ["从明天开始改用 Helix", "从下周起切到 Linear 了"])
def test_a_start_time_after_cong_is_not_a_thing_left(text: str) -> None:
    assert _ended(text) == []


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("we don't use Jenkins anymore", ["Jenkins"]),
        ("I'm not on Windows any more, switched at work too", ["Windows"]),
        ("we no longer work with Contentful", ["Contentful"]),
        ("I no longer live in Porto", ["Porto"]),
        ("我不再负责结算了", ["结算"]),
        ("不再去那家健身房了，太远", ["健身房"]),
        ("我不管运维那块了", ["运维"]),
        ("我不再是组长了", ["组长"]),
    ],
)
def test_a_state_told_as_over_ends_what_it_names(text: str, names: list[str]) -> None:
    assert _ended(text) == names


@pytest.mark.parametrize(
    "text",
    [
        "do you still use Jenkins anymore?",
        "if we don't use Jenkins anymore, what replaces the nightly job?",
        "my brother doesn't live in Porto anymore",
        "你不再负责结算了吗",
        "老板说他不再负责结算了",
    ],
)
def test_no_end_for_an_over_that_is_asked_supposed_or_someone_elses(text: str) -> None:
    assert _ended(text) == []


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # one comma and a name is an apposition, not a second thing left: the new editor
        ("I no longer use Emacs, Helix now", ["Emacs"]),
        # a list of commas alone, or one closed by "and", names each thing left
        ("we replaced TSLint, JSHint, Prettier with Biome", ["TSLint", "JSHint", "Prettier"]),
        ("tore out Logstash, Fluentd, and Vector last sprint", ["Logstash", "Fluentd", "Vector"]),
    ],
)
def test_only_the_items_of_a_list_are_left(text: str, names: list[str]) -> None:
    assert _ended(text) == names


def test_the_value_a_list_was_replaced_with_is_the_new_one() -> None:
    kept = [
        c for c in extract_turn(Turn("e1", "user", "we replaced Jest, Mocha and Ava with Vitest")) if c.slot
    ]
    assert [(c.slot, c.value) for c in kept] == [("project.test_framework", "vitest")]
    listed = [
        c for c in extract_turn(Turn("e1", "user", "we replaced Jest, Mocha, Ava with Vitest")) if c.slot
    ]
    assert [(c.slot, c.value) for c in listed] == [("project.test_framework", "vitest")]


def test_an_adverb_between_the_user_and_the_verb_keeps_the_verb_whole() -> None:
    [end] = [c for c in extract_turn(Turn("e1", "user", "I no longer use Heroku")) if c.op is Operation.END]
    assert end.content == "The user no longer uses Heroku."
    [fact] = extract_turn(Turn("e1", "user", "I personally do the billing in Stripe"))
    assert "personally does" in fact.content, fact.content


@pytest.mark.parametrize(
    ("text", "team"),
    [
        ("I took over the Platform team from Ravi in June", "platform team"),
        ("I inherited the Data team", "data team"),
    ],
)
def test_a_team_taken_over_is_the_team_the_user_leads(text: str, team: str) -> None:
    [cand] = [c for c in extract_turn(Turn("e1", "user", text)) if c.slot == "user.team"]
    assert cand.value == team and cand.content.startswith("The user leads the ")


@pytest.mark.parametrize(
    "text", ["if I took over the Platform team, what changes?", "my manager took over the Data team"]
)
def test_no_team_for_a_take_over_supposed_or_someone_elses(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.slot == "user.team"] == []


def test_a_tool_switched_to_in_chinese_is_no_employer_cut_from_its_name() -> None:
    cands = extract_turn(Turn("e1", "user", "编辑器换到 IntelliJ IDEA 了"))
    assert [c.slot for c in cands if c.slot] == ["user.editor"]
    [employer] = [c for c in extract_turn(Turn("e1", "user", "入职了 Shopee")) if c.slot == "user.employer"]
    assert employer.value == "Shopee"


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("Buildkite now, Jenkins kept falling over", "project.ci", "buildkite"),
        ("and now it's on Fly.io, the Heroku bill got silly", "project.hosting", "fly.io"),
        ("it's all Kotlin these days", "project.language", "kotlin"),
        ("Postgres 17 everywhere now", "project.database", "postgresql 17"),
    ],
)
def test_a_tool_told_as_the_state_now_fills_its_slot(text: str, slot: str, value: str) -> None:
    assert [(c.slot, c.value) for c in extract_turn(Turn("e1", "user", text)) if c.slot] == [(slot, value)]


@pytest.mark.parametrize(
    "text",
    [
        "now in Kotlin",  # the code asked for next
        "Kotlin now",
        "Buildkite now?",
        "render now",  # an order
        "Go now",
        "Buildkite now, then Jenkins for the old pipeline, and compare the two",
    ],
)
def test_no_state_for_a_request_a_question_or_an_everyday_word(text: str) -> None:
    assert [c.slot for c in extract_turn(Turn("e1", "user", text)) if c.slot] == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("sorry, I wrote Go 1.21 before but it's actually 1.23", "go 1.23"),
        ("不是 Java 11 哦，线上其实是 21", "java 21"),
        ("the DB isn't on MySQL 5.7 anymore, it's 8.4 now", "mysql 8.4"),
    ],
)
def test_a_corrected_version_fills_the_tools_slot(text: str, value: str) -> None:
    assert [c.value for c in extract_turn(Turn("e1", "user", text)) if c.slot] == [value]


@pytest.mark.parametrize(
    "text",
    [
        "is it Python 3.9 or 3.11?",  # asked
        "I said Node 18 but we have 20 people on the team",  # another kind of number
        "not sure if Go 1.22 is out yet, it's 9am here",
    ],
)
def test_no_version_from_a_question_or_another_number(text: str) -> None:
    values = [c.value for c in extract_turn(Turn("e1", "user", text)) if c.slot]
    assert all(v is None or not v.endswith(("3.11", "20", "9")) for v in values), values
