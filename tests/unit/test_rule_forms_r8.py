"""Forms read as a class after round 8 moved to dev (issue #12): each with new wording and new values, in both
languages where the form exists in both, and the near misses that must not match.
"""

from __future__ import annotations

import pytest

from core.extraction.candidates import Turn
from core.extraction.rules import extract_turn
from tests.unit.rule_forms import found as _found
from tests.unit.rule_forms import must as _must

# --- a request to remember in more verbs ("commit to memory", "keep this in your head", "memorize ->") --------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("keep this in your head: the on-call phone number lives in 1Password", "1password"),
        ("could you commit to memory that the wiki is read-only on Sundays?", "read-only"),
        ("save to memory: our staging bucket is eu-north-1", "eu-north-1"),
        ("memorize pls -> the Grafana admin is Oskar", "oskar"),
        ("write this into your notes: demo day is the last Friday of the month", "demo day"),
    ],
)
def test_a_request_to_remember_in_other_verbs_is_must(text: str, kept: str) -> None:
    assert any(kept in content.lower() for content in _must(text))


@pytest.mark.parametrize(
    "text",
    ["I keep the notes in my head anyway", "save this to a file called out.txt", "can you save the CSV?"],
)
def test_saving_to_something_other_than_memory_is_no_remember_request(text: str) -> None:
    assert not [c for c in extract_turn(Turn("e1", "user", text)) if c.rule == "en.remember"]


# --- a polite rule ("would you mind always <verb>ing") and an impatient lead ("for the last time") ----------


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (
            "Would you mind always adding a changelog line to your PRs from now on?",
            "Always add a changelog line",
        ),
        ("would you mind never using semicolons in our TypeScript?", "Never use semicolons"),
        ("For the last time, stop wrapping every answer in a table", "Stop wrapping every answer"),
        ("I told you before: never rebase the shared branches", "Never rebase the shared branches"),
    ],
)
def test_a_polite_or_impatient_rule_is_must(text: str, rule: str) -> None:
    assert any(content.startswith(rule) for content in _must(text))


@pytest.mark.parametrize(
    "text",
    [
        "would you mind explaining this diff?",
        "would you mind putting it in a gist?",
        "for the last time today, run it",
    ],
)
def test_a_polite_request_for_the_task_at_hand_is_no_rule(text: str) -> None:
    assert _must(text) == []


# --- slot values the vocabulary lacked (paging, Fastify / Koa / Hono, 云效, 火山引擎, 七牛, 夜莺, MyBatis-Plus) ---


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("we moved paging from PagerDuty to Opsgenie last month", "project.paging", "opsgenie"),
        ("our paging is VictorOps", "project.paging", "victorops"),
        ("we ported the gateway to Hono over the summer", "project.framework", "hono"),
        ("流水线已经迁到云效了", "project.ci", "yunxiao"),
        ("去年底整体搬到火山引擎了", "project.cloud", "volcengine"),
        ("我们 switched to MyBatis-Plus 了", "project.orm", "mybatis-plus"),
    ],
)
def test_values_of_more_slots_are_known(text: str, slot: str, value: str) -> None:
    assert (slot, value) in [(s, v) for _, s, v, _ in _found(text)]


# --- a clause that only names the value left ("the X cluster was retired", "X 已经下线了") is no fact --------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("the Cassandra ring was decommissioned in May; everything is on Postgres now", "project.database", "postgresql"),
        ("we closed the Azure subscription, 100% AWS these days", "project.cloud", "aws"),
        ("CouchDB 已经下线了，全部迁到了 MongoDB", "project.database", "mongodb"),
    ],
)  # fmt: skip
def test_a_value_told_as_gone_leaves_only_the_new_value(text: str, slot: str, value: str) -> None:
    found = _found(text)
    assert (slot, value) in [(s, v) for _, s, v, _ in found]
    assert all(v == value for _, s, v, _ in found if s == slot or s is None)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("We decided against GraphQL, plain REST is enough", "graphql"),
        ("100% sure the Kafka topic is fine", ""),
    ],
)
def test_a_value_not_in_a_slot_or_a_percent_of_certainty_is_no_value_left(text: str, kept: str) -> None:
    contents = " ".join(content.lower() for *_, content in _found(text))
    assert kept in contents if kept else "kafka" not in contents


