"""Forms read as a class after round 13 moved to dev (issue #12): a contrast said in one sentence, its positive
half a bare noun phrase and its negated half a bare rule ("X, never Y"), kept as one rule with both halves; and
the near misses that stay as they were.
"""

from __future__ import annotations

import pytest

from tests.unit.rule_forms import found, must, slots


def _says(contents: list[str], words: tuple[str, ...]) -> bool:
    """One of the contents holds every word (case-folded)."""
    return any(all(w in c.casefold() for w in words) for c in contents)


@pytest.mark.parametrize(
    ("text", "kept", "dropped"),
    [
        ("Dates in ISO format, never US style.", "iso format", "us style"),
        (
            "Commit messages in the imperative mood, never past tense. Team convention.",
            "imperative",
            "past tense",
        ),
        ("Prices in euros, never dollars please", "euros", "dollars"),
        ("变量名用 camelCase，不要下划线", "camelcase", "下划线"),
    ],
)
def test_a_contrast_keeps_what_to_do_with_what_not_to(text: str, kept: str, dropped: str):
    rules = must(text)
    assert len(rules) == 1, rules
    assert kept in rules[0].casefold() and dropped in rules[0].casefold(), rules


@pytest.mark.parametrize(
    ("text", "alone"),
    [
        ("I love it, never change", "Never change."),  # a subject: no bare noun phrase before the rule
        ("so basically, never again", None),  # a filler before it, and "never again" is no rule
        (
            "Always use UTC. Never local time.",
            "Always use UTC; never local time.",
        ),  # two sentences: joined as before
    ],
)
def test_what_is_not_a_bare_noun_phrase_is_not_joined(text: str, alone: str | None):
    rules = must(text)
    if alone is None:
        assert rules == []
    else:
        assert rules == [alone]


# --- what the user said before, corrected: "I said X was A, it's actually B", "我之前说 X 是 A，其实是 B" ------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("I told you the venue was Hall B, it's actually Hall D", ("venue", "hall d", "hall b")),
        ("earlier I said our budget was 40k but it should be 45k", ("budget", "45k")),
        (
            "I said the retro is on Thursday but it's actually Friday, can you fix the invite?",
            ("retro", "friday"),
        ),
        ("我之前说机房在三楼，其实是五楼", ("机房", "五楼")),
        ("刚才说的数据库端口写错了，应该是 5433", ("数据库端口", "5433")),
        ("上次跟你说的预算是 2 万，实际是 3 万", ("预算", "3 万")),
    ],
)
def test_a_correction_of_what_the_user_said_before_is_a_must(text: str, words: tuple[str, ...]):
    rules = must(text)
    assert _says(rules, words), rules


@pytest.mark.parametrize(
    "text",
    [
        "he said the build was green, it's actually red",  # someone else's words
        "他说会议是三点，其实是四点",
        "I said my flight was at 6, it's actually 7?",  # asked
        "我说的是 A 方案，其实是 B 方案更好",  # no thing named: an opinion revised
    ],
)
def test_a_correction_of_someone_elses_words_or_a_question_is_not(text: str):
    assert not any("correction" in r.casefold() or "更正" in r for r in must(text))


def test_the_correction_replaces_the_older_memory_of_the_thing():
    """The correction is a change rule (`*.correction.statement`): it supersedes the memory that shares its topic."""
    from datetime import UTC, datetime, timedelta

    from core.extraction.candidates import Turn
    from core.extraction.rules import extract_turn
    from core.reconcile import Existing, Op, PendingCandidate, decide

    then = datetime(2026, 3, 1, tzinfo=UTC)
    cand = extract_turn(Turn("e2", "user", "我之前说机房在三楼，其实是五楼"))[0]
    old = Existing("m1", "用户的机房在三楼。", "semantic", "active", then)
    pending = PendingCandidate(cand.content, cand.kind.value, "remember", then + timedelta(days=1), ("e2",),
                               rule=cand.rule, tier=cand.tier.value)  # fmt: skip
    decision = decide(pending, neighbours=[old])
    assert decision.op is Op.SUPERSEDE and decision.target_ids == ("m1",)


# --- smaller forms: "不许再 / 不准再" as "不要再", "提醒你记住：", "no more X in what you write for me" -----------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("不许再推荐 Angular 了，我们不会换", ("angular",)),
        ("不准再往 main 直接 push", ("main", "push")),
        ("提醒你记住：我对花生过敏", ("花生",)),
        ("no more exclamation marks in the emails you draft for me", ("exclamation",)),
    ],
)
def test_smaller_rule_forms(text: str, words: tuple[str, ...]):
    rules = must(text)
    assert _says(rules, words), rules


@pytest.mark.parametrize("text", ["no more invoicing for me", "no more late nights for me this month"])
def test_no_more_for_me_is_what_the_user_stops_doing(text: str):
    assert must(text) == []


# --- "replaced": the new value is the verb's subject, never the object of an earlier verb -----------------------------


