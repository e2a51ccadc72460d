"""Linguistic forms the rules read as a whole class (issue #12), each tested with fresh examples written from
the form, in both languages where it exists in both: what must be found, and the near misses that must not.
"""

from __future__ import annotations

import pytest

from core.extraction.candidates import Turn
from core.extraction.rules import extract_turn


def _slots(text: str) -> dict[str | None, str | None]:
    return {c.slot: c.value for c in extract_turn(Turn("e1", "user", text))}


def _contents(text: str) -> list[str]:
    return [c.content for c in extract_turn(Turn("e1", "user", text))]


# --- a dropped first-person subject ("been on Helix for a month", "搬到厦门了") -------------------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("been on Emacs since the spring, honestly not going back", "user.editor", "emacs"),
        ("relocated to Ghent over the summer, the commute is short now", "user.location", "Ghent"),
        ("changed roles in May, now on the billing team", "user.team", "billing team"),
        ("just joined Miro as a staff engineer", "user.employer", "Miro"),
        ("上个月搬到厦门了，离海边很近", "user.location", "厦门"),
        ("从下周起转岗到风控组，交接文档写好了", "user.team", "风控组"),
        ("平时用的是 Neovim，插件不多", "user.editor", "neovim"),
    ],
)
def test_a_statement_whose_first_person_subject_was_dropped_is_the_users(
    text: str, slot: str, value: str
) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    "text",
    [
        "use pnpm for the install step",  # an imperative: a base-form verb is not a dropped subject
        "用 pnpm 重新装一下依赖",
        "moved the button to the left, can you check the layout?",  # a one-off action names no slot value
    ],
)
def test_an_imperative_or_a_one_off_action_is_not_a_dropped_subject(text: str) -> None:
    assert not {s for s in _slots(text) if s and s.startswith("user.")}


def test_a_negated_verb_after_a_comma_is_no_contrast_with_another_value() -> None:
    found = extract_turn(Turn("e1", "user", "been on Sublime Text for weeks now, not going back"))
    assert [(c.slot, c.value, c.tier.value) for c in found] == [("user.editor", "sublime", "worth")]


# --- a change that names the value it leaves ("got rid of Heroku, it's Render now") ---------------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("we got rid of Travis, it's all CircleCI now", "project.ci", "circleci"),
        ("tore out MobX last year, it's Zustand now", "project.state_management", "zustand"),
        ("Memcached 已经下掉了，现在全走 Redis", "project.cache", "redis"),
        ("我们已经不用 Webpack 了，全部换成 Vite", "project.bundler", "vite"),
        ("we build with Vite, never webpack", "project.bundler", "vite"),
    ],
)
def test_the_value_a_change_leaves_is_never_the_current_one(text: str, slot: str, value: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert [(c.slot, c.value) for c in found if c.slot == slot] == [(slot, value)]


@pytest.mark.parametrize(
    ("text", "new", "old"),
    [
        ("we moved the monorepo to Yarn, so stop suggesting npm ci", "Yarn", "npm"),
        ("仓库已经迁到 Gitea 了，以后别再给我 GitHub 的链接", "Gitea", "GitHub"),
    ],
)
def test_a_rule_about_the_value_a_change_left_keeps_the_change_with_it(text: str, new: str, old: str) -> None:
    rules = [c for c in extract_turn(Turn("e1", "user", text)) if c.slot is None]
    assert rules and all(new in c.content and old in c.content for c in rules)


def test_no_longer_using_a_tool_is_a_change_of_state_not_a_rule_for_the_agent() -> None:
    found = extract_turn(Turn("e1", "user", "我们早就不用 Jenkins 了"))
    assert not [c for c in found if c.kind.value == "procedural"]


# --- a slot named by its noun, a copula, a name ("CI is Woodpecker", "我们调度用的是 Airflow") --------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("our issue tracker is YouTrack, tickets are in English", "project.tracker", "youtrack"),
        ("CI is Concourse and the deploys are manual", "project.ci", "concourse"),
        ("the container registry is Harbor", "project.registry", "harbor"),
        ("Warehouse is Redshift, transforms run nightly", "project.warehouse", "redshift"),
        ("我们 CI 是 Woodpecker，镜像自己构建", "project.ci", "woodpecker"),
        ("调度平台用的是 Airflow，帮我写个 DAG", "project.workflow", "airflow"),
        ("项目管理工具是禅道", "project.tracker", "zentao"),
        ("our orchestrator is Flyte", "project.workflow", "flyte"),  # a name the vocabulary does not know
    ],
)
def test_a_slot_named_by_its_noun_takes_the_name_after_the_copula(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    "text",
    [
        "the database is slow again",  # no name after the copula
        "is the tracker Jira or Linear?",  # a question
        "if the registry were Harbor, would that work?",  # a hypothetical
        "my colleague's editor is Emacs",  # someone else's
        "如果数据库是 TiDB 会怎样",
    ],
)
def test_a_noun_with_a_copula_and_no_stated_name_is_no_slot_value(text: str) -> None:
    assert not [s for s in _slots(text) if s]


# --- standing rules in more phrasings, both languages -----------------------------------------------------------