# --- irony ("I *love* merge conflicts", "对对对…多简单啊", two weak marks) and work disowned ("纯属练手") --------


@pytest.mark.parametrize(
    "text",
    [
        "Oh I *love* writing Helm charts by hand, truly the best hobby ever.",
        "是是是，全部换成 Rust，下周就交付，多容易啊",
        "oh great, 我最喜欢半夜被 page 了，超开心的",
        "this course uses Flask and SQLite, just for practice, nothing to do with work",
        "这个 demo 用的是 Svelte，纯属练手，跟工作没关系",
    ],
)
def test_an_ironic_or_disowned_statement_is_not_the_users(text: str) -> None:
    assert _found(text) == []


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("quit putting emojis in the changelog 🙄", "emojis"),  # annoyance with a rule: the rule stays
        ("yeah sure, our API runs on Elixir", "elixir"),  # one weak mark: a plain answer
        ("we switched to Bun, best decision ever", "bun"),
        ("我最爱用 Vim 了", "vim"),
    ],
)
def test_a_single_weak_mark_or_a_rule_is_kept(text: str, kept: str) -> None:
    assert any(kept in f"{v} {content}".lower() for _, _, v, content in _found(text))


# --- corrections: a late marker ("it's X actually"), a name after the marker ("nope, it's Aoife"), "you keep
# calling it X — it's Y", a value against a time ("..., not 17:00"), "small fix:" ---------------------------------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("it's Svelte actually, there's no React in the app", "svelte"),
        ("Nope — it's Grzegorz, with a z. Please spell it that way.", "grzegorz"),
        ("you keep calling it the orders queue — it's fulfilment-events.", "fulfilment-events"),
        ("that's wrong, the batch job starts at 04:15 CET, not 05:00", "04:15"),
        ("quick fix: the staging branch is `develop`, not `dev`", "develop"),
    ],
)
def test_a_correction_in_other_forms_is_must(text: str, kept: str) -> None:
    assert any(kept in content.lower() or kept == v for tier, _, v, content in _found(text) if tier == "must")


@pytest.mark.parametrize(
    "text",
    ["no, it's fine", "nope, it's 404 again", "it's fine actually", "you keep going, I'll review later"],
)
def test_a_marker_before_no_value_is_no_correction(text: str) -> None:
    assert [t for t, *_ in _found(text) if t == "must"] == []


def test_a_tool_told_as_not_installed_is_not_the_one_used() -> None:
    assert [(s, v) for _, s, v, _ in _found("we use deno here, node isn't even installed")] == [
        ("project.runtime", "deno")
    ]


# --- the user's own slot told after a change ("got promoted — X now", "swapped teams, I'm with X these days",
# "so <diet> these days", "<zone> for scheduling"), and a new value in the slot of the one it replaces ----------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("got promoted — principal engineer now, fewer tickets for me", "user.job", "principal engineer"),
        ("switched teams, I'm with billing now", "user.team", "billing team"),
        (
            "went back to eating meat at weddings only, so vegetarian these days otherwise",
            "user.diet",
            "vegetarian",
        ),
        ("moved to Seoul last month, so KST for scheduling", "user.timezone", "KST"),
        ("Timezone's Europe/Lisbon fwiw", "user.timezone", "Europe/Lisbon"),
        ("we moved from Nomad to GKE in the spring", "project.orchestration", "gke"),
    ],
)
def test_the_users_slot_after_a_change(text: str, slot: str, value: str) -> None:
    assert (slot, value) in [(s, v) for _, s, v, _ in _found(text)]


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("promoted the build to prod, all green", "user.job"),
        ("vegan options now on the menu?", "user.diet"),
        ("they switched teams last week, I'm with you on that", "user.team"),
    ],
)
def test_a_change_said_of_something_else_fills_no_user_slot(text: str, slot: str) -> None:
    assert slot not in [s for _, s, _, _ in _found(text)]