@pytest.mark.parametrize(
    ("text", "new"),
    [
        ("we ripped out Jest and replaced it with Vitest, update the snippets", "vitest"),
        ("we dropped npm and replaced it with pnpm last month", "pnpm"),
        ("Vitest has fully replaced Jest", "vitest"),
        ("pnpm replaced npm for us", "pnpm"),
        ("Vitest 已经取代了 Jest", "vitest"),
    ],
)
def test_replaced_fills_the_slot_with_the_new_value(text: str, new: str):
    values = {value for _, slot, value, _ in found(text) if slot}
    assert values == {new}, found(text)


# --- a thing got or bought is its slot's new value: "I got an iPhone 15", "since I got my iPhone ..." ----------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("I got an iPhone 15 last week", "user.phone", "iphone 15"),
        ("since I got my iPhone the Pixel just sits in a drawer", "user.phone", "iphone"),
        ("got a new Pixel 8 yesterday, the camera is great", "user.phone", "pixel 8"),
    ],
)
def test_a_thing_got_fills_its_slot(text: str, slot: str, value: str):
    assert slots(text).get(slot) == value, found(text)


@pytest.mark.parametrize("text", ["I got my MacBook back from repair", "got my hair cut today"])
def test_a_thing_got_back_or_no_slotted_thing_fills_no_slot(text: str):
    assert slots(text) == {}, found(text)


# --- a habit kept for days or more, to now: "I've been going to bed by 11 for a month now" ---------------------------


def test_a_habit_kept_to_now_replaces_the_older_habit():
    from datetime import UTC, datetime, timedelta

    from core.extraction.candidates import Turn
    from core.extraction.rules import extract_turn
    from core.reconcile import Existing, Op, PendingCandidate, decide

    [cand] = extract_turn(Turn("e2", "user", "I've been going to bed by 11 for a month now, feel way better"))
    assert "bed by 11" in cand.content
    then = datetime(2026, 1, 1, tzinfo=UTC)
    old = Existing("m1", "The user usually goes to bed around 1am.", "semantic", "active", then)
    pending = PendingCandidate(cand.content, cand.kind.value, "remember", then + timedelta(days=30), ("e2",),
                               rule=cand.rule)  # fmt: skip
    assert decide(pending, neighbours=[old]).op is Op.SUPERSEDE


@pytest.mark.parametrize(
    "text",
    [
        "I've been waiting 20 minutes now for the build",
        "I've been debugging this for two days now",
        "I've been meaning to ask about it for a while now",
    ],
)
def test_a_wait_or_a_task_kept_to_now_is_no_habit(text: str):
    assert found(text) == []


# --- Chinese: a posting with the subject dropped; what stopped is part of the change after it ------------------------


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("又被派到成都了", "成都"),
        ("终于回老家长沙了，远程办公", "长沙"),
        ("调到杭州分公司了", "杭州"),
    ],
)
def test_a_posting_with_the_subject_dropped_is_where_the_user_is(text: str, place: str):
    assert slots(text).get("user.location") == place, found(text)


@pytest.mark.parametrize("text", ["回北京出差两天", "他被派到深圳了"])
def test_a_trip_or_someone_elses_posting_is_not(text: str):
    assert "user.location" not in slots(text), found(text)


def test_what_stopped_before_a_change_is_part_of_it():
    contents = [c for _, _, _, c in found("现在不喝奶茶了，改喝豆浆")]
    assert any("奶茶" in c and "豆浆" in c for c in contents), contents
    assert not any("不知道" in c for _, _, _, c in found("不知道为什么，改成周三了"))


# --- mixed-language turns: an English verb with a Chinese complement, "based in" after 我 ----------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("timeout 已经 bump 到 30s 了", ("timeout", "30s")),
        ("登录已经 migrate 到 Auth0 了，老的 session 方案下线", ("auth0",)),
        ("min SDK 已经 upgrade 到 26", ("sdk", "26")),
    ],
)
def test_an_english_verb_of_change_with_a_chinese_complement(text: str, words: tuple[str, ...]):
    contents = [c.casefold() for _, _, _, c in found(text)]
    assert _says(contents, words), contents


@pytest.mark.parametrize(
    "text", ["下周 move 到 new cluster", "我们准备 migrate 到 k8s", "要不要 migrate 到 Postgres 16"]
)
def test_a_change_ahead_or_weighed_is_no_statement(text: str):
    from core.extraction.candidates import Turn
    from core.extraction.rules import extract_turn

    rules = [c.rule for c in extract_turn(Turn("e1", "user", text))]
    assert "zh.statement.change" not in rules, rules


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("我 based in 新加坡", "新加坡"),
        ("我 base 在 Munich", "Munich"),
        ("搬来 Lisbon 之后天气好多了", "Lisbon"),
    ],
)
def test_a_place_in_a_mixed_turn(text: str, place: str):
    assert slots(text).get("user.location") == place, found(text)


def test_a_tool_moved_to_is_no_place():
    assert "user.location" not in slots("服务搬到 Vercel 了")