def _rules(text: str) -> list[str]:
    return [
        c.content
        for c in extract_turn(Turn("e1", "user", text))
        if c.tier.value == "must" and c.kind.value == "procedural"
    ]


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("favour small pure functions over classes", "pure functions"),  # a verb that is a rule by itself
        ("steer clear of regex for parsing HTML", "regex"),
        ("stick with the stdlib logging module", "logging"),
        (
            "whenever you name branches, kebab-case and a ticket id first",
            "kebab-case",
        ),  # a spec of the output
        ("when you suggest commands for me, no sudo and no curl pipes", "sudo"),
        ("pls no jQuery answers", "jQuery"),  # asked for, no qualifier needed
        ("I need SI units throughout", "SI units"),  # a requirement made standing by its scope
        ("I want docstrings in every function", "docstrings"),
        ("Never US date formats, always ISO", "US date"),  # "US" in capitals is the country
        ("改代码的时候别动不动就加新依赖", "新依赖"),  # "动不动" is no "动" (move)
        ("给示例的时候带上类型注解", "类型注解"),  # a condition on the output, no rule word
        ("解释的时候少用缩写", "缩写"),  # 少用: use less
        ("优先用内置函数，实在不行再引库", "内置函数"),
        ("有条规矩你要知道：晚上十点以后不许发版", "十点"),  # a rule after its label
        ("组里的约定是提交信息用英文写", "英文"),
        ("函数名统一用小驼峰，注释用中文就行", "小驼峰"),  # conventions as topic and comment
        ("函数名统一用小驼峰，注释用中文就行", "注释"),
        ("第三，所有接口都不许返回裸字符串", "裸字符串"),  # a topic, then the rule word, in a later clause
        ("I don't want any disclaimers in the answers", "disclaimers"),  # what the user does not want
        ("I never want you to run migrations for me", "migrations"),
        ("you're not allowed to rebase shared branches", "rebase"),  # a modal on "you"
        ("under no circumstances log card numbers", "card numbers"),
        ("only ever use prepared statements", "prepared statements"),
        ("changelog entries are mandatory for every release", "entries"),  # an obligation on a thing
        ("API keys are never hardcoded", "API keys"),  # a practice in the passive
        ("our convention is kebab-case for file names", "kebab-case"),  # a labelled convention
        ("cut the small talk in your replies", "small talk"),  # about all the agent's output
        ("我不希望你在回复里用英文缩写", "英文缩写"),
        ("不用给我讲历史背景", "历史背景"),
        ("集成测试是必须的", "集成测试"),
        ("生产密码从来不写进配置文件", "生产密码"),
        ("合并之前务必先跑完整测试", "完整测试"),  # 先: first in a sequence after a condition, not "for now"
    ],
)
def test_a_standing_rule_is_must_in_its_own_words(text: str, word: str) -> None:
    assert any(word in rule for rule in _rules(text)), _contents(text)


@pytest.mark.parametrize(
    "text",
    [
        "when you get a chance, the logs are below",  # a condition, then no specification
        "写代码的时候我发现一个奇怪的 bug",  # what happened while writing, not how to write
        "我家猫叫团子，特别能吃",  # 特别 holds 别, no "don't"
        "我在地铁上，回复慢了别介意",  # comfort, not a rule
        "日志写得有点乱",  # a topic and a verb, but no convention
        "which is why the build broke",  # a relative clause, no rule
        "I don't want to deal with this today",  # the user's mood, not a rule for the agent
        "Lisbon is a must-visit city",
        "you can't be serious",
        "the rule is simple",
        "let me know if you need any suggestions",
        "我不想今天加班",
        "他从不迟到",
    ],
)
def test_near_misses_of_a_standing_rule_are_no_rule(text: str) -> None:
    assert _rules(text) == []


def test_which_is_why_opens_a_relative_clause_not_a_question() -> None:
    text = "Our readers are in Australia, which is why I need metric units throughout."
    assert any("metric units" in rule for rule in _rules(text))


def test_a_mixed_remember_request_keeps_what_follows() -> None:
    found = extract_turn(Turn("e1", "user", "remember 一下：季度汇报每季度末交给 Omar"))
    assert [(c.tier.value, c.content) for c in found] == [("must", "季度汇报每季度末交给 Omar。")]


def test_an_english_verb_of_liking_after_the_chinese_subject_is_a_preference_not_a_rule() -> None:
    found = extract_turn(Turn("e1", "user", "我 prefer 组合式写法"))
    assert [(c.tier.value, c.category.value) for c in found] == [("worth", "preference")]


# --- the user's setup in more shapes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        # an aside in parentheses stays inside its clause
        ("my side project (a tiny recipe site, maybe 50 users) runs on Render", "project.hosting", "render"),
        ("day to day it's mostly Elixir for me", "project.language", "elixir"),  # "for me" says whose
        (
            "对了我们 Python 还是 3.8，新语法别用",
            "project.language",
            "python",
        ),  # a lead-in before the subject
        ("我们的图片都存在 COS 上", "project.storage", "cos"),  # 存在 ... 上: where things are kept
        ("we tore Webpack out in May and went with Vite", "project.bundler", "vite"),  # "tore X out"
        ("CI 改用 Buildkite 了，the old Jenkins box is gone", "project.ci", "buildkite"),  # "X is gone"
    ],
)
def test_the_users_setup_is_read_through_asides_lead_ins_and_removals(
    text: str, slot: str, value: str
) -> None:
    assert [(c.slot, c.value) for c in extract_turn(Turn("e1", "user", text)) if c.slot == slot] == [
        (slot, value)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "we use Flask and FastAPI side by side",
        "I'm on Fedora with WSL for work",
        "我们前端用 Svelte 和 Vue 3",
    ],
)
def test_two_values_of_a_slot_in_one_sentence_are_one_memory_that_names_both(text: str) -> None:
    slotted = [c for c in extract_turn(Turn("e1", "user", text)) if c.slot]
    assert len(slotted) == 1  # neither replaces the other; a later value of the slot retires both
    tools = [t for t in ("Flask", "FastAPI", "Fedora", "WSL", "Svelte", "Vue") if t in text]
    assert all(t in slotted[0].content for t in tools)


def test_an_alternative_question_without_its_mark_states_no_choice() -> None:
    assert not [c for c in extract_turn(Turn("e1", "user", "我们用 Redis 还是 Memcached 好")) if c.slot]


# --- what is not the user's own fact -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "our biggest rival Parcelly is on Rails apparently",  # hearsay
        "supposedly the new team lead uses Emacs",
        "our vendor hosts everything on Azure",  # someone else's setup
        "the client's stack is Angular with .NET",
        "竞品好像是用 Rust 写的",
        "听说甲方那边用的是 Oracle",
        "友商的后端是 Java",
    ],
)
def test_hearsay_and_other_parties_setups_are_not_the_users(text: str) -> None:
    assert extract_turn(Turn("e1", "user", text)) == []


