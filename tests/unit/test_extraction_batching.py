"""Batching the LLM part of extraction across windows (pure parts): when a window makes the LLM call or
leaves it to a later one, what the deferred plan stores, and the gate's rule pass reused by the plan."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.extraction.candidates import Candidate, Category, Kind, Tier, Turn
from core.extraction.gate import GateDecision, gate_turn, gate_window
from core.extraction.rules import analyze_turn, extract_rules
from store.triggers import FORCING_REASONS, DebouncePolicy, llm_due
from worker.services.window import (
    PendingEvent,
    defer_llm,
    final_candidates,
    last_received_at,
    oldest_owed_at,
    plan_window,
)

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
POLICY = DebouncePolicy(turns=12, tokens=1500, idle_s=20, llm_batch_turns=24, llm_batch_tokens=3000)

SUBSTANTIVE = "We spent the morning debugging the flaky payment webhook; the retry queue was dropping jobs."
MUST = "Please remember that I am allergic to peanuts."
MUST_AND_MORE = "Remember that I deploy on Fridays, and also explain how the release train works here."


def _event(
    i: int, content: str, *, status: str = "pending", type_: str = "turn", age_s: float = 0
) -> PendingEvent:
    return PendingEvent(
        event_id=f"e{i}",
        type=type_,
        role="user",
        content=content,
        source_turn_id=f"t{i}",
        event_time=NOW - timedelta(days=400) + timedelta(seconds=i),  # a replay: event times in the past
        status=status,
        agent_id=None,
        received_at=NOW - timedelta(seconds=age_s),
    )


def _due(**overrides: object) -> bool:
    args: dict[str, object] = {
        "reason": "threshold",
        "session_ended": False,
        "owed_turns": 12,
        "owed_tokens": 500,
        "oldest_owed_at": NOW - timedelta(seconds=5),
        "last_received_at": NOW - timedelta(seconds=1),
        "now": NOW,
        "policy": POLICY,
    }
    args.update(overrides)
    return llm_due(**args)  # type: ignore[arg-type]


# --- when the call is made -----------------------------------------------------------------------------------


def test_a_small_batch_of_a_live_session_waits_for_a_later_window() -> None:
    assert _due() is False


@pytest.mark.parametrize("reason", sorted(FORCING_REASONS))
def test_session_end_idle_and_the_sweeper_always_make_the_call(reason: str) -> None:
    assert _due(reason=reason, owed_turns=1, owed_tokens=10) is True


def test_an_ended_session_makes_the_call_whatever_triggered_the_window() -> None:
    assert _due(reason="backlog", session_ended=True, owed_turns=1) is True


def test_a_full_batch_makes_the_call_by_turns_or_by_tokens() -> None:
    assert _due(owed_turns=24) is True
    assert _due(owed_turns=23) is False
    assert _due(owed_turns=3, owed_tokens=3000) is True


def test_a_session_already_idle_by_receipt_time_makes_the_call() -> None:
    assert _due(last_received_at=NOW - timedelta(seconds=20)) is True
    assert _due(last_received_at=None) is True  # unknown: do not wait


def test_nothing_waits_longer_than_the_defer_cap() -> None:
    assert _due(oldest_owed_at=NOW - timedelta(seconds=299)) is False
    assert _due(oldest_owed_at=NOW - timedelta(seconds=300)) is True
    assert _due(policy=dataclasses.replace(POLICY, llm_max_defer_s=0)) is True


def test_batching_off_calls_in_every_window_that_needs_it() -> None:
    assert _due(owed_turns=1, policy=dataclasses.replace(POLICY, llm_batch_turns=1)) is True


def test_no_owed_turn_means_no_call() -> None:
    assert _due(owed_turns=0, owed_tokens=0, reason="session_end") is False


def test_the_settings_reach_the_policy() -> None:
    from shared.settings import load_settings

    policy = DebouncePolicy.from_settings(
        load_settings(llm_batch_turns=30, llm_batch_tokens=4000, llm_max_defer_s=60)
    )
    assert (policy.llm_batch_turns, policy.llm_batch_tokens, policy.llm_max_defer_s) == (30, 4000, 60)
    assert DebouncePolicy.from_settings(load_settings()).llm_batch_turns == 24


# --- the plan ------------------------------------------------------------------------------------------------


def test_the_plan_reuses_the_gates_rule_pass_and_finds_what_extract_rules_finds() -> None:
    texts = [MUST, SUBSTANTIVE, "记住：我们项目用 pnpm，不要用 npm。", "thanks!", MUST_AND_MORE, MUST]
    events = [_event(i, t) for i, t in enumerate(texts)]
    plan = plan_window(events, llm_available=True)
    kept = [e.turn() for e in events if e.event_id not in plan.skipped_ids]
    assert plan.rule_candidates == extract_rules(kept)
    assert any(c.tier is Tier.MUST for c in plan.rule_candidates)


def test_a_kept_gate_result_carries_the_turns_rule_candidates_and_a_skipped_one_none() -> None:
    turn = Turn(event_id="e1", role="user", content=MUST)
    result = gate_turn(turn)
    assert result.decision is not GateDecision.SKIP
    assert result.candidates == analyze_turn(turn).candidates and result.candidates
    assert gate_turn(Turn(event_id="e2", role="user", content="thanks!")).candidates == ()
    assert gate_window([turn])[0].candidates == result.candidates


@given(st.lists(st.sampled_from([MUST, SUBSTANTIVE, MUST_AND_MORE, "ok", "我住在上海", "I live in Berlin."])))
def test_the_plans_rule_candidates_always_equal_a_separate_rule_pass(texts: list[str]) -> None:
    events = [_event(i, t) for i, t in enumerate(texts)]
    plan = plan_window(events, llm_available=True)
    kept = [e.turn() for e in events if e.event_id not in plan.skipped_ids]
    assert plan.rule_candidates == extract_rules(kept)


def test_turns_left_llm_pending_are_sent_again_but_their_rule_candidates_are_not_stored_twice() -> None:
    events = [
        _event(0, MUST_AND_MORE, status="llm_pending", age_s=30),
        _event(1, SUBSTANTIVE, status="llm_pending", age_s=29),
        _event(2, MUST),
    ]
    plan = plan_window(events, llm_available=True)
    assert [t.event_id for t in plan.llm_turns] == ["e0", "e1", "e2"]
    assert plan.needs_llm_ids == {"e0", "e1"}  # e2 is fully covered by the rules
    assert {s for c in plan.earlier_candidates for s in c.source_event_ids} == {"e0"}
    assert {s for c in plan.rule_candidates for s in c.source_event_ids} == {"e2"}
    assert plan.prompt_candidates == [*plan.earlier_candidates, *plan.rule_candidates]
    assert plan.owed_tokens > 0
    assert oldest_owed_at(events, plan) == NOW - timedelta(seconds=30)
    assert last_received_at(events) == NOW


def test_a_deferred_plan_keeps_its_rule_candidates_and_sends_nothing() -> None:
    events = [_event(0, SUBSTANTIVE), _event(1, MUST)]
    plan = plan_window(events, llm_available=True)
    deferred = defer_llm(plan)
    assert plan.llm_turns and not deferred.llm_turns and deferred.deferred
    assert deferred.needs_llm_ids == {"e0"}  # apply_outcome leaves these llm_pending
    assert final_candidates(deferred, None) == plan.rule_candidates
    assert any(c.tier is Tier.MUST for c in final_candidates(deferred, None))


def _llm(content: str, source: str, **fields: object) -> Candidate:
    base: dict[str, object] = {
        "kind": Kind.SEMANTIC,
        "category": Category.FACT,
        "tier": Tier.WORTH,
        "confidence": 0.8,
        "source_event_ids": (source,),
        "origin": "llm",
    }
    return Candidate(content=content, **{**base, **fields})  # type: ignore[arg-type]


def test_an_llm_repeat_of_an_earlier_windows_rule_candidate_is_not_stored_again() -> None:
    events = [_event(0, MUST_AND_MORE, status="llm_pending"), _event(1, MUST), _event(2, SUBSTANTIVE)]
    plan = plan_window(events, llm_available=True)
    earlier = plan.earlier_candidates[0]
    fresh = plan.rule_candidates[0]
    answer = [
        _llm(earlier.content, "e0"),  # repeats what the deferred window stored already
        _llm(fresh.content, "e1"),  # repeats this window's MUST candidate
        _llm("The payment webhook retry queue dropped jobs.", "e2", kind=Kind.EPISODIC),
    ]
    out = final_candidates(plan, answer)
    assert [c.content for c in out] == [fresh.content, "The payment webhook retry queue dropped jobs."]
    assert out[0].tier is Tier.MUST and out[0].origin == "rules+llm"