def test_a_value_of_another_slot_family_keeps_its_own_slot() -> None:
    assert ("project.cloud", "gcp") in [(s, v) for _, s, v, _ in _found("we moved from Vercel to GCP")]


# --- Chinese: a line of work as the whole statement ("我是运维"), a team after a transfer ("转岗去了支付组"), a
# posting ("被调去深圳了", "又调回杭州了"), the state after a move ("回国了，现在在上海"), an office by city ----------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("我是产品，技术细节可以讲简单点", "user.job", "产品"),
        ("我是后端开发", "user.job", "后端开发"),
        ("下个季度我转岗去了支付组", "user.team", "支付组"),
        ("我被调去深圳了，下周开始", "user.location", "深圳"),
        ("我又调回杭州了", "user.location", "杭州"),
        ("辞职回国了，现在在上海", "user.location", "上海"),
        ("我在成都研发中心，离总部挺远", "user.location", "成都"),
    ],
)
def test_zh_the_users_own_role_team_and_place(text: str, slot: str, value: str) -> None:
    assert (slot, value) in [(s, v) for _, s, v, _ in _found(text)]


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("我是说这个函数有问题", "user.job"),
        ("我是来问问题的", "user.job"),
        ("他被调去深圳了", "user.location"),
        ("我们现在在北京有个办公室", "user.location"),
        ("我跳槽去了字节", "user.team"),
    ],
)
def test_zh_not_the_users_role_team_or_place(text: str, slot: str) -> None:
    assert slot not in [s for _, s, _, _ in _found(text)]


# --- a house convention told as standing is a rule in its topic's slot (indentation, commit messages) ---------


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("use 3-space indentation in all our Lua files", "project.indentation"),
        ("after the vote, YAML is 2-space indentation now", "project.indentation"),
        ("缩进以后一律用两个空格", "project.indentation"),
        ("定了：提交说明今后统一写英文", "project.commit_messages"),
        ("commit messages are in German from now on, per the new policy", "project.commit_messages"),
    ],
)
def test_a_standing_convention_is_a_rule_in_its_topic_slot(text: str, slot: str) -> None:
    assert [(t, s) for t, s, _, _ in _found(text) if s == slot] == [("must", slot)]


@pytest.mark.parametrize(
    "text",
    [
        "I have 40 browser tabs open now",
        "I always forget commit messages",
        "can you fix the indentation in this file?",
        "这个文件的缩进乱了",
    ],
)
def test_a_one_off_or_the_users_habit_is_no_convention(text: str) -> None:
    assert not [s for _, s, _, _ in _found(text) if s in ("project.indentation", "project.commit_messages")]


# --- standing rules under a condition ("if a migration could lock a table, ask first", "凡是…都先…给我看"), and
# more verbs of a Chinese remember request ("这个你记牢：") ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("if a change could drop a column, ask before applying it", "ask before applying"),
        ("For anything that touches billing, loop me in before merging.", "billing"),
        ("如果要改数据库结构，先问我一声", "数据库结构"),
        ("凡是要发邮件给客户的脚本，都先给我过目", "客户"),
        ("写完接口先补单测再提给我", "单测"),
        ("这点你记牢：周五下午不发版", "周五"),
    ],
)
def test_a_conditional_rule_or_a_remember_request_is_must(text: str, kept: str) -> None:
    assert any(kept in content for content in _must(text))


@pytest.mark.parametrize(
    "text",
    ["if a test fails, rerun it", "吃完饭先休息一下再说", "改完这个文件先跑一下测试", "我记得他说过这事"],
)
def test_a_one_off_step_or_a_memory_of_the_users_is_no_rule(text: str) -> None:
    assert _must(text) == []