# --- who the user is, told in passing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        (
            "I'm Noor, QA lead at a travel startup called Wayfarer, based in Porto",
            "user.employer",
            "Wayfarer",
        ),
        ("I work for a tiny design studio called Foldline", "user.employer", "Foldline"),
        ("I'll be a data scientist at Meridian Labs from June", "user.employer", "Meridian Labs"),
        ("as a nurse in pediatrics I work odd shifts", "user.job", "nurse in pediatrics"),
        ("我在拼多多做搜索推荐", "user.employer", "拼多多"),
        ("我在一家基金公司做风控", "user.job", "风控"),
        ("我在一家做跨境物流的公司上班，公司叫云舟", "user.employer", "云舟"),
        ("my native language is Tagalog", "user.native_language", "Tagalog"),
        ("我的母语是闽南语", "user.native_language", "闽南语"),
        ("我这台是 Fedora，装东西老报错", "user.os", "fedora"),
        ("我这边 ThinkPad 装的 Ubuntu", "user.os", "ubuntu"),
        ("my dev box runs Arch", "user.os", "arch linux"),
    ],
)
def test_who_the_user_is_in_passing_fills_its_slot(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("writing my PhD dissertation on coral bleaching at James Cook University", ["coral bleaching"]),
        ("for my dissertation (MA linguistics, Leiden) I need a corpus tool", ["MA linguistics"]),
        ("我在读博，方向是蛋白质折叠", ["读博", "蛋白质折叠"]),
        ("my English is a bit rusty", ["English"]),
        ("我日语一般，看文档比较吃力", ["日语一般"]),
        ("my son Mateo is 4 and can't have dairy", ["Mateo", "dairy"]),
        ("我们家不吃香菜", ["不吃香菜"]),
        ("我家三个孩子，一个两岁一个五岁一个九岁", ["三个孩子"]),
        ("our family doesn't eat beef", ["beef"]),
    ],
)
def test_a_fact_about_the_user_keeps_what_it_says(text: str, words: list[str]) -> None:
    contents = _contents(text)
    assert any(all(w in c for w in words) for c in contents), contents


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("我在家做饭呢，等下再说", "user.job"),  # what the user is doing, not a line of work
        ("我在公司加班", "user.job"),
        ("Honestly, my brother is the one who codes", "user.family.brother"),
    ],
)
def test_the_moment_is_not_who_the_user_is(text: str, wrong: str) -> None:
    assert wrong not in _slots(text)


def test_a_job_told_with_the_employer_keeps_the_employer_out_of_the_jobs_words() -> None:
    found = {c.slot: c.content for c in extract_turn(Turn("e1", "user", "我在星河科技做后端"))}
    assert found["user.employer"] == "用户在星河科技工作。" and "星河" not in found["user.job"]


# --- lasting statements in the user's words, more subjects and predicates ------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("our nightly build gets kicked off at 2am UTC", ["2am"]),  # gets: a stative verb
        ("most of our users are on Android tablets", ["Android tablets"]),  # a quantified subject
        ("the main product is a note-taking app for lawyers", ["note-taking app"]),
        ("we gave up on GraphQL last year, too much overhead", ["GraphQL"]),  # decided, whenever it was
        ("I commute by train, about an hour each way", ["train"]),
        ("my kids can't have peanuts", ["peanuts"]),  # the household's needs
        ("去年我们放弃了 Serverless，现在全是容器", ["Serverless"]),  # a time word before the subject
        ("我们的客户主要在欧洲", ["欧洲"]),  # how things are spread
        ("所有东西我们都自建", ["自建"]),
        ("每个 MR 都会跑一遍安全扫描", ["安全扫描"]),
        ("我跟室友住在南京", ["南京"]),  # a companion between the subject and the verb
        ("我在初中教数学", ["教数学"]),
        ("我在学西班牙语，刚入门", ["西班牙语"]),
        ("我自己开了个咖啡馆", ["咖啡馆"]),
        ("我有点散光，晚上看屏幕吃力", ["散光"]),
        ("日志都打到 Loki，告警走钉钉", ["Loki"]),
        ("我们部署在 k8s 上，用 Harbor 放镜像", ["Harbor"]),  # the next clause keeps the subject
    ],
)
def test_a_lasting_statement_is_kept_in_the_users_words(text: str, words: list[str]) -> None:
    contents = _contents(text)
    assert any(all(w in c for w in words) for c in contents), contents


@pytest.mark.parametrize(
    "text",
    [
        "My brother is a pilot.",  # someone else's job
        "my sister is vegan and lives in Bergen",  # a relative outside the household
        "我老婆是护士",
        "我们公司在深圳",  # where the company is, not how the user's things are spread
        "I'm reading a great book right now",
        "we've come a long way",
    ],
)
def test_someone_elses_facts_and_the_moment_are_no_lasting_statement(text: str) -> None:
    assert _contents(text) == []


# --- named as the user named it; said in passing inside requests ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "we're on Postgres 16 for everything",
            ["PostgreSQL", "Postgres"],
        ),  # the user's own name for the tool
        ("我们团队用钉钉沟通", ["钉钉"]),
        ("我们用 k8s 部署", ["k8s"]),
        ("as someone who writes mostly Elixir, how would you do this in Go?", ["Elixir"]),
        ("my son has a gluten intolerance so nothing with wheat please", ["gluten"]),  # the household's needs
        ("我儿子对花生过敏，菜谱里别放", ["花生过敏"]),
        ("我们家去年搬到了厦门，孩子上学的事怎么办", ["厦门"]),
        ("FYI I'm now heading the mobile team, so expect Swift questions", ["mobile team"]),
        ("我现在带移动端组，之后 iOS 的问题会比较多", ["移动端组"]),
    ],
)
def test_what_is_said_in_passing_keeps_the_users_words(text: str, words: list[str]) -> None:
    contents = _contents(text)
    assert any(all(w in c for w in words) for c in contents), contents


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("我已经换成 Helix 了，Go 的 LSP 怎么配", "Go"),  # the question after the change asks about Go
        ("我用的是 ThinkPad，Docker 镜像该选哪个", "Docker"),
    ],
)
def test_a_question_after_a_comma_lends_no_value_to_the_statement_before_it(text: str, asked: str) -> None:
    assert not any(asked in c for c in _contents(text))


