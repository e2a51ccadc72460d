"""The rules by grammatical class (issue #12): facts in passing inside requests, rules after facts, changes
already made, coverage-based routing, and what must stay out (hypotheticals, someone else's facts, moods).

The examples are the issue's own; the corpus in tests/data/extraction_quality/ measures the general case
(bench/extraction_quality.py).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.extraction.candidates import Category, Kind, Tier, Turn
from core.extraction.gate import GateDecision, gate_turn
from core.extraction.rules import extract_turn, split_clauses
from core.reconcile import UNSURE_CONFIDENCE
from store.window import PendingEvent
from worker.services.window import gate_summary, plan_window


def _found(text: str) -> list[tuple[str | None, str | None, str, str]]:
    return [(c.slot, c.value, c.tier.value, c.content) for c in extract_turn(Turn("e1", "user", text))]


def test_the_seed_example_yields_the_fact_and_the_rule_from_rules_alone() -> None:
    result = gate_turn(Turn("e1", "user", "数据库用 PostgreSQL，不要用 ORM"))
    assert result.decision is GateDecision.RULES_ONLY and result.covered == 1.0
    by_slot = {c.slot: c for c in result.candidates}
    assert by_slot["project.database"].value == "postgresql"
    rule = by_slot[None]
    assert rule.tier is Tier.MUST and rule.kind is Kind.PROCEDURAL and "ORM" in rule.content


def test_a_turn_the_rules_cover_in_part_goes_to_the_llm_and_says_how_much_was_covered() -> None:
    text = "We use pnpm, and the quarterly review with finance went sideways because of the budget numbers"
    result = gate_turn(Turn("e1", "user", text))
    assert result.decision is GateDecision.NEEDS_LLM and result.reason == "partial_cover"
    assert 0.0 < result.covered < 1.0 and "finance" in result.residual
    assert [c.value for c in result.candidates] == ["pnpm"]


def test_the_window_plan_reports_the_gate_for_the_log_line() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    texts = [
        "数据库用 PostgreSQL，不要用 ORM",
        "We use pnpm, and the review with finance went sideways",
        "thanks!",
    ]
    events = [
        PendingEvent(f"e{i}", "turn", "user", text, None, now, "pending", None)
        for i, text in enumerate(texts)
    ]
    summary = gate_summary(plan_window(events, llm_available=True))
    assert summary["gate"] == {"must_candidate": 1, "partial_cover": 1, "thanks": 1}
    assert summary["partial_cover"] == 1 and 0.5 < summary["rule_coverage"] < 1.0


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("this service is on Go 1.22, can you check why the build fails?", "project.language", "go 1.22"),
        ("我们这边用的是 Vue 2，帮我看下这个组件", "project.framework", "vue 2"),
        ("fyi we've since moved CI to Buildkite", "project.ci", "buildkite"),
        ("我现在调到数据组了", "user.team", "数据组"),
        ("CI 改用 GitHub Actions 了, the Jenkins box is gone", "project.ci", "github actions"),
        ("we replaced Flask with FastAPI in the api service last month", "project.framework", "fastapi"),
        ("We no longer use Heroku; everything deploys to Railway now.", "project.hosting", "railway"),
        ("升到 Node 22 以后，这个 require 一个 ESM 包居然能用了？", "project.runtime", "node.js 22"),
    ],
)
def test_a_value_stated_in_passing_or_as_a_change_fills_its_slot(text: str, slot: str, value: str) -> None:
    assert (slot, value) in [(s, v) for s, v, _, _ in _found(text)]


def test_a_change_told_inside_a_question_is_too_unsure_to_replace_a_value_alone() -> None:
    found = extract_turn(Turn("e1", "user", "so we migrated to TiDB last month right?"))
    change = next(c for c in found if c.slot == "project.database")
    assert change.value == "tidb" and change.confidence < UNSURE_CONFIDENCE


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("jQuery is banned in this codebase.", ("jquery",)),
        ("We don't do force-pushes to main here. Ever.", ("force-pushes",)),
        ("lodash 别用了，我们这边不引这个包", ("lodash",)),
        ("TS 里不许写 any！！", ("any",)),
        ("Ugh, you keep writing `var` in these snippets.", ("var",)),
        ("I'd rather you didn't use class components in the React code", ("class components",)),
    ],
)
def test_prohibitions_in_many_shapes_are_must_rules(text: str, words: tuple[str, ...]) -> None:
    rules = [c for c in extract_turn(Turn("e1", "user", text)) if c.kind is Kind.PROCEDURAL]
    assert rules and all(c.tier is Tier.MUST for c in rules)
    assert all(any(w in c.content.casefold() for c in rules) for w in words), rules


def test_decisions_lessons_and_policies_are_kept_in_the_users_words() -> None:
    found = {c.category: c.content for c in extract_turn(Turn("e1", "user", (
        "we picked SQLite for the desktop app because it's one file. "
        "Lesson learned the hard way: running migrations during peak hours locked the orders table. "
        "Backups: nightly pg_dump to S3, kept 30 days."
    )))}  # fmt: skip
    assert "SQLite" in found[Category.DECISION] and "because" in found[Category.DECISION]
    assert "migrations during peak hours" in found[Category.LESSON]
    assert "pg_dump to S3" in found[Category.FACT]


@pytest.mark.parametrize(
    "text",
    [
        "Suppose we switched to MySQL — how painful would the migration be?",
        "假如我们换成 MongoDB，这个查询要怎么写？",
        "my colleague uses Emacs and swears by it",
        "we discussed Kafka in the meeting but nothing was decided",
        "I'm so happy and thankful for all the support.",
        "Your trip must have been incredible.",
        "we went to the beach last weekend",
        "我用 pnpm 装了依赖，但是报错了",
        "同事说我们应该换成 pnpm",
        "I tried your fix but now it throws a KeyError on line 42",
        "This repo has a weird folder structure, where should I put the new service?",
    ],
)
def test_what_is_not_a_lasting_fact_of_the_user_yields_nothing(text: str) -> None:
    assert _found(text) == []


def test_a_remember_request_pointing_back_or_forward_raises_those_sentences() -> None:
    back = extract_turn(Turn("e1", "user", "The staging db password rotates monthly. Remember that."))
    assert [(c.tier, c.content) for c in back] == [(Tier.MUST, "The staging db password rotates monthly.")]
    forward = extract_turn(
        Turn("e1", "user", "记住几件事：\n- 我的笔记本跑 Fedora。\n- 用 Airflow 调度。\n好，先这些。")
    )
    assert len(forward) == 2 and all(c.tier is Tier.MUST for c in forward)


def test_a_thousands_separator_is_no_clause_break() -> None:
    assert [c for _, c in split_clauses("we support about 2,000 staff, mostly nurses")] == [
        "we support about 2,000 staff",
        "mostly nurses",
    ]
    assert [c for _, c in split_clauses("rent went up to 1,250, which hurts")] == ["rent went up to 1,250", "which hurts"]


def test_clauses_split_at_commas_requests_and_enumerators() -> None:
    assert split_clauses("一是不要用 Lombok,二是所有金额一律用 BigDecimal") == [
        (2, "不要用 Lombok"),
        (15, "所有金额一律用 BigDecimal"),
    ]
    assert [c for _, c in split_clauses("this service is on Go 1.22, can you check the build?")] == [
        "this service is on Go 1.22",
        "can you check the build?",
    ]


def test_people_not_allowed_to_do_something_ban_what_follows_not_the_people() -> None:
    found = _found("Our devs are not allowed to push straight to main, ever. That's from compliance.")
    assert [(tier, content) for _, _, tier, content in found] == [("must", "Do not push straight to main.")]


def test_a_team_named_in_latin_keeps_its_words() -> None:
    """"转到 payments team 了" is the payments team, not "paymentsteam"."""
    found = {(slot, value, content) for slot, value, _, content in _found("上个月转到 search infra team 了")}
    assert ("user.team", "search infra team", "用户在 search infra team。") in found
    assert ("user.team", "风控组", "用户在风控组。") in {(s, v, c) for s, v, _, c in _found("我在风控组")}


@pytest.mark.parametrize(
    "text",
    [
        "my little sister's laptop runs Fedora, she set it up herself",
        "our roommate is on Arch and never stops talking about it",
        "别的部门的规定是不许用 MongoDB，跟我们无关",
        "其他项目的规矩是不准用 jQuery",
        "网上说 Bun 已经能上生产了，靠谱吗",
        "看到有人说 Deno 比 Node 快很多",
    ],
)
def test_someone_elses_setup_or_rule_or_hearsay_is_not_the_users(text: str) -> None:
    assert [c.content for c in extract_turn(Turn("e1", "user", text))] == []


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("代码注释用中文，不要英文", "代码注释用中文，不要英文。"),
        ("注释写中文。别用英文。", "注释写中文，别用英文。"),
    ],
)
def test_a_bare_negation_after_a_rule_stays_with_it(text: str, content: str) -> None:
    assert [c.content for c in extract_turn(Turn("e1", "user", text))] == [content]


def test_a_negation_with_its_own_verb_or_after_a_fact_stands_alone() -> None:
    # the seed example: the database is a fact of its own, the ORM ban a rule of its own
    got = [c.content for c in extract_turn(Turn("e1", "user", "数据库用 PostgreSQL，不要用 ORM"))]
    assert got == ["用户的项目使用 PostgreSQL。", "不要使用 ORM。"]
    assert [c.content for c in extract_turn(Turn("e1", "user", "不要繁体"))] == ["不要繁体。"]


def test_a_dot_inside_a_name_does_not_end_what_the_user_does_not_want() -> None:
    [cand] = extract_turn(Turn("e1", "user", "I don't want to see os.system() calls in new code"))
    assert cand.content == "The user does not want to see os.system() calls in new code."


@pytest.mark.parametrize(
    "text",
    [
        "帮我写个定时脚本备份数据库",  # 定时 is "scheduled", not "when"
        "每次给你日志之前",  # only a condition: no rule is cut from it
    ],
)
def test_no_rule_from_a_task_or_a_bare_condition(text: str) -> None:
    assert [c.rule for c in extract_turn(Turn("e1", "user", text)) if c.tier is Tier.MUST] == []


def test_a_name_with_its_version_or_an_aside_with_a_mark_stays_whole() -> None:
    [cand] = extract_turn(Turn("e1", "user", "Our base image is node:22-alpine."))
    assert cand.content == "The user's base image is node:22-alpine."
    [joined] = extract_turn(Turn("e1", "user", "I just joined (day 3!) as a data analyst."))
    assert "(day 3!) as a data analyst" in joined.content


def test_a_verb_after_the_boss_is_no_name_and_an_offer_of_help_is_no_rule() -> None:
    assert extract_turn(Turn("e1", "user", "我老板总用 Excel 做排期")) == []
    assert extract_turn(Turn("e1", "user", "If you have any questions, just let me know!")) == []


def test_a_night_owl_is_no_cat() -> None:
    assert [c.slot for c in extract_turn(Turn("e1", "user", "我是个夜猫子，早上的会尽量别约"))] == [None] * len(
        extract_turn(Turn("e1", "user", "我是个夜猫子，早上的会尽量别约"))
    )
    [cat] = [c for c in extract_turn(Turn("e1", "user", "我家那只猫叫年糕")) if c.slot]
    assert (cat.slot, cat.value) == ("user.family.cat", "年糕")


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("would you mind remembering that I prefer oat milk?", "oat milk"),
        ("can u keep in mind im allergic to shellfish when u suggest dinners", "shellfish"),
        ("I want every deadline in UTC, never local time", "every deadline in UTC; never local time"),
        ("For slides, dark backgrounds please.", "For slides, dark backgrounds"),
        ("any charts you make for me: colourblind-safe palettes please", "colourblind-safe palettes"),
        ("Squash merges only from now on.", "Squash merges only from now on"),
    ],
)
def test_a_preference_asked_politely_or_told_as_a_noun_phrase_is_kept(text: str, kept: str) -> None:
    contents = [c.content for c in extract_turn(Turn("e1", "user", text)) if c.tier is Tier.MUST]
    assert any(kept in c for c in contents), contents


@pytest.mark.parametrize(
    "text", ["For dinner, pizza please", "ok from now on", "I want all of it done by Friday", "can u check this?"]
)
def test_an_order_a_filler_or_a_task_is_no_preference(text: str) -> None:
    assert [c.content for c in extract_turn(Turn("e1", "user", text)) if c.tier is Tier.MUST] == []


@pytest.mark.parametrize(
    "text", ["the build box isn't on Ubuntu 20.04", "we haven't adopted Kafka yet", "the site doesn't run WordPress"]
)
def test_a_tool_in_a_denied_state_fills_no_slot(text: str) -> None:
    assert [c.slot for c in extract_turn(Turn("e1", "user", text)) if c.slot] == []


def test_an_announcement_of_rules_is_no_memory_of_its_own() -> None:
    got = [c.content for c in extract_turn(Turn("e1", "user", "I have two requests for you: no emojis, ever"))]
    assert not any("requests" in c for c in got), got


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Use tabs everywhere except YAML.", "tabs everywhere except YAML"),
        ("Keep commit titles under 50 characters.", "commit titles under 50 characters"),
        ("use Bun for everything JS", "Bun"),
    ],
)
def test_a_bare_imperative_over_a_whole_kind_of_work_is_a_rule(text: str, kept: str) -> None:
    contents = [c.content for c in extract_turn(Turn("e1", "user", text)) if c.tier is Tier.MUST]
    assert any(kept in c for c in contents), contents


@pytest.mark.parametrize("text", ["Write tests for the parser", "keep the tests passing", "fix it everywhere"])
def test_a_task_is_no_rule_even_with_a_wide_word(text: str) -> None:
    assert [c.content for c in extract_turn(Turn("e1", "user", text)) if c.tier is Tier.MUST] == []