# --- the user's own new thing is its slot's current value: "my new iPhone 16 keeps dropping wifi" ---------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("my new iPhone 15 won't charge past 80%, why?", "user.phone", "iphone 15"),
        ("our brand new Grafana boards load slowly", "project.monitoring", "grafana"),
    ],
)
def test_my_new_thing_fills_its_slot(text: str, slot: str, value: str):
    assert slots(text).get(slot) == value, found(text)


@pytest.mark.parametrize(
    "text",
    [
        "if my new Pixel arrives tomorrow, can you remind me",
        "my friend's new iPhone is nice",
        "my new job is fun",
    ],
)
def test_a_new_thing_that_is_not_the_users_or_not_yet_or_no_tool_fills_no_slot(text: str):
    assert slots(text) == {}, found(text)


# --- precision: a "we" at home is the family; a verb of the exchange itself is no standing rule ----------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("we finally adopted a cat last month", "the user's family"),
        ("we have two kids under five, so evenings are chaos", "the user's family"),
        ("we deploy twice a day", "the user's team"),
    ],
)
def test_we_at_home_is_the_family_and_we_at_work_the_team(text: str, words: str):
    from core.extraction.rules.en.grammar import third_person

    assert words in third_person(text)


@pytest.mark.parametrize(
    "text",
    [
        "ok we're on Bun now, dont ask",
        "tabs, 2 wide. please don't argue with me about it 😅",
        "don't judge lol",
    ],
)
def test_a_verb_of_the_exchange_is_no_rule(text: str):
    assert not any(r.lower().startswith(("do not", "never")) for r in must(text)), must(text)


def test_a_rule_with_the_same_verb_and_an_object_is_kept():
    assert must("don't ask me for confirmation before running tests") == [
        "Do not ask the user for confirmation before running tests."
    ]


@pytest.mark.parametrize(
    "text",
    [
        "sorry, I meant the second link not the first",
        "no, the other snippet, not this one",
        "I keep breaking it lol",
    ],
)
def test_an_item_of_the_chat_or_a_pronoun_alone_is_no_memory(text: str):
    assert found(text) == []


def test_a_correction_of_a_fact_is_still_one():
    assert must("I meant the staging cluster, not prod") != []


# ---------------------------------------------------------------- a change of role, the subject dropped (zh)


@pytest.mark.parametrize(
    ("text", "job"),
    [
        ("年后升了高级工程师，开始带新人了", "高级工程师"),
        ("现在是架构师了，主要画图开会", "架构师"),
        ("已经换工作了，现在做 ML engineer，天天调模型", "ml engineer"),
        ("内部转岗了，现在是 data analyst，SQL 要恶补", "data analyst"),
        ("转开发三个月了，业务代码还是有点吃力", "开发"),
        ("我从后端转岗做 SRE 了，现在天天值班", "sre"),
        ("我转岗做开发了", "开发"),  # the role, not "岗做开发"
    ],
)
def test_a_change_of_role_with_the_subject_dropped_fills_the_job_slot(text: str, job: str):
    assert slots(text).get("user.job") == job, found(text)


@pytest.mark.parametrize(
    "text",
    ["他升了经理", "帮我转发给产品经理", "现在是产品经理在负责这块", "转给测试了", "如果转开发的话要学啥"],
)
def test_someone_else_s_role_a_forward_or_a_supposition_is_no_job_of_the_user(text: str):
    assert "user.job" not in slots(text), found(text)


def test_a_person_called_by_surname_and_title_is_no_role_of_the_user():
    assert "user.job" not in slots("正式换导师了，现在是陈老师"), found("正式换导师了，现在是陈老师")


# ---------------------------------------------------------------- "swapped X for Y"; loggers, container runtimes


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("swapped Jest for Vitest last month", "project.test_framework", "vitest"),
        ("we swapped out Terraform for OpenTofu after the license change", "project.iac", "opentofu"),
        ("we ripped out Datadog for Honeycomb, the bill was insane", "project.monitoring", "honeycomb"),
        ("no longer using Winston anywhere, it's pino everywhere", "project.logging", "pino"),
        ("replaced Docker Desktop with OrbStack, way lighter", "user.container_runtime", "orbstack"),
    ],
)
def test_the_tool_a_change_puts_in_place_fills_its_slot(text: str, slot: str, value: str):
    assert slots(text).get(slot) == value, found(text)


def test_a_swap_is_a_decision_not_a_correction():
    assert must("swapped Jest for Vitest last month") == []


# ---------------------------------------------------------------- a common word as a tool's name


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("node 20 everywhere now, 18 is EOL", "project.runtime", "node.js 20"),
        ("we're on go 1.22 now", "project.language", "go 1.22"),
        ("we moved from python to go", "project.language", "go"),
    ],
)
def test_a_common_word_with_a_version_or_after_a_move_is_the_tool(text: str, slot: str, value: str):
    assert slots(text).get(slot) == value, found(text)


@pytest.mark.parametrize("text", ["I had to go 2 hours", "I want to go home", "let's go 10 times", "go 15 km"])
def test_a_common_word_as_an_infinitive_or_with_a_count_is_the_word(text: str):
    assert "project.language" not in slots(text), found(text)