def test_what_will_happen_is_no_standing_rule() -> None:
    assert _rules("之后 Kafka 的问题会比较多") == []


# --- a change told in passing, in more shapes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        (
            "we ditched Oracle, everything is on MariaDB now",
            "project.database",
            "mariadb",
        ),  # the value after it
        (
            "I don't use macOS anymore, I'm completely on Linux now",
            "user.os",
            "linux",
        ),  # "completely" as an adverb
        ("I've been pescatarian since spring", "user.diet", "pescatarian"),  # a perfect of state
        ("我从去年开始吃素了", "user.diet", "vegetarian"),
        ("我现在在苏州了，之前在无锡", "user.location", "苏州"),  # 了 ends the place
    ],
)
def test_a_change_told_in_passing_gives_the_new_value(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    "text", ["we ruled out Cassandra, too much ops", "DynamoDB was evaluated and rejected"]
)
def test_a_value_rejected_is_no_value_of_the_slot(text: str) -> None:
    assert not [s for s in _slots(text) if s]


@pytest.mark.parametrize(
    ("text", "word"),
    [
        (
            "save this: the staging bastion is bastion-2.internal",
            "bastion-2",
        ),  # a weak verb made explicit by ":"
        ("nope, the retro is on Thursdays, I mixed it up", "Thursdays"),  # a correction owned as a mistake
        ("don't you dare delete the fixtures", "fixtures"),
        ("please always re-run the linter after edits", "linter"),  # a hyphenated verb
    ],
)
def test_requests_and_corrections_in_more_phrasings_are_must(text: str, word: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert any(c.tier.value == "must" and word in c.content for c in found), [c.content for c in found]


def test_a_weak_note_without_a_colon_is_still_task_talk() -> None:
    assert extract_turn(Turn("e1", "user", "note that the parser returns None on empty input")) == []


@pytest.mark.parametrize(
    "text",
    [
        "我在试着装 Kafka，一直报错",  # trying, right now: the moment
        "我朋友的公司用 Supabase",  # someone else's company
        "同事的项目用 Svelte",
        "I'm trying to get Redis running locally",
    ],
)
def test_trying_now_and_someone_elses_setup_are_not_the_users_stack(text: str) -> None:
    assert extract_turn(Turn("e1", "user", text)) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("这阵子开始吃蛋和奶了，现在算蛋奶素", "lacto_ovo"),  # the state now, its subject dropped
        ("我是蛋奶素", "lacto_ovo"),
        ("I'm ovo-lacto vegetarian now", "lacto_ovo"),
        ("我吃纯素", "vegan"),
    ],
)
def test_a_diet_is_one_value_of_its_slot(text: str, value: str) -> None:
    assert _slots(text).get("user.diet") == value


# --- round 5: polite and indirect rules for the agent, ban lists, rules after "所以" / "麻烦你以后" --------------


def _musts(text: str) -> list[str]:
    return [c.content for c in extract_turn(Turn("e1", "user", text)) if c.tier.value == "must"]


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("Would you mind not hardcoding timeouts in the Go you write?", "hardcoding"),
        ("I'd appreciate it if you didn't add type: ignore comments.", "type: ignore"),
        ("Kindly refrain from suggesting global variables.", "global variables"),
        ("I can't stand it when responses repeat my question back to me.", "repeat"),
        ("it's a two-person shop, so keep suggestions boring — no Kubernetes, no service mesh", "service mesh"),
        ("we deploy on bare metal, so give me systemd units, not docker files", "systemd"),
        ("我们是内网环境，所以别给我需要联网的安装命令", "联网"),
        ("麻烦你以后写正则都附上测试用例", "测试用例"),
        ("这个项目不能直接改 main 分支，必须提 PR", "main"),
        ("用户不懂技术，所以解释的时候少用点缩写", "缩写"),
        ("記住，我們的日誌一律用 UTC 時間", "UTC"),
    ],
)
def test_a_standing_rule_said_politely_or_after_its_reason_is_must(text: str, word: str) -> None:
    assert any(word.lower() in content.lower() for content in _musts(text)), _contents(text)


@pytest.mark.parametrize(
    "text",
    [
        "been on Sublime for a while, not going back",  # "not <verb>ing" without "you": no request
        "so give me the full file this time",  # the piece of work at hand
        "so show me the commands again",
        "so give me the config files",
        "no worries, no rush",  # comfort, not bans
        "所以我今天没写测试",  # a reason, no rule word
    ],
)
def test_near_misses_of_polite_rules_are_no_rules(text: str) -> None:
    assert _musts(text) == []


# --- changes told as the ground for something else, and values named as left -------------------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("now that we're on Bun, is the test runner built in?", "project.package_manager", "bun"),
        ("ever since we moved to Netlify the previews are instant", "project.hosting", "netlify"),
        ("we finished migrating to Gradle last sprint, Maven is gone", "project.build_tool", "gradle"),
        ("the move to Azure is complete, the AWS account gets closed next week", "project.cloud", "azure"),
    ],
)
def test_a_change_told_in_passing_names_the_new_value(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("the Heroku app gets shut down on Monday", "heroku"),
        ("Jenkins was decommissioned in March", "jenkins"),
        ("阿里云那边下个月停掉", "aliyun"),
    ],
)
def test_a_value_named_as_shut_down_is_not_current(text: str, left: str) -> None:
    assert left not in _slots(text).values()


