"""The memory store end to end: transcript events -> extraction -> reconciliation -> memories, then search.

One current value per slot with full history and `as_of`, reinforcement instead of duplicates, late events
kept as history, and many workers on the same users at once.
"""

from __future__ import annotations

import itertools
import random
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text

from shared import tasknames
from shared.publisher import TaskPublisher
from tests.services import memory_client, queue_depth, wait_for

pytestmark = pytest.mark.integration

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
FAST = {"MEMORY_DEBOUNCE_IDLE_S": "1"}


def _say(client, user, content, when, session=None):
    session = session or f"s-{uuid.uuid4().hex[:6]}"
    client.emit(user_id=user, session_id=session, content=content, event_time=when)
    client.emit(user_id=user, session_id=session, type="session_end", event_time=when + timedelta(seconds=1))


def _slot_rows(engine, tenant, user, slot):
    with engine.connect() as conn:
        return conn.execute(
            text(
                "SELECT id, value, status, valid_from, valid_to, superseded_by, evidence_count FROM memories "
                "WHERE tenant_id = :t AND user_id = :u AND slot = :s ORDER BY valid_from"
            ),
            {"t": tenant, "u": user, "s": slot},
        ).all()


def _settled(engine, tenant):
    with engine.connect() as conn:
        pending = conn.execute(
            text("SELECT count(*) FROM events WHERE tenant_id = :t AND status = 'pending'"), {"t": tenant}
        ).scalar()
        new = conn.execute(
            text("SELECT count(*) FROM candidates WHERE tenant_id = :t AND status = 'new'"), {"t": tenant}
        ).scalar()
    return pending == 0 and new == 0


