"""The LLM part of extraction batched across windows, end to end (real worker, Postgres, Redis and the fake
OpenAI-compatible server over HTTP): a small window applies its rules at once and leaves its LLM-needing
turns `llm_pending`; a later window, session end, the idle timer or the sweeper sends them in one call.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from shared import tasknames
from shared.publisher import TaskPublisher
from tests.fakes.openai_server import FakeOpenAI
from tests.services import memory_client, wait_for

pytestmark = pytest.mark.integration

# Turns the rules cannot account for (the rules now keep stable facts such as "our on-call rotation is weekly"
# themselves): each must reach the LLM.
SUBSTANTIVE = [
    "We spent the morning debugging the flaky payment webhook; the retry queue was dropping jobs.",
    "The staging cluster runs on three nodes and the nightly backup finishes around 2am.",
    "我们这周在重构订单服务，主要是把同步调用改成消息队列，下周要做压测。",
    "Our customers are mostly small clinics in Portugal, so GDPR questions come up a lot.",
    "Last quarter the mobile release slipped twice because of the app store review queue.",
    "Support tickets about invoices doubled after the pricing page changed last month.",
    "Warehouse loads used to collide with the morning reports until the schedule was reshuffled.",
    "Handover notes for on-call are a mess and nobody reads them properly.",
    "The search service times out when the catalogue import runs at the same time.",
]
MUST = "Please remember that I am allergic to peanuts."


@pytest.fixture
def fake_llm():
    with FakeOpenAI() as server:
        yield server


def _env(fake_llm: FakeOpenAI, **extra: str) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_MAX_RETRIES": "1",
        "OPENAI_TIMEOUT_S": "3",
        "MEMORY_DEBOUNCE_TURNS": "4",
        "MEMORY_DEBOUNCE_IDLE_S": "600",
        "MEMORY_LLM_BATCH_TURNS": "6",
        **extra,
    }


def _emit(client, tenant, contents, *, start: int, session: str = "s1", end: bool = False) -> None:
    t0 = datetime.now(UTC)
    for i, content in enumerate(contents, start=start):
        client.emit(
            user_id="u1",
            session_id=session,
            content=content,
            event_id=f"{tenant}-{i}",
            event_time=t0 + timedelta(milliseconds=i),
        )
    if end:
        client.emit(user_id="u1", session_id=session, type="session_end", event_id=f"{tenant}-end")
    client.flush()


def _statuses(engine, tenant) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT status, count(*) FROM events WHERE tenant_id = :t AND type = 'turn' GROUP BY status"
            ),
            {"t": tenant},
        ).all()
    return {str(r[0]): int(r[1]) for r in rows}


def _settled(engine, tenant, *, turns: int, llm_pending: int) -> bool:
    s = _statuses(engine, tenant)
    return sum(s.values()) == turns and s.get("pending", 0) == 0 and s.get("llm_pending", 0) == llm_pending


def _calls(fake_llm: FakeOpenAI, tenant: str) -> list[str]:
    """The extraction windows sent for this tenant's events (the sweeper may send other tests' windows)."""
    windows = []
    for body in list(fake_llm.calls):
        user = next((m.get("content") or "" for m in body["messages"] if m.get("role") == "user"), "")
        if "## Conversation window" in user and f"[{tenant}-" in user:
            windows.append(user.split("## Conversation window", 1)[1])
    return windows


def _must_candidates(engine, tenant) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text("SELECT count(*) FROM candidates WHERE tenant_id = :t AND tier = 'must'"), {"t": tenant}
            ).scalar()
            or 0
        )


def test_small_windows_share_one_llm_call_and_the_rules_apply_at_once(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path
):
    start_worker(env=_env(fake_llm))
    client = memory_client(tenant, redis_url, queue_name, tmp_path)

    # window 1 (4 turns, 3 owed to the LLM): rules now, the LLM later
    _emit(client, tenant, [*SUBSTANTIVE[:3], MUST], start=0)
    wait_for(lambda: _settled(engine, tenant, turns=4, llm_pending=3), timeout_s=30, what="window 1")
    assert _calls(fake_llm, tenant) == []
    assert _statuses(engine, tenant) == {"llm_pending": 3, "extracted": 1}
    wait_for(lambda: _must_candidates(engine, tenant) >= 1, timeout_s=10, what="the MUST rule candidate")

    # window 2 (4 more owed: 7 >= 6): one call carries both windows' substantive turns
    _emit(client, tenant, SUBSTANTIVE[3:7], start=4)
    wait_for(lambda: _settled(engine, tenant, turns=8, llm_pending=0), timeout_s=30, what="window 2")
    calls = _calls(fake_llm, tenant)
    assert len(calls) == 1
    for i in (0, 1, 2, 4, 5, 6, 7):
        assert f"[{tenant}-{i}]" in calls[0]
    assert _statuses(engine, tenant) == {"extracted": 8}

    # a small tail: session end makes the call whatever the batch holds
    _emit(client, tenant, SUBSTANTIVE[7:8], start=8, end=True)
    wait_for(lambda: len(_calls(fake_llm, tenant)) == 2, timeout_s=30, what="the call on session end")
    wait_for(lambda: _settled(engine, tenant, turns=9, llm_pending=0), timeout_s=30, what="session end")
    assert f"[{tenant}-8]" in _calls(fake_llm, tenant)[1]
    assert _must_candidates(engine, tenant) >= 1


def test_turns_left_llm_pending_are_sent_when_the_session_goes_idle(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path
):
    start_worker(env=_env(fake_llm, MEMORY_DEBOUNCE_IDLE_S="4", MEMORY_LLM_BATCH_TURNS="24"))
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    _emit(client, tenant, SUBSTANTIVE[:4], start=0)
    wait_for(
        lambda: _settled(engine, tenant, turns=4, llm_pending=4), timeout_s=30, what="the deferred window"
    )
    assert _calls(fake_llm, tenant) == []
    wait_for(lambda: _settled(engine, tenant, turns=4, llm_pending=0), timeout_s=30, what="the idle call")
    assert len(_calls(fake_llm, tenant)) == 1


def test_the_sweeper_sends_turns_left_llm_pending(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path
):
    start_worker(env=_env(fake_llm, MEMORY_LLM_BATCH_TURNS="24"))
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    _emit(client, tenant, SUBSTANTIVE[:4], start=0)
    wait_for(
        lambda: _settled(engine, tenant, turns=4, llm_pending=4), timeout_s=30, what="the deferred window"
    )
    assert _calls(fake_llm, tenant) == []
    TaskPublisher(redis_url, queue=queue_name).publish(tasknames.SWEEP, [])
    wait_for(
        lambda: _settled(engine, tenant, turns=4, llm_pending=0), timeout_s=60, what="the sweeper's call"
    )
    assert len(_calls(fake_llm, tenant)) == 1


def test_deferred_turns_wait_for_tomorrow_when_the_budget_runs_out_meanwhile(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path
):
    worker = start_worker(env=_env(fake_llm))
    client = memory_client(tenant, redis_url, queue_name, tmp_path)
    _emit(client, tenant, SUBSTANTIVE[:4], start=0)
    wait_for(
        lambda: _settled(engine, tenant, turns=4, llm_pending=4), timeout_s=30, what="the deferred window"
    )
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO tenants (id, settings) VALUES (:t, '{\"daily_token_budget\": 100}') "
                "ON CONFLICT (id) DO UPDATE SET settings = excluded.settings"
            ),
            {"t": tenant},
        )
        conn.execute(
            text(
                "INSERT INTO llm_usage (tenant_id, day, stage, calls, prompt_tokens) "
                "VALUES (:t, :d, 'extract', 1, 150)"
            ),
            {"t": tenant, "d": datetime.now(UTC).date().isoformat()},
        )
    _emit(client, tenant, [SUBSTANTIVE[4], MUST], start=4, end=True)
    wait_for(lambda: "llm.budget_exhausted" in worker.log_text(), timeout_s=30, what="the budget log line")
    wait_for(lambda: _settled(engine, tenant, turns=6, llm_pending=5), timeout_s=30, what="rules only")
    assert _calls(fake_llm, tenant) == []
    assert _must_candidates(engine, tenant) >= 1