# --- corrections said with impatience, labels for the agent, scopes over all the work -----------------------


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("no, it's pytest-xdist here, not nose — we run everything in parallel", "pytest-xdist"),
        ("again: it's `just deploy`, not `make deploy`", "just deploy"),
        ("I told you before — the staging db is on port 6543, not 5432", "6543"),
        ("我都说过好几次了：日志级别用 WARN，不是 INFO", "WARN"),
        ("note for you: the CDN purge takes about ten minutes to propagate", "ten minutes"),
        ("rule of thumb for you: every new endpoint gets a rate limit", "rate limit"),
        ("Write dates as ISO 8601 in all generated reports", "ISO 8601"),
        ("we ship to Windows users so don't give me bash-only scripts", "bash-only"),
        ("别碰 vendor/ 目录里的代码，那是第三方的", "vendor"),
        ("不用每次都问我要不要格式化，直接格式化就行", "格式化"),
        ("from now on 所有日志的时间都用 UTC", "UTC"),
    ],
)
def test_a_correction_or_a_rule_in_these_forms_is_must(text: str, word: str) -> None:
    assert any(word.lower() in content.lower() for content in _musts(text)), _contents(text)


@pytest.mark.parametrize(
    "text",
    [
        "别动，我马上回来",  # "don't move": nothing for the agent
        "again, thanks for the help",
        "我们要向客户汇报进度",
    ],
)
def test_near_misses_of_these_forms_are_no_rules(text: str) -> None:
    assert _musts(text) == []


# --- the current value told in passing: versions, managers, "everything is X now" ------------------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("now that the workers are on Python 3.13, can I use the new REPL?", "project.language", "python 3.13"),
        ("we upgraded MySQL to 8.4 over the weekend", "project.database", "mysql 8.4"),
        ("Node 升到 24 以后 fetch 的行为变了吗", "project.runtime", "node.js 24"),
        ("npm is gone, everything is Bun now", "project.package_manager", "bun"),
        ("since the reorg my lead is Priyanka", "user.manager", "Priyanka"),
        ("I report to Okafor these days", "user.manager", "Okafor"),
        ("老张调走了，现在我汇报给周敏", "user.manager", "周敏"),
        ("现在组长是何琳，review 都找她", "user.manager", "何琳"),
    ],
)
def test_the_current_value_told_in_passing_fills_its_slot(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


def test_a_change_taken_as_given_in_a_question_is_sure_enough_to_replace() -> None:
    found = extract_turn(Turn("e1", "user", "now that we're on Vue 3, do I still need the compat build?"))
    vue = [c for c in found if c.slot == "project.framework"]
    assert vue and vue[0].value == "vue 3" and vue[0].confidence >= 0.7
    asked = extract_turn(Turn("e1", "user", "should we move to Vue 3 this year?"))
    assert not [c for c in asked if c.slot == "project.framework" and c.confidence >= 0.7]


# --- a change of the user's own situation that no slot names, with its new value -----------------------------


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("heads up: we moved the status page to Instatus", "Instatus"),
        ("got a Framework 13 last week, so setup questions incoming", "Framework 13"),
        ("I'm back to three office days a week since September", "three office days"),
        ("值班表换成 PagerTree 了，明天开始", "PagerTree"),
        ("我们把仓库名改成 atlas-core 了", "atlas-core"),
        ("儿子上二年级了，数学开始难了", "二年级"),
    ],
)
def test_a_change_of_the_users_situation_is_kept_in_its_own_words(text: str, word: str) -> None:
    assert any(word.lower() in content.lower() for content in _contents(text)), _contents(text)


@pytest.mark.parametrize(
    "text",
    [
        "这次先把 learning rate 调到 0.001 跑一下看看",
        "can you move the Save button to the Toolbar component",
        "the price changed to 40 dollars overnight",
        "if we moved to Azure, would the credits carry over",
    ],
)
def test_a_one_off_or_someone_elses_change_is_not_kept(text: str) -> None:
    assert _contents(text) == []


def test_had_better_is_a_decision_not_an_alternative_question() -> None:
    assert _slots("以后还是用英文回复吧").get("user.reply_language") == "en"
    assert _contents("用 Flask 还是 FastAPI 好") == []


# --- a premise clause before a question or request ("given that our app is X, should ...?") ----------------------


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("given that our billing service is Kotlin, would Ktor or Spring fit better?", "Kotlin"),
        ("since the whole team is on Neovim, can you suggest a shared config?", "Neovim"),
        ("seeing as our API is FastAPI, how should I version the routes?", "FastAPI"),
        ("既然我们后端是 Django，这个接口怎么做分页比较好？", "Django"),
        ("因为我们前端是 Svelte，这个组件库还能用吗？", "Svelte"),
    ],
)
def test_a_premise_clause_is_told_even_when_a_question_follows(text: str, word: str) -> None:
    assert any(word.lower() in content.lower() for content in _contents(text)), _contents(text)


@pytest.mark.parametrize(
    "text",
    [
        "given that their backend is Django, should we use DRF?",  # someone else's setup
        "if our API were FastAPI, since it's async, would it be faster?",  # a hypothetical
        "既然他们用的是 Vue，我们要不要也换？",
    ],
)
def test_a_premise_about_someone_else_or_a_hypothetical_is_not_kept(text: str) -> None:
    assert _contents(text) == []