def _insert_candidate(  # type: ignore[no-untyped-def]
    engine, tenant: str, content: str, n: int, *, rule: str | None = None
) -> None:
    """A rules candidate for user 'u', as extraction would have stored it, dated T0 + n days."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO candidates (tenant_id, user_id, session_id, op, content, kind, category, tier, "
                "confidence, lang, origin, rule, source_event_ids, event_time) VALUES (:t, 'u', 's', 'remember', "
                ":c, 'semantic', 'preference', 'worth', 0.8, 'en', 'rules', :r, :e, :ts)"
            ),
            {"t": tenant, "c": content, "r": rule, "e": [f"ev-{n}"], "ts": T0 + timedelta(days=n)},
        )


def _search(api_server, api_key, **body):
    r = httpx.post(f"{api_server}/v1/search", json=body, headers={"Authorization": f"Bearer {api_key}"})
    assert r.status_code == 200, r.text
    return r.json()["results"]


@pytest.mark.parametrize(
    "lines",
    [
        [
            "We use Vite for the frontend build.",
            "We switched to webpack last week.",
            "We switched to Vite again.",
        ],
        ["我们用 Vite 打包。", "我们改用 webpack 了。", "我们改用 Vite 了。"],
    ],
    ids=["english", "chinese"],
)
def test_vite_webpack_vite_leaves_one_current_value_with_history_and_as_of(
    lines, start_worker, engine, tenant, redis_url, queue_name, tmp_path, api_server, api_key
):
    start_worker(env=FAST)
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    for day, line in enumerate(lines):
        _say(client, "dev", line, T0 + timedelta(days=day))
        wait_for(
            lambda d=day: len(_slot_rows(engine, tenant, "dev", "project.bundler")) == d + 1,
            timeout_s=40,
            what=f"value {day + 1} reconciled",
        )
    rows = _slot_rows(engine, tenant, "dev", "project.bundler")
    assert [(r.value, r.status) for r in rows] == [
        ("vite", "superseded"),
        ("webpack", "superseded"),
        ("vite", "active"),
    ]
    assert rows[0].valid_to == rows[1].valid_from and rows[1].valid_to == rows[2].valid_from
    assert rows[0].superseded_by == rows[1].id and rows[1].superseded_by == rows[2].id
    with engine.connect() as conn:
        ops = (
            conn.execute(
                text("SELECT op FROM memory_history WHERE tenant_id = :t ORDER BY id"), {"t": tenant}
            )
            .scalars()
            .all()
        )
    assert ops.count("supersede") == 2
    for day, expected in enumerate(["vite", "webpack", "vite"]):
        as_of = (T0 + timedelta(days=day, hours=12)).isoformat()
        hits = [
            h
            for h in _search(api_server, api_key, user_id="dev", query=lines[day], as_of=as_of, k=10)
            if h["slot"] == "project.bundler"
        ]
        assert [h["value"] for h in hits] == [expected], (
            day,
            _search(api_server, api_key, user_id="dev", query=lines[day], as_of=as_of, k=10),
        )
    current = [
        h
        for h in _search(api_server, api_key, user_id="dev", query=lines[0], k=10)
        if h["slot"] == "project.bundler"
    ]
    assert [h["value"] for h in current] == ["vite"]


def test_the_same_fact_five_times_in_two_languages_is_one_memory_with_evidence_five(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    start_worker(env=FAST)
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    sayings = [
        "We use pnpm.",
        "Our package manager is pnpm.",
        "项目用 pnpm。",
        "我们用的是 pnpm。",
        "We are using pnpm in this repo.",
    ]
    for i, line in enumerate(sayings):
        _say(client, "dev", line, T0 + timedelta(hours=i))
    wait_for(
        lambda: (
            _settled(engine, tenant)
            and _slot_rows(engine, tenant, "dev", "project.package_manager")
            and _slot_rows(engine, tenant, "dev", "project.package_manager")[0].evidence_count == 5
        ),
        timeout_s=60,
        what="five confirmations",
    )
    rows = _slot_rows(engine, tenant, "dev", "project.package_manager")
    assert [(r.value, r.status, r.evidence_count) for r in rows] == [("pnpm", "active", 5)]


def test_out_of_order_delivery_ends_with_the_newer_value_current(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    start_worker(env=FAST)
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    _say(client, "ana", "I moved to Paris.", T0 + timedelta(days=30))  # newer, delivered first
    wait_for(lambda: len(_slot_rows(engine, tenant, "ana", "user.location")) == 1, timeout_s=40, what="Paris")
    _say(client, "ana", "I live in Berlin.", T0)  # older, delivered late
    wait_for(
        lambda: len(_slot_rows(engine, tenant, "ana", "user.location")) == 2, timeout_s=40, what="Berlin"
    )
    rows = _slot_rows(engine, tenant, "ana", "user.location")
    assert [(r.value, r.status) for r in rows] == [("Berlin", "superseded"), ("Paris", "active")]
    assert rows[0].valid_to == rows[1].valid_from and rows[0].superseded_by == rows[1].id
    # replaying the late event changes nothing
    client.emit(
        user_id="ana",
        session_id="replay",
        content="I live in Berlin.",
        event_time=T0,
        event_id="replayed-berlin",
    )
    client.emit(
        user_id="ana",
        session_id="replay",
        content="I live in Berlin.",
        event_time=T0,
        event_id="replayed-berlin",
    )
    client.emit(user_id="ana", session_id="replay", type="session_end", event_time=T0)
    wait_for(lambda: _settled(engine, tenant), timeout_s=40, what="replay processed")
    rows = _slot_rows(engine, tenant, "ana", "user.location")
    assert [(r.value, r.status) for r in rows] == [("Berlin", "superseded"), ("Paris", "active")]


def test_eight_workers_on_400_conflicting_candidates_for_20_users_keep_one_current_value_per_slot(
    start_worker, engine, tenant, redis_url, queue_name
):
    rng = random.Random(7)
    users = [f"user-{i}" for i in range(20)]
    cities = ["Berlin", "Paris", "Lisbon", "Madrid", "Oslo", "Rome", "Vienna", "Prague"]
    rows = []
    for n in range(400):
        user = users[n % 20]
        city = rng.choice(cities)
        when = T0 + timedelta(minutes=rng.randrange(0, 100_000))
        rows.append(
            {
                "t": tenant,
                "u": user,
                "s": f"sess-{n}",
                "c": f"The user lives in {city}.",
                "v": city,
                "e": [f"ev-{n}"],
                "ts": when,
            }
        )
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO candidates (tenant_id, user_id, session_id, op, content, kind, category, tier, slot, value, "
                "confidence, lang, origin, source_event_ids, event_time) VALUES (:t, :u, :s, 'remember', :c, "
                "'semantic', 'profile', 'worth', 'user.location', :v, 0.8, 'en', 'rules', :e, :ts)"
            ),
            rows,
        )
    start_worker(concurrency=8)
    pub = TaskPublisher(redis_url, queue=queue_name)
    for _ in range(3):  # every user triggered several times, so workers race on the same users
        for user in rng.sample(users, len(users)):
            pub.publish(tasknames.RECONCILE_USER, [tenant, user])
    wait_for(
        lambda: _settled(engine, tenant), timeout_s=180, interval_s=0.5, what="all candidates reconciled"
    )
    wait_for(lambda: queue_depth(redis_url, queue_name) == 0, timeout_s=60, what="the queue to drain")
    with engine.connect() as conn:
        for user in users:
            mine = [r for r in rows if r["u"] == user]
            latest = max(mine, key=lambda r: r["ts"])
            slot = _slot_rows(engine, tenant, user, "user.location")
            active = [r for r in slot if r.status == "active"]
            assert len(active) == 1, (user, slot)
            assert active[0].value == latest["v"]
            # history complete: every candidate is accounted for by a row or a reinforcement
            assert sum(r.evidence_count for r in slot) == len(mine)
            # validity intervals chain without overlap
            for a, b in itertools.pairwise(slot):
                assert a.valid_to is not None and a.valid_to <= b.valid_from
        reconciled = conn.execute(
            text("SELECT count(*) FROM candidates WHERE tenant_id = :t AND status = 'reconciled'"),
            {"t": tenant},
        ).scalar()
    assert reconciled == 400


def test_similar_but_unclear_candidates_are_judged_by_the_llm_in_one_call(
    start_worker, engine, tenant, redis_url, queue_name
):
    import json as _json

    from tests.fakes.openai_server import FakeOpenAI

    with FakeOpenAI() as fake:
        fake.default_responder = lambda request: _json.dumps({"verdicts": [{"id": 0, "verdict": "update"}]})
        start_worker(env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.base_url})
        pub = TaskPublisher(redis_url, queue=queue_name)
        _insert_candidate(engine, tenant, "The user prefers concise answers.", 0)
        pub.publish(tasknames.RECONCILE_USER, [tenant, "u"])
        wait_for(lambda: _settled(engine, tenant), timeout_s=30, what="the first memory")
        _insert_candidate(engine, tenant, "The user prefers detailed answers with examples.", 1)
        pub.publish(tasknames.RECONCILE_USER, [tenant, "u"])
        wait_for(lambda: _settled(engine, tenant), timeout_s=30, what="the judged candidate")
        assert len(fake.calls) == 1
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT content, status FROM memories WHERE tenant_id = :t ORDER BY valid_from"),
            {"t": tenant},
        ).all()
        usage = conn.execute(
            text("SELECT calls FROM llm_usage WHERE tenant_id = :t AND stage = 'reconcile'"), {"t": tenant}
        ).scalar()
    assert [tuple(r) for r in rows] == [
        ("The user prefers concise answers.", "superseded"),
        ("The user prefers detailed answers with examples.", "active"),
    ]
    assert usage == 1


def test_the_judge_does_not_call_the_llm_once_the_tenant_budget_is_spent(
    start_worker, engine, tenant, redis_url, queue_name
):
    import json as _json

    from tests.fakes.openai_server import FakeOpenAI

    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO tenants (id, settings) VALUES (:t, '{\"daily_token_budget\": 0}')"),
            {"t": tenant},
        )
    for n, content in enumerate(
        ["The user prefers concise answers.", "The user prefers detailed answers with examples."]
    ):
        _insert_candidate(engine, tenant, content, n)
    with FakeOpenAI() as fake:
        fake.default_responder = lambda request: _json.dumps({"verdicts": [{"id": 0, "verdict": "update"}]})
        worker = start_worker(env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.base_url})
        TaskPublisher(redis_url, queue=queue_name).publish(tasknames.RECONCILE_USER, [tenant, "u"])
        wait_for(lambda: _settled(engine, tenant), timeout_s=30, what="both candidates reconciled")
        assert fake.calls == []
    assert "llm.budget_exhausted" in worker.log_text()
    with engine.connect() as conn:
        active = conn.execute(
            text("SELECT count(*) FROM memories WHERE tenant_id = :t AND status = 'active'"), {"t": tenant}
        ).scalar()
        usage = conn.execute(
            text("SELECT count(*) FROM llm_usage WHERE tenant_id = :t AND stage = 'reconcile'"), {"t": tenant}
        ).scalar()
    assert active and active >= 1
    assert usage == 0


@pytest.mark.parametrize(
    ("lines", "slot", "values"),
    [
        (
            ["our CI is GitHub Actions, workflows live in .github/workflows",
             "fyi we've since moved CI to Buildkite, can you write a pipeline step for the migrations check?"],
            "project.ci", ["github actions", "buildkite"],
        ),
        (["我在设计组，主要做 UI", "我现在调到数据组了，帮我看下这个 SQL"], "user.team", ["设计组", "数据组"]),
    ],
    ids=["english-in-passing", "chinese-indirect"],
)  # fmt: skip
def test_an_update_stated_in_passing_supersedes_without_an_llm(
    lines, slot, values, start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    """Issue #12: a change cue and a known slot's value supersede the current value, rules only."""
    start_worker(env=FAST)
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    for day, line in enumerate(lines):
        _say(client, "dev", line, T0 + timedelta(days=day * 30))
        wait_for(lambda d=day: len(_slot_rows(engine, tenant, "dev", slot)) == d + 1, timeout_s=40,
                 what=f"value {day + 1} reconciled")  # fmt: skip
    rows = _slot_rows(engine, tenant, "dev", slot)
    assert [(r.value, r.status) for r in rows] == [(values[0], "superseded"), (values[1], "active")]