@pytest.mark.parametrize(
    ("text", "value"), [("我写 Rust 用的是 Helix", "helix"), ("我写前端代码时用的是 WebStorm", "webstorm")]
)
def test_zh_the_tool_used_for_a_kind_of_work_is_the_users(text: str, value: str) -> None:
    assert [(s, v) for _, s, v, _ in _found(text)] == [("user.editor", value)]


def test_zh_a_language_alone_is_still_the_projects() -> None:
    assert ("project.language", "rust") in [(s, v) for _, s, v, _ in _found("我们写后端用的是 Rust")]


# --- a list of the user's setup under a header ("stack:", "环境说明：") -------------------------------------


@pytest.mark.parametrize(
    ("text", "pairs"),
    [
        ("our stack:\n- Elixir 1.16\n- Phoenix\n- hosted on Fly.io",
         {("project.language", "elixir 1.16"), ("project.framework", "phoenix"), ("project.hosting", "fly.io")}),
        ("开发环境如下：\n- 数据库：TiDB\n- Go 1.22", {("project.database", "tidb"), ("project.language", "go 1.22")}),
    ],
)  # fmt: skip
def test_a_setup_list_under_a_header_names_the_users_tools(text: str, pairs: set[tuple[str, str]]) -> None:
    assert pairs <= {(s, v) for _, s, v, _ in _found(text) if s and v}


@pytest.mark.parametrize(
    "text",
    ["setup:\n- Redis was down yesterday\n- can you check the Kafka logs?", "stack trace below:\nRedis"],
)
def test_a_list_of_other_things_after_a_header_is_not_the_setup(text: str) -> None:
    assert not [s for _, s, _, _ in _found(text) if s in ("project.cache", "project.queue")]


# --- tools in passing: "<Tool> is our <noun>", "my <tool> config", "using <tool> ... in this repo", and the ground
# of a question ("since we're on X I assume ...?") ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("RabbitMQ is our job queue, so keep the consumers idempotent please", "project.queue", "rabbitmq"),
        ("my Fish prompt got slow after the update, any idea?", "user.shell", "fish"),
        ("my Emacs config is a mess, how do I split it into modules?", "user.editor", "emacs"),
        ("using Vitest in this repo, how do I mock timers?", "project.test_framework", "vitest"),
        (
            "since we're on Postgres 16 I assume MERGE works? show me an upsert",
            "project.database",
            "postgresql 16",
        ),
    ],
)
def test_a_tool_in_passing_in_other_forms(text: str, slot: str, value: str) -> None:
    assert (slot, value) in [(s, v) for _, s, v, _ in _found(text)]


@pytest.mark.parametrize(
    "text",
    [
        "Kafka topics are our problem today",
        "my colleague's Emacs config is wild",
        "if we were on MySQL I assume this would work?",
        "my Python script is slow",
    ],
)
def test_a_tool_said_of_something_else_is_not_in_passing(text: str) -> None:
    assert not [r for r in (c.rule for c in extract_turn(Turn("e1", "user", text))) if r == "en.tool.passing"]


# --- a reply language's variety ("British English"), a convention on a noun with its owner ("所有接口返回的时间…") --


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Respond in American English please, we ship to US customers", "en-us"),
        ("answer in Simplified Chinese", "zh-hans"),
    ],
)
def test_a_reply_language_keeps_its_variety(text: str, value: str) -> None:
    assert ("user.reply_language", value) in [(s, v) for _, s, v, _ in _found(text)]


@pytest.mark.parametrize(
    ("text", "kept"),
    [("所有报表导出的日期统一用 ISO 8601", "ISO 8601"), ("全部接口返回的时区一律用 UTC+8", "UTC+8")],
)
def test_zh_a_convention_on_a_noun_with_its_owner_is_must(text: str, kept: str) -> None:
    assert any(kept in content for content in _must(text))