# --- a standing request asked politely as a question ("would you mind ... from now on?") -----------------------


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("would you mind adding type hints to every function from now on?", "type hints"),
        ("do you mind using British spelling going forward?", "British spelling"),
        ("能不能以后都把 SQL 关键字写成大写？", "大写"),
        ("可以今后回答都附上参考链接吗？", "参考链接"),
    ],
)
def test_a_polite_question_asking_for_conduct_from_now_on_is_a_rule(text: str, word: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert any(word.lower() in c.content.lower() and c.tier.value == "must" for c in found), found


@pytest.mark.parametrize(
    "text",
    [
        "would you mind adding type hints to this function?",  # the task at hand, no "from now on"
        "能不能帮我把这段 SQL 关键字写成大写？",
        "能不能以后再说？",
    ],
)
def test_a_polite_question_about_the_task_at_hand_is_no_rule(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.tier.value == "must"] == []


# --- a requirement on every thing of a kind ("every migration needs a down()") ---------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "going forward, every endpoint needs a rate limit",
        "all public functions require a docstring",
        "each release must have a changelog entry",
    ],
)
def test_a_requirement_on_every_thing_of_a_kind_is_a_rule(text: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert [c.tier.value for c in found] == ["must"], found


@pytest.mark.parametrize(
    "text",
    [
        "every time I deploy, it needs a manual restart",
        "all of these tests need a rewrite",
        "if every service needs a sidecar, is the mesh worth it?",
        "every build needs a clean cache today",
    ],
)
def test_a_one_off_or_hypothetical_need_is_no_rule(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.tier.value == "must"] == []


# --- what the user prefers the agent to do ("I prefer you ask before guessing") -------------------------------


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("I prefer you explain the trade-offs before giving code", "trade-offs"),
        ("I'd rather you use dataclasses than dicts for records", "dataclasses"),
    ],
)
def test_what_the_user_prefers_the_agent_to_do_is_a_rule(text: str, word: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert any(word in c.content and c.tier.value == "must" for c in found), found


@pytest.mark.parametrize(
    "text",
    ["I prefer you fix this file first", "my manager would prefer you use Java", "I prefer tea over coffee"],
)
def test_a_one_off_or_someone_elses_preference_for_the_agent_is_no_rule(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.rule == "en.rule.prefer_you"] == []


# --- a state told with a locative verb ("我们的数仓在 StarRocks 上", "the design system is in Storybook") -------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("我们的缓存在 Memcached 上，过期策略怎么设？", "project.cache", "memcached"),
        ("数仓在 BigQuery 上，这个分区表怎么建", "project.warehouse", "bigquery"),
    ],
)
def test_a_slot_noun_located_in_a_named_value_is_its_state(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize("text", ["数据库在 3 号机上", "他们的数仓在 Snowflake 上", "如果数仓在 BigQuery 上会怎样"])
def test_a_located_state_of_a_number_or_of_someone_else_is_not_kept(text: str) -> None:
    assert _contents(text) == []


def test_a_rule_whose_verb_is_zou_is_not_taken_for_comfort() -> None:
    assert [c.tier.value for c in extract_turn(Turn("e1", "user", "发版必须走审批流程"))] == ["must"]
    assert _contents("你别走啊") == []


# --- a bare rule after a complaint, a noun-phrase rule, a permission for the agent ----------------------------


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("you keep using requests in the examples, how many times, use httpx", "httpx"),
        ("你怎么又给我用 moment 算日期，说了好几遍了，用 dayjs！", "dayjs"),
    ],
)
def test_the_bare_imperative_after_a_complaint_is_a_standing_rule(text: str, word: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert any(word in c.content and c.tier.value == "must" for c in found), found


@pytest.mark.parametrize(
    "text",
    ["我同事说你总是用 print，用 logging 吧", "如果你又用 var 写循环，那就用 let 吧", "用 logger 打一下这个变量"],
)
def test_a_bare_imperative_without_the_users_own_complaint_is_no_rule(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.rule.endswith("complaint_use")] == []


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("metric units for all recipes pls", "metric units"),
        ("single quotes only please", "single quotes"),
        ("the staging cluster is hands-off for you", "staging cluster"),
        ("no force pushes, no rebases on main, ever.", "force pushes"),
    ],
)
def test_a_noun_phrase_rule_or_a_permission_for_the_agent_is_must(text: str, word: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert any(word in c.content.lower() and c.tier.value == "must" for c in found), found


@pytest.mark.parametrize(
    "text",
    [
        "good luck for all exams",
        "weekends only",
        "thanks for all the help please",
        "this file is read-only for you right now",
        "the docs folder is read-only",
    ],
)
def test_a_wish_a_fact_or_a_one_off_permission_is_no_rule(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.tier.value == "must"] == []


def test_a_short_clause_before_the_rule_does_not_hide_it() -> None:
    found = extract_turn(Turn("e1", "user", "it's 2026, use f-strings in all Python you write for me"))
    assert any("f-strings" in c.content and c.tier.value == "must" for c in found), found


def test_the_speakers_own_aside_is_not_reported_speech() -> None:
    found = extract_turn(Turn("e1", "user", "顺便说一句，以后提交信息都要用英文写"))
    assert [c.tier.value for c in found] == ["must"], found


# --- precision: a reply style for the moment, someone else's wish ------------------------------------------------


def test_so_before_the_asked_style_does_not_negate_it() -> None:
    assert _slots("keep answers brief, so keep replies short please").get("user.reply_style") == "concise"
    assert _slots("your explanations are so long").get("user.reply_style") == "concise"


@pytest.mark.parametrize(
    "text",
    [
        "I'm on a bus at the moment so keep replies short pls",
        "I'm tired today, so keep answers short",
        "our VP wants every team on Nx by spring",
        "our manager wanted us on Bitbucket",
    ],
)
def test_a_style_for_the_moment_or_someone_elses_wish_is_not_kept(text: str) -> None:
    assert _contents(text) == []


# --- updates: the slot a change names, a move taken as given, a new diet after the old one -------------------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("we've since moved the warehouse to BigQuery, so the DDL changes", "project.warehouse", "bigquery"),
        ("ever since joining the platform team I'm on call twice a month", "user.team", "platform team"),
        ("自从调到增长组，每天都在看漏斗数据", "user.team", "增长组"),
        ("we moved our infra code to Pulumi last quarter", "project.iac", "pulumi"),
        ("I'm not keto anymore, vegetarian now", "user.diet", "vegetarian"),
    ],
)
def test_a_change_fills_the_slot_it_names(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


def test_a_change_to_a_place_to_run_keeps_the_places_slot() -> None:
    assert _slots("we moved the database to GCP last year").get("project.cloud") == "gcp"


@pytest.mark.parametrize(
    "text",
    [
        "since joining the company I've learned a lot",
        "自从他调到增长组，我们就很少聊了",
        "I'm no longer vegan, my brother is vegetarian though",
    ],
)
def test_a_move_or_diet_not_the_users_own_fills_no_slot(text: str) -> None:
    slots = _slots(text)
    assert "user.team" not in slots and slots.get("user.diet") in (None, "none")


def test_a_tool_is_no_place_the_user_moved_to() -> None:
    assert "user.location" not in _slots("after the licence change we moved to OpenTofu")


# --- updates told as a finished change, a time in a statement, error tracking and monitoring as slots ---------


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("the Vue 3 upgrade landed last week, so how do I port this mixin?", "project.framework", "vue 3"),
        ("the Bugsnag migration is finished, update the alert links pls", "project.error_tracking", "bugsnag"),
        ("crash reporting is Honeybadger", "project.error_tracking", "honeybadger"),
        ("alerting aside, monitoring's on Grafana", "project.monitoring", "grafana"),
        ("异常监控从 Sentry 换成了自研的 Lighthouse 平台", "project.error_tracking", "lighthouse"),
        ("we relocated again, Porto this time", "user.location", "Porto"),
    ],
)
def test_a_finished_change_or_a_named_slot_fills_the_slot(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    "text",
    ["the api upgrade landed yesterday", "should the Sentry migration be finished first?", "I moved again, Friday this time"],
)
def test_a_change_without_a_named_value_or_asked_fills_no_slot(text: str) -> None:
    slots = _slots(text)
    assert slots.get("user.location") is None
    assert all(value is None for slot, value in slots.items() if slot), slots