def test_a_change_the_rules_are_unsure_of_is_held_as_a_candidate_without_an_llm(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    """A change told inside a question does not replace the current value on its own word: without an LLM
    the candidate is kept (decision `hold`), and the slot keeps one current value."""
    start_worker(env=FAST)
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    _say(client, "dev", "Our database is MySQL.", T0)
    wait_for(lambda: len(_slot_rows(engine, tenant, "dev", "project.database")) == 1, timeout_s=40,
             what="the first value")  # fmt: skip
    _say(client, "dev", "so we migrated to TiDB last month right?", T0 + timedelta(days=3))

    def held() -> bool:
        with engine.connect() as conn:
            return bool(conn.execute(text(
                "SELECT count(*) FROM candidates WHERE tenant_id = :t AND slot = 'project.database' "
                "AND value = 'tidb' AND decision = 'hold' AND memory_id IS NULL"
            ), {"t": tenant}).scalar())  # fmt: skip

    wait_for(held, timeout_s=40, what="the unsure change held")
    rows = _slot_rows(engine, tenant, "dev", "project.database")
    assert [(r.value, r.status) for r in rows] == [("mysql", "active")]


def _memories(engine, tenant, user):
    with engine.connect() as conn:
        return conn.execute(
            text(
                "SELECT id, content, status, valid_from, valid_to, superseded_by FROM memories "
                "WHERE tenant_id = :t AND user_id = :u ORDER BY valid_from, recorded_at"
            ),
            {"t": tenant, "u": user},
        ).all()


@pytest.mark.parametrize(
    ("lines", "old", "new"),
    [
        (["our sprints are 2 weeks", "we switched to 1-week sprints last month"], "2 weeks", "1-week"),
        (["我每天跑步五公里", "跑步改到晚上了"], "五公里", "晚上"),
    ],
    ids=["english", "chinese"],
)
@pytest.mark.parametrize("late", [False, True], ids=["in-order", "change-first"])
def test_a_change_in_no_slot_ends_the_older_memory_on_its_topic_in_either_order(
    lines, old, new, late, start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    """Issue #12: "we switched to 1-week sprints" names no slot; it still ends "our sprints are 2 weeks",
    without an LLM, whichever of the two is delivered first: one current statement on the topic."""
    start_worker(env=FAST)
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    order = [1, 0] if late else [0, 1]
    for n, index in enumerate(order):
        _say(client, "dev", lines[index], T0 + timedelta(days=index * 30))
        wait_for(lambda n=n: len(_memories(engine, tenant, "dev")) == n + 1 and _settled(engine, tenant),
                 timeout_s=40, what=f"statement {n + 1} reconciled")  # fmt: skip
    rows = _memories(engine, tenant, "dev")
    before, after = (next(r for r in rows if value in r.content) for value in (old, new))
    assert (before.status, after.status) == ("superseded", "active")
    assert before.superseded_by == after.id and before.valid_to == after.valid_from == T0 + timedelta(days=30)


def test_a_change_in_no_slot_ends_the_closest_memory_on_its_topic_with_history(
    start_worker, engine, tenant, redis_url, queue_name
):
    """ "The user's alarm is 5:45 now" ends "the alarm is set for 6:30", not "the alarm plays birdsong" (the
    same topic word, another attribute) nor an unrelated memory; the ended row has its history."""
    start_worker(env=FAST)
    pub = TaskPublisher(redis_url, queue=queue_name)
    for n, content in enumerate(["The user's alarm is set for 6:30.", "The user's alarm plays birdsong.",
                                 "The user's project uses Rust."]):  # fmt: skip
        _insert_candidate(engine, tenant, content, n, rule="en.statement.fact")
    _insert_candidate(engine, tenant, "The user's alarm is 5:45 now.", 5, rule="en.statement.now")
    pub.publish(tasknames.RECONCILE_USER, [tenant, "u"])
    wait_for(lambda: _settled(engine, tenant), timeout_s=30, what="the candidates reconciled")
    rows = {r.content: r for r in _memories(engine, tenant, "u")}
    assert {c: r.status for c, r in rows.items()} == {
        "The user's alarm is set for 6:30.": "superseded",
        "The user's alarm plays birdsong.": "active",
        "The user's project uses Rust.": "active",
        "The user's alarm is 5:45 now.": "active",
    }
    ended, current = rows["The user's alarm is set for 6:30."], rows["The user's alarm is 5:45 now."]
    assert ended.superseded_by == current.id and ended.valid_to == T0 + timedelta(days=5)
    with engine.connect() as conn:
        history = conn.execute(
            text("SELECT memory_id, reason FROM memory_history WHERE tenant_id = :t AND op = 'supersede'"),
            {"t": tenant},
        ).all()
    assert [str(h.memory_id) for h in history] == [str(ended.id)]
    assert "a change on the topic of" in history[0].reason


@pytest.mark.parametrize("late", [False, True], ids=["in-order", "end-first"])
def test_what_the_user_left_stops_being_current_in_either_order(
    late, start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    """Issue #12: "we ripped out Datadog" ends the memory that the user's team uses Datadog (no memory is
    stored for the statement itself); told before the older statement arrives, that statement is history."""
    start_worker(env=FAST)
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    lines = ["we use Datadog for metrics and alerting", "we ripped out Datadog last month, the bill was insane"]
    def candidates() -> int:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM candidates WHERE tenant_id = :t"), {"t": tenant}).scalar())

    for n, index in enumerate([1, 0] if late else [0, 1]):
        _say(client, "dev", lines[index], T0 + timedelta(days=index * 30))
        wait_for(lambda n=n: candidates() > n and _settled(engine, tenant), timeout_s=40,
                 what=f"statement {index + 1} reconciled")  # fmt: skip
    rows = [r for r in _memories(engine, tenant, "dev") if "Datadog" in r.content]
    assert rows and all(r.status == "superseded" for r in rows)
    assert all(r.valid_to == T0 + timedelta(days=30) for r in rows)
    with engine.connect() as conn:
        ends = conn.execute(
            text("SELECT decision, memory_id FROM candidates WHERE tenant_id = :t AND op = 'end'"), {"t": tenant}
        ).all()
        history = conn.execute(
            text("SELECT op FROM memory_history WHERE tenant_id = :t ORDER BY id"), {"t": tenant}
        ).scalars().all()
    assert [tuple(e) for e in ends] == [("noop" if late else "end", None)]
    assert history[-1] == ("history" if late else "end")


def test_a_correction_of_a_value_rewrites_the_memory_that_held_it_and_one_of_nothing_stores_nothing(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    """Issue #12, without an LLM: "actually it's 8081, 8080 is taken by ..." names no topic; it replaces the
    memory that holds 8080 with that memory's own words, 8081 in place of 8080 (history kept). A correction of
    something never stored ("typo, I meant user_id not userid") stores nothing."""
    start_worker(env=FAST)
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    _say(client, "dev", "the API runs on port 8080 locally", T0)
    wait_for(lambda: len(_memories(engine, tenant, "dev")) == 1 and _settled(engine, tenant), timeout_s=40,
             what="the port stored")  # fmt: skip
    (first,) = _memories(engine, tenant, "dev")
    assert "8080" in first.content
    _say(client, "dev", "actually it's 8081, 8080 is taken by the Keycloak container", T0 + timedelta(hours=1))
    _say(client, "other", "sorry, typo, I meant user_id not userid in that last query", T0 + timedelta(hours=1))
    wait_for(lambda: len(_memories(engine, tenant, "dev")) == 2 and _settled(engine, tenant), timeout_s=40,
             what="the correction reconciled")  # fmt: skip
    rows = {r.id: r for r in _memories(engine, tenant, "dev")}
    old, new = rows[first.id], next(r for r in rows.values() if r.id != first.id)
    assert (old.status, new.status) == ("superseded", "active")
    assert new.content == first.content.replace("8080", "8081") and old.superseded_by == new.id
    assert _memories(engine, tenant, "other") == []
    with engine.connect() as conn:
        decisions = conn.execute(
            text("SELECT user_id, decision FROM candidates WHERE tenant_id = :t AND rule LIKE 'residual.correction%'"),
            {"t": tenant},
        ).all()
    assert sorted(map(tuple, decisions)) == [("dev", "supersede"), ("other", "noop")]