@pytest.mark.parametrize("text", ["时间用完了", "我的时间都用在 debug 上了"])
def test_zh_time_spent_is_no_convention(text: str) -> None:
    assert _must(text) == []


# --- "<new> replaced <old>" and its Chinese forms ("用 X 替换了 Y", "Y 被 X 取代了") -----------------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("Gradle replaced Maven in all our builds last year", "project.build_tool", "gradle"),
        ("Loki? no, Grafana has replaced Datadog for dashboards here", "project.monitoring", "grafana"),
        ("我们用 Pulumi 替换了 Terraform", "project.iac", "pulumi"),
        ("Jenkins 早就被 Drone 取代了", "project.ci", "drone"),
    ],
)
def test_the_value_named_before_replaced_is_the_new_one(text: str, slot: str, value: str) -> None:
    assert [(s, v) for _, s, v, _ in _found(text) if s == slot] == [(slot, value)]


@pytest.mark.parametrize(
    "text",
    [
        "should Gradle replace Maven here?",
        "if Pulumi replaced Terraform, would state migrate?",
        "要不要用 Pulumi 替换 Terraform",
    ],
)
def test_a_replacement_asked_about_or_supposed_is_no_change(text: str) -> None:
    assert not [s for _, s, _, _ in _found(text) if s in ("project.build_tool", "project.iac")]


# --- a labelled value to remember: the request in an aside at the end, "for the record —", 提醒你一下 ------------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("grafana admin URL: https://graf.int.example.org (remember this)", "graf.int.example.org"),
        ("for the record — on-call lead this quarter: Bongani", "bongani"),
        ("提醒你一下：预发环境每周日凌晨重置", "预发环境"),
        ("备份桶叫 nightly-dumps-eu（记住这个）", "nightly-dumps-eu"),
    ],
)
def test_a_labelled_value_to_remember_is_must(text: str, kept: str) -> None:
    assert any(kept in content.lower() for content in _must(text))


@pytest.mark.parametrize(
    "text",
    ["for the record, I never said that", "我提醒一下自己明天交周报", "the docs (remember those?) are gone"],
)
def test_no_request_to_remember_in_these(text: str) -> None:
    assert _must(text) == []


# --- "…的话" makes its own clause a supposition, not the clause before it ----------------------------------------


def test_zh_a_fact_before_a_supposition_clause_is_kept() -> None:
    assert ("user.location", "厦门") in [(s, v) for _, s, v, _ in _found("我在厦门，开会的话按北京时间约")]


@pytest.mark.parametrize("text", ["我们用 Memcached 的话，缓存会简单点", "我用 Bun 的话会快一点"])
def test_zh_a_tool_under_de_hua_is_a_supposition(text: str) -> None:
    assert _found(text) == []


# --- a slot's noun as a label over its value ("Editor: Zed. OS: macOS."), "I'd like you to always …" ------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("Editor: Neovim. OS: macOS.", "user.os", "macos"),
        ("Editor: Neovim. OS: macOS.", "user.editor", "neovim"),
        ("CI: Buildkite, deploys are manual", "project.ci", "buildkite"),
    ],
)
def test_a_slot_noun_as_a_label_gives_the_value(text: str, slot: str, value: str) -> None:
    assert (slot, value) in [(s, v) for _, s, v, _ in _found(text)]


@pytest.mark.parametrize("text", ["Note: the database is slow today", "Editor: which one do you recommend?"])
def test_a_label_over_no_value_fills_no_slot(text: str) -> None:
    assert not [s for _, s, _, _ in _found(text) if s in ("project.database", "user.editor")]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("I'd like you to always cite the RFC when you mention a header", "Always cite the RFC"),
        ("I want you to never squash my commits", "Never squash"),
    ],
)
def test_a_rule_asked_as_what_the_user_wants_of_the_agent(text: str, rule: str) -> None:
    assert any(content.startswith(rule) for content in _must(text))