def test_a_time_of_day_is_not_a_clause_break() -> None:
    assert any("11:45" in c for c in _contents("we moved the weekly sync to 11:45 starting in March"))


def test_a_product_named_after_its_maker_is_the_product() -> None:
    text = "since we moved logging to Grafana Loki, queries are faster"
    assert "project.monitoring" not in _slots(text)
    assert any("Loki" in c for c in _contents(text))


# --- remember verbs, a slot given by "as my", hobbies, skills and teams in Chinese --------------------------------


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("jot this down for me: the wifi password at the lab is on the fridge", "wifi password"),
        ("write this down: invoices go out on the 3rd", "invoices"),
    ],
)
def test_a_jot_down_request_is_a_remember_request(text: str, word: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert any(word in c.content.lower() and c.tier.value == "must" for c in found), found


@pytest.mark.parametrize(
    "text", ["can you write it down in the README?", "I wrote it down somewhere", "jot down ideas for a name?"]
)
def test_writing_something_down_as_a_task_is_no_remember_request(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.tier.value == "must"] == []


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("been using Neovim as my editor for years", "user.editor", "neovim"),
        ("we went with Woodpecker as our CI", "project.ci", "woodpecker"),
    ],
)
def test_a_value_given_its_slot_by_as_my_fills_it(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    "text",
    ["if I used Zed as my editor, would it work?", "my colleague uses Vim as his editor", "should we pick Drone as our CI?"],
)
def test_a_hypothetical_or_someone_elses_as_my_fills_no_slot(text: str) -> None:
    assert not {s for s in _slots(text) if s in ("user.editor", "project.ci")}


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("我周末喜欢骑车，一般骑五十公里", "骑车"),
        ("我的爱好是攀岩", "攀岩"),
        ("我之前写 Java，Kotlin 不太熟", "Kotlin"),
        ("我们组叫天枢组，做推荐系统", "天枢组"),
        ("我 manager 是 Laura，她很看重测试", "Laura"),
    ],
)
def test_chinese_hobbies_skills_teams_and_managers_are_kept(text: str, word: str) -> None:
    assert any(word in content for content in _contents(text)), _contents(text)


@pytest.mark.parametrize("text", ["他的爱好是攀岩", "这个函数不太熟", "他对 Rust 很熟", "我周末在苏州"])
def test_someone_elses_hobby_or_skill_or_a_weekend_place_is_not_kept(text: str) -> None:
    assert not [c for c in _contents(text) if "爱好" in c or "熟" in c or "苏州" in c]


# --- a rule over all of a kind with 都, tools after a job ("mostly X + Y"), a tool "here" ----------------------


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("所有金额都按人民币显示给我", "人民币"),
        ("回复里的 SQL 我希望都用大写关键字", "大写"),
    ],
)
def test_a_rule_over_all_of_a_kind_with_dou_is_must(text: str, word: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert any(word in c.content and c.tier.value == "must" for c in found), found


@pytest.mark.parametrize("text", ["所有人都用飞书", "所有测试都按时跑完了", "这个文件的代码都用 tab 缩进", "我希望你都能开心"])
def test_a_fact_about_everyone_a_past_event_or_a_one_off_with_dou_is_no_rule(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.tier.value == "must"] == []


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("I'm an analytics engineer at a bank, mostly Dagster + dbt", "project.workflow", "dagster"),
        ("Svelte here, how do I share state between pages?", "project.framework", "svelte"),
        ("Laravel shop here (still on 10), can you check this query?", "project.framework", "laravel"),
    ],
)
def test_tools_said_in_passing_after_a_job_or_as_here_fill_their_slot(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    "text",
    [
        "my friend is an analytics engineer, mostly Dagster + dbt",
        "the error here is from Svelte",
        "svelte here?",
        "Svelte here is slow",
    ],
)
def test_someone_elses_tools_or_a_tool_named_as_a_place_fill_no_slot(text: str) -> None:
    assert not {s for s in _slots(text) if s in ("project.workflow", "project.framework")}


