"""The model-response zoo end to end: a real worker, PostgreSQL, Redis and the fake OpenAI-compatible server
answering over HTTP the way other endpoints do (tests/fakes/openai_server.py, `Style` and the request
checks). For every style, either the answer is parsed and stored, or every turn the LLM owed stays
`llm_pending` with the reason on the event - never a 200 with nothing stored and nothing said. The worker's
Prometheus counters (multiprocess files) are read back: silent losses stay 0, failures are counted by
reason, and `memctl stats` shows them. Then the cost of a failing model: the attempt cap, the breaker, and
no failed turn resent in the next window.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from shared import tasknames
from shared.publisher import TaskPublisher
from tests.fakes.openai_server import FakeOpenAI
from tests.metrics_files import counter, families
from tests.services import REPO, memory_client, wait_for

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)  # in the past: the idle timer fires at once
LLM_TURNS = [
    "We spent the morning debugging the flaky payment webhook; it turned out the retry queue was dropping jobs.",
    "The staging cluster runs on three nodes and the nightly backup finishes around 2am.",
    "我们这周在重构订单服务，主要是把同步调用改成消息队列，下周要做压测。",
]
RULE_TURN = "Please remember that I am allergic to peanuts."
TIMEOUT_S = 3.0
RETRY_S = 5.0


def answer_first_turn(request: dict[str, Any]) -> str:
    """A cooperative model: one memory citing the first turn of the window it was sent."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    window = user.split("## Conversation window", 1)[1]
    first_id = window.split("[", 1)[1].split("]", 1)[0]
    memory = {
        "content": "The team's payment webhook retry queue was dropping jobs.",
        "kind": "episodic",
        "category": "lesson",
        "tier": "worth",
        "slot": None,
        "value": None,
        "op": "remember",
        "confidence": 0.8,
        "source_event_ids": [first_id],
    }
    return json.dumps({"memories": [memory]})


def wrong_shape(request: dict[str, Any]) -> str:
    """Valid JSON, not the shape asked for (the model the prompts were not written for)."""
    return json.dumps({"facts": [{"text": "The user debugs webhooks.", "importance": "high"}]})


# style -> (how the server is set up, the reason recorded; None: the answer is parsed and stored)
STYLES: dict[str, tuple[dict[str, Any], str | None]] = {
    "plain": ({}, None),
    "fenced": ({"style": "fenced"}, None),
    "prose": ({"style": "prose"}, None),
    "think": ({"style": "think"}, None),
    "single_quotes": ({"style": "single_quotes"}, None),
    "trailing_commas": ({"style": "trailing_commas"}, None),
    "tool_call": ({"style": "tool_call"}, None),
    "json_schema_rejected": ({"reject_json_schema": True}, None),
    "every_format_rejected": ({"reject_json_schema": True, "reject_json_object": True}, None),
    "reasoning_model": ({"reasoning_model": True}, None),
    "slow_under_the_timeout": ({"delay_s": TIMEOUT_S - 0.8}, None),
    "length": ({"style": "length"}, "truncated"),
    "refusal": ({"style": "refusal"}, "refusal"),
    "no_choices": ({"style": "no_choices"}, "no_choices"),
    "empty": ({"style": "empty"}, "empty_content"),
    "slow_past_the_timeout": ({"delay_s": TIMEOUT_S + 1.5}, "timeout"),
    "wrong_shape": ({"default_responder": wrong_shape}, "invalid_output"),
}


@pytest.fixture
def fake_llm():
    with FakeOpenAI() as server:
        server.default_responder = answer_first_turn
        yield server


def llm_env(fake_llm: FakeOpenAI, metrics_dir: Path, **extra: str) -> dict[str, str]:
    metrics_dir.mkdir(parents=True, exist_ok=True)
    return {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_MAX_RETRIES": "1",
        "OPENAI_TIMEOUT_S": str(TIMEOUT_S),
        "MEMORY_DEBOUNCE_IDLE_S": "1",
        "MEMORY_LLM_BATCH_TURNS": "1",  # every window that owes the LLM calls it at once
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        **extra,
    }


