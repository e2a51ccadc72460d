"""Extraction end to end with a real worker and the fake OpenAI-compatible server over real HTTP.

Windows are debounced per session; one chat call per window; failures of the LLM never lose an event or a
rule candidate; the daily budget switches a tenant to rules-only; windows run in event-time order.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text

from shared import tasknames
from shared.publisher import TaskPublisher
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.services import memory_client, queue_depth, wait_for

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

# Substantive turns the gate sends to the LLM (no rule fully covers them), and MUST-tier rule turns.
LLM_TURNS = [
    "We spent the morning debugging the flaky payment webhook; it turned out the retry queue was dropping jobs.",
    "The staging cluster runs on three nodes and the nightly backup finishes around 2am.",
    "我们这周在重构订单服务，主要是把同步调用改成消息队列，下周要做压测。",
    "Our customers are mostly small clinics in Portugal, so GDPR questions come up a lot.",
]
RULE_TURNS = ["Please remember that I am allergic to peanuts.", "记住：我们项目用 pnpm，不要用 npm。"]


@pytest.fixture
def fake_llm():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def llm_env(fake_llm):
    return {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_MAX_RETRIES": "2",
        "OPENAI_TIMEOUT_S": "3",
        "MEMORY_DEBOUNCE_IDLE_S": "1",
    }


def _statuses(engine, tenant):
    with engine.connect() as conn:
        return dict(
            conn.execute(
                text("SELECT status, count(*) FROM events WHERE tenant_id = :t GROUP BY status"),
                {"t": tenant},
            ).all()
        )


def _candidates(engine, tenant):
    with engine.connect() as conn:
        return conn.execute(
            text(
                "SELECT id, content, tier, origin, source_event_ids, event_time FROM candidates "
                "WHERE tenant_id = :t ORDER BY id"
            ),
            {"t": tenant},
        ).all()


def _drained(engine, tenant, total):
    s = _statuses(engine, tenant)
    return sum(s.values()) == total and s.get("pending", 0) == 0


def _emit_window(client, turns, *, session="s1", start=T0):
    for i, content in enumerate(turns):
        client.emit(
            user_id="u1",
            session_id=session,
            content=content,
            event_id=f"{session}-{i}",
            event_time=start + timedelta(seconds=i),
        )


def test_a_full_window_makes_one_chat_call_not_one_per_turn(
    start_worker, llm_env, fake_llm, engine, tenant, redis_url, queue_name, tmp_path
):
    def answer(request):  # name the first turn of the window as the source of one memory
        window = request["messages"][-1]["content"].split("## Conversation window", 1)[1]
        first_id = window.split("[", 1)[1].split("]", 1)[0]
        return json.dumps(
            {
                "memories": [
                    {
                        "content": "The team fixed the payment webhook retry queue.",
                        "kind": "episodic",
                        "category": "lesson",
                        "tier": "worth",
                        "slot": None,
                        "value": None,
                        "op": "remember",
                        "confidence": 0.8,
                        "source_event_ids": [first_id],
                    }
                ]
            }
        )

    fake_llm.default_responder = answer
    # batching across windows off (MEMORY_LLM_BATCH_TURNS=1): the full window makes its call at once
    start_worker(
        env={
            **llm_env,
            "MEMORY_DEBOUNCE_TURNS": "12",
            "MEMORY_DEBOUNCE_IDLE_S": "30",
            "MEMORY_LLM_BATCH_TURNS": "1",
        }
    )
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    turns = [f"{t} (part {i})" for i, t in enumerate((LLM_TURNS * 3)[:10])] + RULE_TURNS
    _emit_window(client, turns)
    wait_for(lambda: _drained(engine, tenant, 12), timeout_s=60, what="the window to be extracted")
    assert len(fake_llm.calls) == 1
    cands = _candidates(engine, tenant)
    assert any(c.origin in ("llm", "rules+llm") for c in cands)
    assert sum(c.tier == "must" for c in cands) >= 2  # both MUST rule candidates survived the merge
    with engine.connect() as conn:
        usage = conn.execute(
            text("SELECT calls, prompt_tokens FROM llm_usage WHERE tenant_id = :t"), {"t": tenant}
        ).first()
    assert usage is not None and usage[0] == 1 and usage[1] > 0


def test_a_429_then_success_is_retried(
    start_worker, llm_env, fake_llm, engine, tenant, redis_url, queue_name, tmp_path
):
    fake_llm.script(Reply(kind="status", status=429, retry_after_s=0.1))
    start_worker(env=llm_env)
    _emit_window(memory_client(tenant, redis_url, queue_name, tmp_path), LLM_TURNS)
    wait_for(lambda: _drained(engine, tenant, len(LLM_TURNS)), timeout_s=60, what="extraction")
    assert len(fake_llm.calls) == 2
    assert _statuses(engine, tenant).get("llm_pending", 0) == 0


def test_malformed_json_twice_ends_in_rules_only_and_llm_pending(
    start_worker, llm_env, fake_llm, engine, tenant, redis_url, queue_name, tmp_path
):
    fake_llm.script(Reply(kind="malformed"), Reply(kind="malformed"))
    start_worker(env=llm_env)
    _emit_window(memory_client(tenant, redis_url, queue_name, tmp_path), LLM_TURNS + RULE_TURNS)
    wait_for(lambda: _drained(engine, tenant, 6), timeout_s=60, what="extraction")
    assert len(fake_llm.calls) == 2  # the call and one repair, nothing more
    statuses = _statuses(engine, tenant)
    assert statuses.get("llm_pending", 0) >= len(LLM_TURNS)
    assert sum(c.tier == "must" for c in _candidates(engine, tenant)) >= 2


def test_the_llm_down_for_the_whole_test_loses_no_event_and_no_rule_candidate(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    from tests.services import free_port

    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    start_worker(
        env={
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": dead,
            "OPENAI_MAX_RETRIES": "1",
            "OPENAI_TIMEOUT_S": "1",
            "MEMORY_DEBOUNCE_IDLE_S": "1",
        }
    )
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    _emit_window(client, LLM_TURNS + RULE_TURNS, session="a")
    _emit_window(client, RULE_TURNS, session="b")
    wait_for(lambda: _drained(engine, tenant, 8), timeout_s=90, what="extraction with the LLM down")
    statuses = _statuses(engine, tenant)
    assert sum(statuses.values()) == 8
    assert statuses.get("llm_pending", 0) >= len(LLM_TURNS)
    cands = _candidates(engine, tenant)
    assert sum(c.tier == "must" for c in cands) >= 4


def test_an_exhausted_daily_budget_switches_the_tenant_to_rules_only(
    start_worker, llm_env, fake_llm, engine, tenant, redis_url, queue_name, tmp_path
):
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO tenants (id, settings) VALUES (:t, '{\"daily_token_budget\": 100}')"),
            {"t": tenant},
        )
        conn.execute(
            text(
                "INSERT INTO llm_usage (tenant_id, day, stage, calls, prompt_tokens) "
                "VALUES (:t, :d, 'extract', 1, 150)"
            ),
            {"t": tenant, "d": datetime.now(UTC).date().isoformat()},
        )
    worker = start_worker(env=llm_env)
    _emit_window(memory_client(tenant, redis_url, queue_name, tmp_path), LLM_TURNS + RULE_TURNS)
    wait_for(lambda: _drained(engine, tenant, 6), timeout_s=60, what="extraction")
    assert fake_llm.calls == []
    assert _statuses(engine, tenant).get("llm_pending", 0) >= len(LLM_TURNS)
    assert sum(c.tier == "must" for c in _candidates(engine, tenant)) >= 2
    wait_for(lambda: "llm.budget_exhausted" in worker.log_text(), timeout_s=10, what="the budget log line")


def test_windows_run_in_event_time_order_even_when_triggers_are_repeated_or_out_of_order(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    # events arrive newest first, and extraction is triggered several times, concurrently, by hand
    allergens = ["peanuts", "shellfish", "penicillin", "cats", "latex", "gluten", "soy", "bees"]
    statements = [f"Please remember that I am allergic to {a}." for a in allergens]
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    start_worker(env={"MEMORY_DEBOUNCE_IDLE_S": "600", "MEMORY_DEBOUNCE_TURNS": "1000"}, concurrency=4)
    for i in reversed(range(8)):
        client.emit(
            user_id="u1",
            session_id="s1",
            content=statements[i],
            event_id=f"e{i}",
            event_time=T0 + timedelta(minutes=i),
        )
    wait_for(lambda: sum(_statuses(engine, tenant).values()) == 8, timeout_s=30, what="events stored")
    pub = TaskPublisher(redis_url, queue=queue_name)
    for reason in ("threshold", "threshold", "backlog", "session_end"):
        pub.publish(tasknames.EXTRACT_SESSION, [tenant, "u1", "s1", reason])
    wait_for(lambda: _drained(engine, tenant, 8), timeout_s=60, what="extraction")
    # the idle timer (600 s) stays armed; every other message must be consumed
    wait_for(
        lambda: queue_depth(redis_url, queue_name, include_unacked=False) == 0,
        timeout_s=30,
        what="the queue to drain",
    )
    time.sleep(1.0)
    cands = _candidates(engine, tenant)
    assert len(cands) == 8, [c.content for c in cands]  # no window ran twice
    times = [c.event_time for c in cands]
    assert times == sorted(times)


def test_a_lost_timer_is_finished_by_a_re_sent_trigger(start_worker, engine, tenant, redis_url, queue_name):
    # events stored with no trigger at all (a timer lost with a crashed worker)
    with engine.begin() as conn:
        for i, content in enumerate(RULE_TURNS):
            conn.execute(
                text(
                    "INSERT INTO events (tenant_id, event_id, user_id, session_id, role, content, event_time) "
                    "VALUES (:t, :e, 'u1', 's1', 'user', :c, :ts)"
                ),
                {"t": tenant, "e": f"x{i}", "c": content, "ts": T0 + timedelta(seconds=i)},
            )
        conn.execute(
            text(
                "INSERT INTO sessions (tenant_id, user_id, session_id, pending_count, turn_count) "
                "VALUES (:t, 'u1', 's1', 2, 2)"
            ),
            {"t": tenant},
        )
    start_worker()
    TaskPublisher(redis_url, queue=queue_name).publish(
        tasknames.EXTRACT_SESSION, [tenant, "u1", "s1", "sweep"]
    )
    wait_for(lambda: _drained(engine, tenant, 2), timeout_s=30, what="the re-sent trigger's extraction")
    assert len(_candidates(engine, tenant)) >= 2
    with engine.connect() as conn:
        assert (
            conn.execute(
                text("SELECT pending_count FROM sessions WHERE tenant_id = :t"), {"t": tenant}
            ).scalar()
            == 0
        )


def test_idle_sessions_are_extracted_after_the_debounce_delay_and_session_end_extracts_at_once(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    start_worker(env={"MEMORY_DEBOUNCE_IDLE_S": "2"})
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    client.emit(user_id="u1", session_id="idle", content=RULE_TURNS[0], event_id="i1")
    wait_for(lambda: sum(_statuses(engine, tenant).values()) == 1, timeout_s=20, what="stored")
    assert _statuses(engine, tenant).get("pending") == 1  # not yet: the idle delay has not passed
    wait_for(lambda: _drained(engine, tenant, 1), timeout_s=30, what="idle extraction")
    client.emit(user_id="u1", session_id="ended", content=RULE_TURNS[1], event_id="n1")
    client.emit(user_id="u1", session_id="ended", type="session_end", event_id="n2")
    wait_for(lambda: _drained(engine, tenant, 3), timeout_s=10, what="extraction on session_end")


def test_the_window_endpoint_returns_a_summary_and_the_recent_turns_after_40_turns(
    start_worker, engine, tenant, redis_url, queue_name, tmp_path, api_server, api_key
):
    start_worker(env={"MEMORY_DEBOUNCE_IDLE_S": "1"})
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    lines = [
        f"We decided to use service-{i}.yaml for config {i}."
        if i % 3 == 0
        else f"The build fails in module_{i}.py with a timeout."
        if i % 3 == 1
        else f"Next step: write tests for feature {i}."
        for i in range(45)
    ]
    _emit_window(client, lines, session="long")
    wait_for(lambda: _drained(engine, tenant, 45), timeout_s=60, what="extraction")

    def window():
        r = httpx.get(f"{api_server}/v1/sessions/long/window", headers={"Authorization": f"Bearer {api_key}"})
        assert r.status_code == 200, r.text
        return r.json()

    body = wait_for(lambda: (w := window())["summary"] and w, timeout_s=30, what="the rolling summary")
    assert len(body["turns"]) == 20
    assert body["turns"][-1]["event_id"] == "long-44"
    assert "## Decisions" in body["summary"] and "## Problems" in body["summary"]
    # turns 0-24 are folded (the newest items of each section are kept); 25-44 are the recent window
    assert "service-24.yaml" in body["summary"]
    assert "service-27.yaml" not in body["summary"]
    r = httpx.get(f"{api_server}/v1/sessions/nope/window", headers={"Authorization": f"Bearer {api_key}"})
    assert r.status_code == 404