@pytest.mark.parametrize("text", ["新服务现在都用 Go 写了，老的慢慢迁", "新代码已经都用 Kotlin 写"])
def test_a_state_told_with_dou_is_no_rule(text: str) -> None:
    assert [c for c in extract_turn(Turn("e1", "user", text)) if c.rule == "zh.rule.all_do"] == []


# --- round 7 as dev: suppositions opened by "say" / "suppose I were", leading a team, restated rule pieces ------


@pytest.mark.parametrize(
    "text",
    [
        "Say we moved the API to Deno — would the Dockerfile change much?",
        "ok, say I relocated to Porto next spring, which timezone would the cron use?",
        "Suppose I were on Windows instead of macOS, would the paths still work?",
        "假如我们从 yarn 换成 pnpm，lockfile 要怎么迁？",
    ],
)
def test_a_supposition_stores_no_value(text: str) -> None:
    assert not [s for s in _slots(text) if s]


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("I'd say we use Poetry for every service", "project.package_manager", "poetry"),  # "I'd say": an opinion
        ("I'm on Fedora now instead of Ubuntu", "user.os", "fedora"),  # no supposition before the value
    ],
)
def test_a_say_that_opens_no_supposition_keeps_the_value(text: str, slot: str, value: str) -> None:
    assert _slots(text).get(slot) == value


@pytest.mark.parametrize(
    "text",
    [
        "I'm Priya, I lead the growth analytics team at a retailer",
        "btw I run the mobile team these days, so loop me in",
        "I manage the billing squad, mostly Go services",
    ],
)
def test_a_user_who_leads_a_team_leads_it_and_a_pronoun_is_no_role(text: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert not [c for c in found if c.slot == "user.job"]  # "I lead" is a verb, not "works as an I lead"
    team = [c.content for c in found if c.slot == "user.team"]
    assert len(team) == 1 and team[0].startswith("The user leads the ")


def test_a_member_of_a_team_is_on_it() -> None:
    assert _contents("I'm on the payments team since May") == ["The user is on the payments team."]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Always write dates as ISO 8601 in logs. Never locale formats.", "never locale formats"),
        ("Remember: squash commits when you land a branch. Never rebase.", "never rebase"),
    ],
)
def test_a_bare_negated_fragment_after_a_rule_is_kept_with_that_rule(text: str, kept: str) -> None:
    found = _contents(text)
    assert len(found) == 1 and kept in found[0].lower()


@pytest.mark.parametrize("text", ["Never mind. Thanks anyway.", "No worries.", "Not sure.", "Not yet."])
def test_a_negated_formula_is_no_rule(text: str) -> None:
    assert _contents(text) == []


def test_a_bare_no_tool_is_a_prohibition_of_that_tool() -> None:
    assert _contents("no Lodash. seriously.") == ["Do not use Lodash."]


def test_a_negated_formula_after_a_rule_does_not_join_it() -> None:
    assert _contents("Always pin versions in the Dockerfile. No worries.") == [
        "Always pin versions in the Dockerfile."
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Note this: the nightly export reads from the analytics replica, so no schema changes on it before 6am.",
        "please remember I'm off on Friday the 9th, don't book calls for me then.",
    ],
)
def test_a_rule_piece_inside_the_remembered_sentence_is_not_stored_again(text: str) -> None:
    assert len(_contents(text)) == 1


def test_a_no_with_more_than_a_tool_is_not_that_tools_prohibition() -> None:
    assert "Do not use TypeScript." not in _contents("no enums in TS. ever.")


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("不对不对，我刚刚说错了，Kafka 的分区数是 24 不是 12", "24"),
        ("不对，我前面说的不对，测试环境在成都", "成都"),
        ("Quick fix to what I said earlier: the freeze window is Fridays, not Mondays.", "Fridays"),
    ],
)
def test_a_correction_opened_by_several_markers_or_a_fix_to_what_was_said_is_kept(text: str, kept: str) -> None:
    found = extract_turn(Turn("e1", "user", text))
    assert [c.tier.value for c in found] == ["must"] and kept in found[0].content


@pytest.mark.parametrize("text", ["这个写法对不对", "我刚才说错了一个词，帮我改下", "quick fix to the regex please, it skips dots"])
def test_an_a_not_a_question_or_a_fix_request_is_no_correction(text: str) -> None:
    assert not [c for c in extract_turn(Turn("e1", "user", text)) if c.tier.value == "must"]


@pytest.mark.parametrize("text", ["不对，我说的是下一个文件", "不对不对，我刚刚贴错日志了，应该是下面这段", "no, I pasted the wrong trace"])
def test_a_correction_of_what_was_said_or_pasted_in_the_chat_is_no_fact(text: str) -> None:
    assert _contents(text) == []


@pytest.mark.parametrize(
    ("text", "value", "content"),
    [
        ("been on Helix full time now, uninstalled Sublime Text", "helix", "The user uses Helix."),
        ("switched my editor to Zed, deleted Atom last week", "zed", "The user uses Zed."),
    ],
)
def test_a_tool_named_as_uninstalled_or_deleted_is_the_value_left(text: str, value: str, content: str) -> None:
    found = [c for c in extract_turn(Turn("e1", "user", text)) if c.slot == "user.editor"]
    assert [(c.value, c.content) for c in found] == [(value, content)]


def test_a_tool_used_alongside_is_not_a_value_left() -> None:
    assert _slots("I use Zed with VS Code for notebooks").get("user.editor") == "zed"


@pytest.mark.parametrize(
    ("text", "value"), [("I'm in Sublime Text most days", "sublime"), ("honestly I'm mostly in Neovim", "neovim")]
)
def test_a_user_in_an_editor_uses_it(text: str, value: str) -> None:
    assert _slots(text).get("user.editor") == value


@pytest.mark.parametrize(
    "text", ["the crash is in VS Code, not the terminal", "I'm in a call, open it in Neovim later", "we're in Emacs land"]
)
def test_in_an_editor_said_of_something_else_is_no_editor(text: str) -> None:
    assert "user.editor" not in _slots(text)