def emit(client: Any, turns: list[str], *, session: str = "s1", start: int = 0) -> None:
    for i, content in enumerate(turns, start=start):
        client.emit(
            user_id="u1",
            session_id=session,
            content=content,
            event_id=f"{session}-{i}",
            event_time=T0 + timedelta(seconds=i),
        )
    client.flush()


def turns_by_status(engine: Any, tenant: str) -> dict[str, list[tuple[str, str | None, int]]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT status, event_id, llm_error, llm_attempts FROM events WHERE tenant_id = :t "
                "ORDER BY event_id"
            ),
            {"t": tenant},
        ).all()
    out: dict[str, list[tuple[str, str | None, int]]] = {}
    for status, event_id, error, attempts in rows:
        out.setdefault(status, []).append((event_id, error, attempts))
    return out


def settled(engine: Any, tenant: str, total: int) -> bool:
    by_status = turns_by_status(engine, tenant)
    return sum(map(len, by_status.values())) == total and "pending" not in by_status


def origins(engine: Any, tenant: str) -> list[str]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT origin, tier FROM candidates WHERE tenant_id = :t"), {"t": tenant})
        return [f"{r[0]}/{r[1]}" for r in rows]


def silent_losses_known(metrics_dir: Path) -> bool:
    return any(f.name == "memory_llm_silent_losses" for f in families(metrics_dir))


@pytest.mark.parametrize("style", sorted(STYLES))
def test_every_style_is_parsed_or_leaves_its_turns_llm_pending_with_the_reason(
    style, start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path
):
    setup, reason = STYLES[style]
    for attribute, value in setup.items():
        setattr(fake_llm, attribute, value)
    metrics_dir = tmp_path / "metrics"
    start_worker(env=llm_env(fake_llm, metrics_dir))
    emit(memory_client(tenant, redis_url, queue_name, tmp_path), [*LLM_TURNS, RULE_TURN])

    wait_for(lambda: settled(engine, tenant, 4), timeout_s=60, what=f"the window ({style})")
    by_status = turns_by_status(engine, tenant)
    stored = origins(engine, tenant)
    assert "rules/must" in stored  # the rule candidate is stored whatever the model does
    assert fake_llm.calls, "the window made no LLM call"
    if reason is None:
        assert "llm_pending" not in by_status, by_status
        assert any(o.startswith(("llm/", "rules+llm/")) for o in stored), stored
        assert all(error is None for _, error, _ in by_status["extracted"])
    else:
        pending = by_status.get("llm_pending", [])
        assert {event_id for event_id, _, _ in pending} == {"s1-0", "s1-1", "s1-2"}, by_status
        assert {(error, attempts) for _, error, attempts in pending} == {(reason, 1)}
        assert not any(o.startswith(("llm/", "rules+llm/")) for o in stored)
        wait_for(
            lambda: counter(metrics_dir, "memory_llm_failures", stage="extract", reason=reason) >= 1,
            timeout_s=10,
            what="the failure counted by reason",
        )
    assert silent_losses_known(metrics_dir)
    assert counter(metrics_dir, "memory_llm_silent_losses") == 0
    if style == "reasoning_model":
        last = fake_llm.calls[-1]
        assert "max_completion_tokens" in last and "temperature" not in last and "max_tokens" not in last
    if style == "every_format_rejected":
        assert "response_format" not in fake_llm.calls[-1]


