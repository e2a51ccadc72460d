"""What a window's turns keep of a failed LLM call (worker.services.window.settle_llm): the reason, one more
attempt, a doubling backoff before any window sends them again, final with the rules at the cap; a call
never made (breaker open, budget spent) counts no attempt; a deferred call changes nothing; never silent."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from store.window import PendingEvent
from worker.llm import failure_reason
from worker.services.window import LLMOutcome, LLMRetryPolicy, plan_window, settle_llm

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
POLICY = LLMRetryPolicy(max_attempts=3, retry_s=60)
SUBSTANTIVE = "We spent the morning debugging the flaky payment webhook; the retry queue was dropping jobs."


def event(i: int, content: str = SUBSTANTIVE, *, status: str = "pending", attempts: int = 0) -> PendingEvent:
    return PendingEvent(
        event_id=f"e{i}",
        type="turn",
        role="user",
        content=f"{content} ({i})",
        source_turn_id=None,
        event_time=NOW + timedelta(seconds=i),
        status=status,
        agent_id=None,
        llm_attempts=attempts,
    )


def settle(events: list[PendingEvent], outcome: LLMOutcome):  # type: ignore[no-untyped-def]
    return settle_llm(events, plan_window(events, llm_available=True), outcome, now=NOW, policy=POLICY)


def test_an_answer_extracts_every_owed_turn_and_clears_an_earlier_reason() -> None:
    events = [event(0), event(1, status="llm_pending", attempts=1)]

    settled = settle(events, LLMOutcome(answered=True))

    assert settled.status_of == {"e0": "extracted", "e1": "extracted"}
    assert [(s.event_id, s.error, s.retry_at) for s in settled.llm_states] == [("e1", None, None)]
    assert settled.silent == 0


def test_a_failed_call_keeps_the_reason_and_backs_off_doubling_per_attempt() -> None:
    events = [event(0), event(1, status="llm_pending", attempts=1)]

    settled = settle(events, LLMOutcome(answered=False, reason="invalid_output", called=True))

    assert settled.status_of == {"e0": "llm_pending", "e1": "llm_pending"}
    by_id = {s.event_id: s for s in settled.llm_states}
    assert (by_id["e0"].error, by_id["e0"].attempts, by_id["e0"].retry_at) == (
        "invalid_output",
        1,
        NOW + timedelta(seconds=60),
    )
    assert (by_id["e1"].attempts, by_id["e1"].retry_at) == (2, NOW + timedelta(seconds=120))
    assert settled.given_up == 0 and settled.silent == 0


def test_at_the_cap_the_turn_is_final_with_its_reason() -> None:
    events = [event(0, status="llm_pending", attempts=2), event(1)]

    settled = settle(events, LLMOutcome(answered=False, reason="timeout", called=True))

    assert settled.status_of == {"e0": "extracted", "e1": "llm_pending"}
    final = next(s for s in settled.llm_states if s.event_id == "e0")
    assert (final.error, final.attempts, final.retry_at) == ("timeout", 3, None)
    assert settled.given_up == 1 and settled.silent == 0


@pytest.mark.parametrize("reason", ["circuit_open", "budget_exhausted"])
def test_no_call_made_counts_no_attempt(reason: str) -> None:
    reopen = NOW + timedelta(seconds=30)
    events = [event(0, status="llm_pending", attempts=2)]

    settled = settle(events, LLMOutcome(answered=False, reason=reason, retry_at=reopen))

    assert settled.status_of == {"e0": "llm_pending"}
    assert [(s.error, s.attempts, s.retry_at) for s in settled.llm_states] == [(reason, 2, reopen)]


def test_a_deferred_call_leaves_the_turns_llm_pending_and_their_state_alone() -> None:
    settled = settle([event(0), event(1, status="llm_pending", attempts=1)], LLMOutcome(answered=False))

    assert set(settled.status_of.values()) == {"llm_pending"}
    assert settled.llm_states == [] and settled.silent == 0


def test_rule_only_turns_are_untouched_by_a_failure() -> None:
    rule_turn = event(1, "Please remember that I am allergic to peanuts.")

    settled = settle([event(0), rule_turn], LLMOutcome(answered=False, reason="refusal", called=True))

    assert settled.status_of["e1"] == "extracted"
    assert all(s.event_id != "e1" for s in settled.llm_states)


def test_a_failure_without_a_reason_would_be_counted_as_silent() -> None:
    # a cap of 1 makes the failed turn final at once; an outcome with no reason is the bug the metric catches
    events = [event(0)]
    plan = plan_window(events, llm_available=True)
    policy = dataclasses.replace(POLICY, max_attempts=1)

    settled = settle_llm(
        events, plan, LLMOutcome(answered=False, reason="", called=True), now=NOW, policy=policy
    )

    assert settled.status_of == {"e0": "extracted"}
    assert settled.silent == 1


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ("server_error_503", "server_error"),
        ("http_400", "http_error"),
        ("invalid_output: memories: Field required", "invalid_output"),
        ("client_error: APIResponseValidationError", "client_error"),
        ("something new", "client_error"),
        ("truncated", "truncated"),
    ],
)
def test_errors_map_to_a_short_category(error: str, reason: str) -> None:
    assert failure_reason(error) == reason
