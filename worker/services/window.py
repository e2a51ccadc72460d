"""One window of a session's pending events, planned without I/O: the gate and the rules per turn, which
turns the LLM must see, and the candidates a run stores.

`plan_window` decides; `defer_llm` turns a plan into one that applies its rules now and leaves the
LLM-needing turns `llm_pending` for a later window (see `store.triggers.llm_due` for when);
`final_candidates` merges the LLM's answer in; `settle_llm` gives each event its status and what it keeps of
the LLM's outcome (the reason of a failure, the attempts, when it may be sent again; past the attempt cap
the turn is final with its rule candidates). `keyword_contexts` is the text each turn is indexed under.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from core.extraction.candidates import Candidate, Turn
from core.extraction.gate import GateDecision, gate_window
from core.extraction.merge import merge_candidates
from core.extraction.residual import residual_candidates
from core.extraction.rules import dedupe
from shared.tokens import estimate_tokens
from store.window import LLMState, PendingEvent

MAX_RETRY_DELAY_S = 24 * 3600.0

__all__ = [
    "LLMOutcome",
    "LLMRetryPolicy",
    "PendingEvent",
    "Settled",
    "WindowPlan",
    "defer_llm",
    "event_statuses",
    "final_candidates",
    "gate_summary",
    "keyword_contexts",
    "last_received_at",
    "oldest_owed_at",
    "plan_window",
    "settle_llm",
    "turn_trace",
]


@dataclass
class WindowPlan:
    """What to do with one window, decided without I/O."""

    rule_candidates: list[Candidate]  # of the window's new turns: stored by this run
    llm_turns: list[Turn]  # kept turns to send to the LLM (empty: no call)
    needs_llm_ids: set[str]  # events whose extraction is complete only after the LLM saw them
    skipped_ids: set[str]
    done_ids: set[str]  # fully handled by rules
    gate_reasons: dict[str, str] = field(default_factory=dict)
    # of each kept turn the rules matched: the share of its content the rules covered (GateResult.covered)
    gate_coverage: dict[str, float] = field(default_factory=dict)
    # rule candidates of the `llm_pending` turns, stored by an earlier run: shown to the LLM, never stored again
    earlier_candidates: list[Candidate] = field(default_factory=list)
    owed_tokens: int = 0  # estimated tokens of the turns in needs_llm_ids
    deferred: bool = False  # the LLM call was left to a later window (see defer_llm)

    @property
    def prompt_candidates(self) -> list[Candidate]:
        """The rule candidates the LLM is shown: those of every kept turn of the window."""
        return [*self.earlier_candidates, *self.rule_candidates]


def plan_window(events: Sequence[PendingEvent], *, llm_available: bool, residual: bool = False) -> WindowPlan:
    """Gate every turn, take the rule candidates of the new ones, and pick the turns the LLM must see.

    `residual` (set when no LLM is configured at all): what the rules left of a new user turn that needed the
    LLM is read by the residual sentence filter instead (`core.extraction.residual`), and the sentences it
    keeps are stored with the rule candidates, verbatim and without a slot. With an LLM configured the
    residual is the LLM's, now or later, so the filter never runs (no memory is extracted twice).

    The gate runs the rule extractor on each turn it does not skip and hands over its candidates, so the
    rules run once per turn. Events already `llm_pending` had their rule pass before: they go to the LLM only
    (their candidates are shown to it, not stored twice). Skipped turns never reach the LLM.
    """
    turns = [e.turn() for e in events if e.type == "turn"]
    results = gate_window(turns)
    by_id = {e.event_id: e for e in events}
    skipped: set[str] = {e.event_id for e in events if e.type != "turn"}
    kept: list[Turn] = []
    needs_llm: set[str] = set()
    done: set[str] = set()
    reasons: dict[str, str] = {}
    fresh: list[Candidate] = []
    earlier: list[Candidate] = []
    owed_tokens = 0
    coverage: dict[str, float] = {}
    for turn, result in zip(turns, results, strict=True):
        reasons[turn.event_id] = result.reason
        if result.candidates:
            coverage[turn.event_id] = result.covered
        if result.decision == GateDecision.SKIP:
            skipped.add(turn.event_id)
            continue
        kept.append(turn)
        was_pending = by_id[turn.event_id].status == "llm_pending"
        (earlier if was_pending else fresh).extend(result.candidates)
        if residual and not was_pending and result.decision == GateDecision.NEEDS_LLM:
            fresh.extend(residual_candidates(turn, result.residual, lang=result.lang))
        if result.decision == GateDecision.NEEDS_LLM or was_pending:
            needs_llm.add(turn.event_id)
            owed_tokens += estimate_tokens(turn.content)
        else:
            done.add(turn.event_id)
    llm_turns = kept if (llm_available and needs_llm) else []
    return WindowPlan(
        dedupe(fresh),
        llm_turns,
        needs_llm,
        skipped,
        done,
        reasons,
        earlier_candidates=dedupe(earlier),
        owed_tokens=owed_tokens,
        gate_coverage=coverage,
    )


def gate_summary(plan: WindowPlan) -> dict[str, Any]:
    """What the gate decided in a window, for the run's log line: turns per reason, and of the turns the rules
    matched, how many they covered only in part (those went to the LLM for the rest) and the mean coverage."""
    partial = sum(reason == "partial_cover" for reason in plan.gate_reasons.values())
    covered = list(plan.gate_coverage.values())
    return {
        "gate": dict(sorted(Counter(plan.gate_reasons.values()).items())),
        "partial_cover": partial,
        "rule_coverage": round(sum(covered) / len(covered), 3) if covered else None,
    }


def oldest_owed_at(events: Sequence[PendingEvent], plan: WindowPlan) -> datetime | None:
    """When the longest-waiting turn the LLM owes was received (None when unknown or none is owed)."""
    times = [e.received_at for e in events if e.event_id in plan.needs_llm_ids and e.received_at is not None]
    return min(times, default=None)


def last_received_at(events: Sequence[PendingEvent]) -> datetime | None:
    """When the newest event of the window was received (the window holds the session's newest events)."""
    return max((e.received_at for e in events if e.received_at is not None), default=None)


def defer_llm(plan: WindowPlan) -> WindowPlan:
    """The same window with its LLM call left to a later one: rules apply now, LLM-needing turns stay
    `llm_pending` (`event_statuses` with llm_ok=False), and the next window sends them with its own."""
    return dataclasses.replace(plan, llm_turns=[], deferred=True)


def final_candidates(plan: WindowPlan, llm_candidates: list[Candidate] | None) -> list[Candidate]:
    """The candidates this run stores: the new turns' rule candidates, merged with the LLM's when it answered
    (a MUST rule candidate is never dropped). An LLM candidate repeating a rule candidate an earlier run
    stored (of an `llm_pending` turn) folds into it and is not stored again."""
    if llm_candidates is None:
        return list(plan.rule_candidates)
    earlier = plan.earlier_candidates
    return merge_candidates([*earlier, *plan.rule_candidates], llm_candidates)[len(earlier) :]


def event_statuses(events: Sequence[PendingEvent], plan: WindowPlan, *, llm_ok: bool) -> dict[str, str]:
    """Each event's status once the run is stored: `skipped`, `extracted`, or `llm_pending` for a turn the
    LLM must still see (it did not answer, or the call was deferred)."""
    status_of: dict[str, str] = {}
    for e in events:
        if e.event_id in plan.skipped_ids:
            status_of[e.event_id] = "skipped"
        elif e.event_id in plan.needs_llm_ids:
            status_of[e.event_id] = "extracted" if llm_ok else "llm_pending"
        else:
            status_of[e.event_id] = "extracted"
    return status_of


@dataclass(frozen=True)
class LLMOutcome:
    """What became of the window's LLM part. `answered`: an answer was parsed (possibly with no memory);
    otherwise `reason` says why not (a `worker.llm.failure_reason` category; None: no call was owed now, the
    plan deferred it), `called` whether a call was made (only then does it count an attempt), and
    `retry_at` when a call may be worth making again (the breaker's reopening)."""

    answered: bool
    reason: str | None = None
    called: bool = False
    retry_at: datetime | None = None


@dataclass(frozen=True)
class LLMRetryPolicy:
    max_attempts: int  # failed calls a turn may be part of; then it is final with its rule candidates
    retry_s: float  # backoff before a failed turn is sent again: retry_s x 2^(attempts - 1)


@dataclass(frozen=True)
class Settled:
    status_of: dict[str, str]
    llm_states: list[LLMState]
    given_up: int  # turns made final by the attempt cap
    silent: int  # turns the LLM owed that end final with neither an answer nor a reason (must be 0)


def settle_llm(
    events: Sequence[PendingEvent],
    plan: WindowPlan,
    outcome: LLMOutcome,
    *,
    now: datetime,
    policy: LLMRetryPolicy,
) -> Settled:
    """Each event's status and, for the turns the LLM owed, what they keep of its outcome:

    - answered: `extracted`, the reason cleared;
    - failed after a call: one more attempt; under the cap `llm_pending` with the reason and a backoff
      (`retry_s` doubling per attempt) before any window sends it again; at the cap `extracted` (final, its
      rule candidates stored already) with the reason kept;
    - failed without a call (breaker open, budget spent): `llm_pending` with the reason, sent again from
      `outcome.retry_at` (None: whenever a window may call);
    - deferred (no call owed yet): `llm_pending`, its state untouched.
    """
    status_of = event_statuses(events, plan, llm_ok=outcome.answered)
    states: list[LLMState] = []
    given_up = 0
    by_id = {e.event_id: e for e in events}
    for event_id in sorted(plan.needs_llm_ids):
        event = by_id[event_id]
        if outcome.answered:
            if event.llm_attempts or event.status == "llm_pending":
                states.append(LLMState(event_id, None, event.llm_attempts, None))
            continue
        if outcome.reason is None:
            continue  # deferred
        if not outcome.called:
            states.append(LLMState(event_id, outcome.reason, event.llm_attempts, outcome.retry_at))
            continue
        attempts = event.llm_attempts + 1
        if attempts >= policy.max_attempts:
            status_of[event_id] = "extracted"
            given_up += 1
            states.append(LLMState(event_id, outcome.reason, attempts, None))
        else:
            delay = min(policy.retry_s * 2.0 ** (attempts - 1), MAX_RETRY_DELAY_S)
            states.append(LLMState(event_id, outcome.reason, attempts, now + timedelta(seconds=delay)))
    reason_of = {s.event_id: s.error for s in states}
    silent = sum(
        1
        for event_id in plan.needs_llm_ids
        if status_of[event_id] == "extracted" and not outcome.answered and not reason_of.get(event_id)
    )
    return Settled(status_of, states, given_up, silent)


def keyword_contexts(events: Sequence[PendingEvent], *, before: str) -> dict[str, str]:
    """Each turn's keyword document: the previous turn of the session and the turn itself (pure).

    An answer rarely repeats its question's words ("What did you do?" / "Went hiking"): indexing the pair
    lets the turn that holds the fact be found by the words of the turn that asked for it."""
    out: dict[str, str] = {}
    previous = before
    for e in events:
        if e.type != "turn":
            continue
        out[e.event_id] = f"{previous}\n{e.content}" if previous else e.content
        previous = e.content
    return out


def turn_trace(
    events: Sequence[PendingEvent], plan: WindowPlan, settled: Settled, outcome: LLMOutcome, *, called: bool
) -> dict[str, dict[str, Any]]:
    """What the window did with each event, for its trace (`store.trace`): the gate's reason and coverage,
    the rule candidates it gave (their rules), what the LLM did with it and the status it got. No text.

    `llm`: `answered` (an LLM-owed turn the answer covered), `failed:<reason>` (owed, no answer), `deferred`
    (owed, left to a later window), `context` (not owed, but in the call as context), `not_needed`."""
    sent = {t.event_id for t in plan.llm_turns} if called else set()
    rules_of: dict[str, list[str]] = {}
    for c in plan.rule_candidates:
        for event_id in c.source_event_ids:
            rules_of.setdefault(event_id, []).append(c.rule or c.origin)
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        eid = e.event_id
        if eid in plan.needs_llm_ids:
            if outcome.answered:
                llm = "answered"
            elif outcome.reason:
                llm = f"failed:{outcome.reason}"
            else:
                llm = "deferred"
        else:
            llm = "context" if eid in sent else "not_needed"
        rules = rules_of.get(eid, [])
        out[eid] = {
            "gate": plan.gate_reasons.get(eid, e.type if e.type != "turn" else "skipped"),
            "coverage": plan.gate_coverage.get(eid),
            "rule_candidates": len(rules),
            "rules": sorted(set(rules))[:8],
            "llm": llm,
            "status": settled.status_of.get(eid),
        }
    return out