def test_a_failing_model_costs_a_bounded_number_of_calls_and_its_failures_show_in_memctl_stats(
    start_worker, fake_llm, engine, tenant, redis_url, queue_name, tmp_path, worker_env
):
    """Wrong-shape answers: the first window fails (call + repair) and its turns back off; the next window
    of the session does not resend them; after the threshold the breaker opens and no call is made; each
    sweep-like retry past the backoff counts an attempt, and at the cap the turn is final with the reason."""
    fake_llm.default_responder = wrong_shape
    metrics_dir = tmp_path / "metrics"
    env = llm_env(
        fake_llm,
        metrics_dir,
        MEMORY_LLM_RETRY_S=str(RETRY_S),
        MEMORY_LLM_MAX_ATTEMPTS="2",
        MEMORY_LLM_BREAKER_FAILURES="3",
        MEMORY_LLM_BREAKER_BASE_S="600",
        MEMORY_DEBOUNCE_IDLE_S="600",
        MEMORY_DEBOUNCE_TURNS="2",
    )
    start_worker(env=env)
    client = memory_client(tenant, redis_url, queue_name, tmp_path)

    emit(client, LLM_TURNS[:2], session="a")  # window 1: fails, call + repair
    wait_for(lambda: settled(engine, tenant, 2), timeout_s=30, what="window 1")
    assert len(fake_llm.calls) == 2
    emit(
        client,
        [LLM_TURNS[2], "Our on-call rotation is weekly and handovers happen on Monday mornings."],
        session="a",
        start=2,
    )
    wait_for(lambda: len(fake_llm.calls) == 4, timeout_s=30, what="window 2's call")
    wait_for(lambda: settled(engine, tenant, 4), timeout_s=30, what="window 2")
    window_2 = fake_llm.calls[2]["messages"][-1]["content"]
    assert "[a-2]" in window_2 and "[a-0]" not in window_2  # the failed turns did not ride along

    # past the backoff the failed turns are due: a trigger sends them (second attempt -> the cap of 2)
    time.sleep(RETRY_S + 0.5)
    publisher = TaskPublisher(redis_url, queue=queue_name)
    # sent again every few seconds, as the sweeper would: on a loaded machine the first trigger can find
    # window 2's run still holding the session's lock. The retry is the third failure in a row and opens
    # the breaker, so a repeated trigger can make no further call.
    for _ in range(6):
        publisher.publish(tasknames.EXTRACT_SESSION, [tenant, "u1", "a", "llm_retry"])
        try:
            wait_for(lambda: len(fake_llm.calls) >= 6, timeout_s=5, what="the retry's call")
            break
        except AssertionError:
            continue
    wait_for(lambda: len(fake_llm.calls) >= 6, timeout_s=30, what="the retry's call")
    time.sleep(1.0)
    assert len(fake_llm.calls) == 6
    by_status = wait_for(
        lambda: (s := turns_by_status(engine, tenant)) and len(s.get("extracted", [])) >= 2 and s,
        timeout_s=30,
        what="the capped turns made final",
    )
    final = {event_id: (error, attempts) for event_id, error, attempts in by_status["extracted"]}
    assert final["a-0"] == ("invalid_output", 2) and final["a-1"] == ("invalid_output", 2)
    # three failures in a row opened the breaker: a new session's window makes no call
    emit(client, LLM_TURNS[:2], session="b")
    wait_for(lambda: settled(engine, tenant, 6), timeout_s=30, what="the window behind the open breaker")
    assert len(fake_llm.calls) == 6
    pending_b = [
        (e, err, att) for e, err, att in turns_by_status(engine, tenant)["llm_pending"] if e.startswith("b-")
    ]
    assert pending_b == [("b-0", "circuit_open", 0), ("b-1", "circuit_open", 0)]
    assert counter(metrics_dir, "memory_llm_breaker_opened", stage="extract") == 1
    given_up = [e for e, err, _ in turns_by_status(engine, tenant)["extracted"] if err == "invalid_output"]
    assert {"a-0", "a-1"} <= set(given_up)  # (a-2 too when its backoff had passed by the retry)
    assert counter(metrics_dir, "memory_llm_turns_given_up", reason="invalid_output") == len(given_up)
    assert counter(metrics_dir, "memory_llm_silent_losses") == 0

    stats = json.loads(
        subprocess.run(
            [sys.executable, "-m", "memctl.cli", "stats", "--json"],
            env=worker_env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    )
    failures = {row["reason"]: row for row in stats["llm_failures"]}
    assert failures["invalid_output"]["final"] >= 2
    assert failures["circuit_open"]["waiting"] >= 2
    assert any(b["open_until"] for b in stats["llm_breakers"])
