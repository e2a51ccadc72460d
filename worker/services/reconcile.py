"""The reconcile shell: a user's new candidates decided (pure, `core.reconcile`) and applied (store), under the
per-user advisory lock; similar-but-unclear pairs are judged by the LLM in one call per batch (stage
`reconcile`, with its own breaker). Without a verdict (a failed call, or none behind an open breaker) each pair
gets the decision it gets with no LLM (a slot keeps its value and the candidate is held, else it is added),
and the fallback is said and counted (`worker.services.llm_stage`).

A batch that replaced or forgot memories the user's working memory mentions rewrites that document in the
same transaction (`worker.services.working_memory.refresh_if_stale`): a read after the change never finds
the old value there.

`reconcile_backlog` is the whole run of the `memory.reconcile_user` task: batches of `BATCH` candidates, one
transaction each, then an early distillation when the user's fragments pile up."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import datetime

import structlog
from sqlalchemy import Engine
from sqlmodel import Session

from core.correction import is_correction_rule, taken_back_values
from core.prompts.judge import build_judge_messages, parse_judge_answer
from core.reconcile import Decision, Existing, Op, PendingCandidate, Policy, decide, judged
from shared import tasknames
from shared.db.engine import session_scope
from shared.db.vectors import set_search_params, vector_literal
from shared.publisher import TaskPublisher
from store.candidates import load_new_candidates, mark_reconciled
from store.distillation import count_fragments
from store.embeddings import Embedder
from store.memories import apply_decision, ended_names, lock_user, naming, nearest, slot_rows
from store.trace import record_task_trace
from store.usage import record_usage, within_budget
from worker.llm import CircuitBreaker, LLMClient, LLMUsage
from worker.services import llm_stage
from worker.services.working_memory import refresh_if_stale

log = structlog.get_logger("worker.reconcile")

BATCH = 200
MAX_CORRECTION_VALUES = 4  # a correction's values looked up by name (each a query)
_DECISIONS = {str(op) for op in Op}


def judge_pairs(
    llm: LLMClient, pairs: Sequence[tuple[str, str]]
) -> tuple[dict[int, str], LLMUsage, str | None]:
    """One LLM call for every similar-but-unclear pair of a batch: the verdicts by pair number, the usage, and
    why there are none (the client's error, or `invalid_output` for an answer with no valid verdict)."""
    content, usage, error = llm.complete_json(build_judge_messages(pairs))
    if error:
        return {}, usage, error
    verdicts = parse_judge_answer(content, pairs=len(pairs))
    return verdicts, usage, None if verdicts else "invalid_output: no verdict for any pair"


def reconcile_user(
    db: Session,
    tenant_id: str,
    user_id: str,
    *,
    embedder: Embedder,
    policy: Policy,
    actor: str,
    now: datetime,
    limit: int = 200,
    llm: LLMClient | None = None,
    breaker: CircuitBreaker | None = None,
    working_memory_breaker: CircuitBreaker | None = None,
) -> dict[str, int]:
    """Reconcile the user's new candidates, oldest event first, under the per-user lock. Caller commits.

    Clear cases are applied one by one; similar-but-unclear ones are judged together in one LLM call at the
    end of the batch (or added, without an LLM). When memories were replaced or forgotten and the working
    memory mentions one of them, it is rewritten here (counted as `working_memory`)."""
    lock_user(db, tenant_id, user_id)
    cands = load_new_candidates(db, tenant_id, user_id, limit=limit)
    counts: dict[str, int] = {}
    if not cands:
        return counts
    deferred: list[tuple[PendingCandidate, str, Decision, Existing]] = []
    seen: dict[str, Existing] = {}  # the rows decisions were taken against, by id
    ended: list[tuple[str, str | None]] = []  # content and value of the memories replaced or forgotten
    vectors = [vector_literal(v) for v in embedder.embed([c.content for c in cands])]
    set_search_params(db, ef_search=100)
    # what the user said they left: a statement of it older than that is past
    left = ended_names(db, tenant_id, user_id)
    for c, vec in zip(cands, vectors, strict=True):
        rows = slot_rows(db, tenant_id, user_id, c.slot) if c.slot else []
        if c.op == "end":  # the memories naming what was left, however far from the statement's words
            neighbours = naming(db, tenant_id, user_id, c.value or "")
        else:
            neighbours = nearest(db, tenant_id, user_id, vec)
        if is_correction_rule(c.rule):  # and those naming a value it takes back ("8080 is taken")
            close = {n.id for n in neighbours}
            for value in taken_back_values(c.content)[:MAX_CORRECTION_VALUES]:
                neighbours += [n for n in naming(db, tenant_id, user_id, value, limit=5) if n.id not in close]
                close.update(n.id for n in neighbours)
        seen.update((n.id, n) for n in [*neighbours, *rows])
        decision = decide(
            c,
            neighbours=neighbours,
            slot_rows=rows,
            policy=policy,
            llm_available=llm is not None,
            ended=left,
        )
        if c.op == "end" and c.value:
            left.append((c.value, c.event_time))
        if decision.op == Op.JUDGE:
            deferred.append((c, vec, decision, seen[decision.target_ids[0]]))
            continue
        # a correction: the memory it corrects is stored again with the value corrected
        if "content" in decision.extra:
            extra = decision.extra
            c = dataclasses.replace(
                c, content=extra["content"], kind=extra.get("kind", c.kind), slot=extra.get("slot"),
                value=extra.get("value"),
            )  # fmt: skip
            vec = vector_literal(embedder.embed([c.content])[0])
        _apply_and_mark(db, tenant_id, user_id, c, decision, vec, actor=actor, now=now, counts=counts)
        ended += _ended(decision, seen)
    if deferred:
        assert llm is not None  # `decide` defers to the judge only when an LLM is available
        verdicts: dict[int, str] = {}
        reason = llm_stage.gate(llm_stage.RECONCILE, breaker)
        if reason is None:
            verdicts, usage, error = judge_pairs(
                llm, [(old.content, c.content) for c, _v, _d, old in deferred]
            )
            counts["llm_calls"] = usage.calls
            counts["llm_tokens"] = usage.tokens
            if error is None:
                llm_stage.succeeded(breaker)
            else:
                reason = llm_stage.failed(llm_stage.RECONCILE, breaker, error, pairs=len(deferred))
        if reason is not None:
            llm_stage.fell_back(
                db,
                llm_stage.RECONCILE,
                tenant_id,
                reason=reason,
                action=llm_stage.DETERMINISTIC,
                now=now,
                pairs=len(deferred),
                detail="each pair decided as without an LLM: a slot keeps its value, else added",
            )
        why = reason or "none for this pair"
        for n, (c, vec, decision, _old) in enumerate(deferred):
            verdict = verdicts.get(n)
            if verdict:
                final = judged(decision, verdict)
            elif decision.extra.get("slot"):  # never a second current value in a slot
                final = Decision(Op.HOLD, f"{decision.reason}; no LLM verdict ({why})", decision.target_ids)
            else:
                final = Decision(Op.ADD, f"{decision.reason}; no LLM verdict ({why})")
            _apply_and_mark(db, tenant_id, user_id, c, final, vec, actor=actor, now=now, counts=counts)
            ended += _ended(final, seen)
    if ended:
        refreshed, tokens = refresh_if_stale(
            db, tenant_id, user_id, ended, now=now, llm=llm, breaker=working_memory_breaker
        )
        if refreshed:
            counts["working_memory"] = 1
        if tokens:
            counts["llm_working_memory_tokens"] = tokens
    return counts


def _ended(decision: Decision, seen: dict[str, Existing]) -> list[tuple[str, str | None]]:
    """The memories a decision ended (replaced or forgotten): their content and value."""
    if decision.op not in (Op.SUPERSEDE, Op.FORGET, Op.END):
        return []
    return [(seen[i].content, seen[i].value) for i in decision.target_ids if i in seen]


def _apply_and_mark(
    db: Session,
    tenant_id: str,
    user_id: str,
    c: PendingCandidate,
    decision: Decision,
    vec: str,
    *,
    actor: str,
    now: datetime,
    counts: dict[str, int],
) -> None:
    memory_id = apply_decision(db, tenant_id, user_id, c, decision, vec, actor=actor, now=now)
    mark_reconciled(db, c.id, decision=str(decision.op), memory_id=memory_id)
    counts[str(decision.op)] = counts.get(str(decision.op), 0) + 1


def reconcile_backlog(
    engine: Engine,
    publisher: TaskPublisher,
    tenant_id: str,
    user_id: str,
    *,
    embedder: Embedder,
    policy: Policy,
    llm: LLMClient | None,
    actor: str,
    clock: Callable[[], datetime],
    daily_token_budget: int,
    distill_fragment_threshold: int,
    breaker: CircuitBreaker | None = None,
    working_memory_breaker: CircuitBreaker | None = None,
    task_id: str | None = None,
) -> dict[str, int]:
    """Reconcile every new candidate of the user, a batch of `BATCH` per transaction, until a batch comes
    back short (`clock` dates each batch and its usage). Returns the decisions by op plus `llm_calls` and
    `llm_tokens` (the judge's usage). A run that decided anything leaves its trace row (`task_id`, the
    totals), which the history rows' actor points to."""
    totals: dict[str, int] = {}
    while True:
        with session_scope(engine, tenant=tenant_id) as db:
            counts = reconcile_user(
                db,
                tenant_id,
                user_id,
                embedder=embedder,
                policy=policy,
                actor=actor,
                now=clock(),
                limit=BATCH,
                llm=_judge_llm(db, llm, tenant_id, now=clock(), daily_token_budget=daily_token_budget),
                breaker=breaker,
                working_memory_breaker=working_memory_breaker,
            )
            if counts.get("llm_calls"):
                record_usage(
                    db,
                    tenant_id,
                    day=clock().date().isoformat(),
                    stage="reconcile",
                    calls=counts["llm_calls"],
                    prompt_tokens=counts.get("llm_tokens", 0),
                    completion_tokens=0,
                )
            if counts.get("llm_working_memory_tokens"):
                record_usage(
                    db,
                    tenant_id,
                    day=clock().date().isoformat(),
                    stage="working_memory",
                    calls=1,
                    prompt_tokens=counts["llm_working_memory_tokens"],
                    completion_tokens=0,
                )
        for k, v in counts.items():  # llm_* are usage, working_memory a rewrite, not decisions
            totals[k] = totals.get(k, 0) + v
        if sum(v for k, v in counts.items() if k in _DECISIONS) < BATCH:
            break
    if totals:
        with session_scope(engine, tenant=tenant_id) as db:
            record_task_trace(
                db,
                tenant_id=tenant_id,
                user_id=user_id,
                stage="reconcile",
                task_name=tasknames.RECONCILE_USER,
                task_id=task_id,
                now=clock(),
                summary={"outcome": "ok", **totals},
            )
        _distill_if_crowded(engine, publisher, tenant_id, user_id, threshold=distill_fragment_threshold)
    return totals


def _judge_llm(
    db: Session, llm: LLMClient | None, tenant_id: str, *, now: datetime, daily_token_budget: int
) -> LLMClient | None:
    """The LLM for the judge, or None once the tenant's daily token budget is spent (the judge then decides
    without it, as with no LLM configured): the budget covers every stage, not only extraction."""
    if llm is None:
        return None
    allowed, budget = within_budget(
        db, tenant_id, day=now.date().isoformat(), default_budget=daily_token_budget
    )
    if allowed:
        return llm
    log.warning("llm.budget_exhausted", stage="reconcile", budget=budget, detail="judging without the LLM")
    return None


def _distill_if_crowded(
    engine: Engine, publisher: TaskPublisher, tenant_id: str, user_id: str, *, threshold: int
) -> None:
    """Distill a user early when their active fragments pass the threshold (at most once an hour)."""
    with session_scope(engine, tenant=tenant_id) as db:
        active = count_fragments(db, tenant_id, user_id)
    if active < threshold:
        return
    if publisher.set_once(f"memory:distill-early:{tenant_id}:{user_id}", 3600):
        publisher.publish(tasknames.DISTILL, [None, tenant_id, user_id])