def test_a_one_off_wish_is_no_rule() -> None:
    assert _must("I'd like you to explain this regex") == []


# --- Chinese: a rule about what is named before it ("Rust 别问我"), an A-not-A question is no stack statement -----


def test_zh_a_rule_keeps_the_latin_topic_before_it() -> None:
    assert any("Kotlin" in content for content in _must("前端我熟，Kotlin 别问我"))


def test_zh_a_latin_filler_before_a_rule_is_not_its_topic() -> None:
    assert _must("ok 别用 Lombok") == ["不要使用 Lombok。"]


@pytest.mark.parametrize("text", ["有没有好用的 Rust 插件推荐", "是不是 Redis 的问题", "哪个 ORM 比较好"])
def test_zh_a_question_naming_a_tool_is_no_stack_statement(text: str) -> None:
    assert _found(text) == []


# --- a noun phrase over all the agent makes ("light theme for every chart you draw"), a repository's way told
# against another ("In this repo, fixtures live in conftest.py, not inline") ----------------------------------------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("high-contrast colours for every chart you draw for me, accessibility matters", "high-contrast"),
        ("In this codebase, config lives in env vars, not in YAML files.", "env vars"),
        ("In our monorepo, packages only ever import from their public index", "public index"),
    ],
)
def test_a_scoped_rule_is_must(text: str, kept: str) -> None:
    assert any(kept in content for content in _must(text))


@pytest.mark.parametrize(
    "text",
    [
        "good luck for anything you build",
        "In this repo, the build is broken again",
        "thanks for everything you made",
    ],
)
def test_a_wish_or_a_state_of_the_repo_is_no_rule(text: str) -> None:
    assert _must(text) == []


@pytest.mark.parametrize(("text", "value"), [("我姓司马，复姓，别叫我马总", "司马"), ("我姓林哈", "林")])
def test_zh_the_users_surname(text: str, value: str) -> None:
    assert ("user.surname", value) in [(s, v) for _, s, v, _ in _found(text)]


@pytest.mark.parametrize("text", ["我姓什么你知道吗", "他姓王"])
def test_zh_no_surname_of_the_users(text: str) -> None:
    assert "user.surname" not in [s for _, s, _, _ in _found(text)]


# --- the user's new machine and the system on it ("on my new MacBook, ...", "新 Framework 装了 Fedora") -----------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("on my new MacBook, Docker won't start, any idea?", "macos"),
        ("新 Framework 笔记本装了 Fedora，风扇有点吵", "fedora"),
        ("我的工作机装的是 Debian", "debian"),
    ],
)
def test_the_system_on_the_users_machine(text: str, value: str) -> None:
    assert ("user.os", value) in [(s, v) for _, s, v, _ in _found(text)]


@pytest.mark.parametrize(
    "text", ["他新电脑装了 Windows", "my colleague's new MacBook is fast", "我在虚拟机里装了个 Ubuntu 试试"]
)
def test_someone_elses_machine_or_a_trial_is_not_the_users_os(text: str) -> None:
    assert "user.os" not in [s for _, s, _, _ in _found(text)]


# --- the user's manager named in passing: in apposition inside a request, "我老板X…", "my manager 是 X" ---------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("could you draft a reply to my boss, Ifeoma, about the outage?", "Ifeoma"),
        ("我领导周倩一直催这个需求，帮我估一下工期", "周倩"),
        ("my manager 是 Farid，请假要找他批", "Farid"),
    ],
)
def test_the_managers_name_in_passing(text: str, name: str) -> None:
    assert ("user.manager", name) in [(s, v) for _, s, v, _ in _found(text)]


@pytest.mark.parametrize("text", ["我老板很严格", "我老板特别在意这个", "can you ask a manager about it?"])
def test_no_managers_name_in_these(text: str) -> None:
    assert "user.manager" not in [s for _, s, _, _ in _found(text)]
