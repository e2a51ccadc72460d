"""Distillation of one user's fragments, with the LLM when configured (one batched call per user per run)
and deterministically otherwise. Fragments become `consolidated`; the new memory carries the lineage. The
LLM's part is stage `distill`, with its own breaker: a failed call, none behind an open breaker, or none
because the run's token cap is spent, distills deterministically and says so (`worker.services.llm_stage`).

`distill_users` is the whole run of the `memory.distill` task: per user a run record, then one transaction
under the per-user lock that distills the fragments and rewrites the working memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import structlog
from pydantic import ValidationError
from sqlalchemy import Engine
from sqlmodel import Session

from core.distill import Consolidated, Fragment, cluster, consolidate, thresholds_for
from core.prompts.distill import answer_to_rewrites, build_distill_messages, parse_distill_answer
from shared.contract import utcnow
from shared.db.engine import ALL_TENANTS, session_scope
from shared.db.vectors import vector_literal
from shared.tokens import estimate_tokens
from store.distillation import load_fragments, users_to_distill, write_consolidated
from store.embeddings import Embedder
from store.memories import lock_user
from store.runs import finish_run, last_run_start, start_run
from worker.llm import CircuitBreaker, LLMClient
from worker.services import llm_stage
from worker.services.runs import slot_key
from worker.services.working_memory import rewrite_working_memory

log = structlog.get_logger("worker.maintenance")  # the logger the task's lines always came from


@dataclass
class DistillResult:
    clusters: int
    consolidated: int  # fragments that became `consolidated`
    created: int  # new consolidated memories
    tokens: int
    mode: str  # deterministic | llm | mixed
    errors: list[str]


def _llm_rewrite(
    llm: LLMClient, messages: list[dict[str, str]], clusters: Sequence[Sequence[Fragment]]
) -> tuple[list[Consolidated], int, str | None]:
    """One call for all clusters; returns the validated rewrites (covering 2+ fragments each), tokens used,
    and the error (a `worker.llm.failure_reason` string) when the answer is unusable."""
    content, usage, error = llm.complete_json(messages)
    tokens = usage.tokens
    if error or not content:
        return [], tokens, error or "empty_content"
    try:
        answer = parse_distill_answer(content)
    except ValidationError as exc:
        return [], tokens, f"invalid_output: {exc.error_count()} errors"
    return answer_to_rewrites(answer, clusters), tokens, None


def distill_user(
    db: Session,
    tenant_id: str,
    user_id: str,
    *,
    embedder: Embedder,
    llm: LLMClient | None,
    now: datetime,
    actor: str,
    new_since: datetime | None,
    token_cap: int,
    breaker: CircuitBreaker | None = None,
) -> DistillResult:
    """Cluster and rewrite one user's fragments (caller holds the per-user lock and commits)."""
    fragments = load_fragments(db, tenant_id, user_id)
    clusters = cluster(fragments, new_since=new_since, thresholds=thresholds_for(embedder.name))
    if not clusters:
        return DistillResult(0, 0, 0, 0, "deterministic" if llm is None else "llm", [])
    errors: list[str] = []
    rewrites: list[Consolidated] = []
    tokens = 0
    mode = "deterministic"
    if llm is not None:
        messages = build_distill_messages(clusters)
        reason = None
        if estimate_tokens(messages[0]["content"] + messages[1]["content"]) > token_cap:
            reason = (
                "budget_exhausted"  # the run's token cap: not the endpoint's fault, the breaker is not told
            )
        else:
            reason = llm_stage.gate(llm_stage.DISTILL, breaker)
        if reason is None:
            rewrites, tokens, error = _llm_rewrite(llm, messages, clusters)
            mode = "llm"
            if error:
                reason = llm_stage.failed(llm_stage.DISTILL, breaker, error, clusters=len(clusters))
            else:
                llm_stage.succeeded(breaker)
        if reason is not None:
            errors.append(f"llm: {reason}; deterministic path used")
            mode = "deterministic"
            llm_stage.fell_back(
                db,
                llm_stage.DISTILL,
                tenant_id,
                reason=reason,
                action=llm_stage.DETERMINISTIC,
                now=now,
                clusters=len(clusters),
                detail="deterministic distillation",
            )
    if not rewrites and mode == "deterministic":
        rewrites = [consolidate(members) for members in clusters]
    # with the LLM, fragments it left out stay active, as promised: no deterministic merge behind its back
    vectors = embedder.embed([r.content for r in rewrites])
    write_consolidated(
        db,
        tenant_id,
        user_id,
        rewrites,
        vecs=[vector_literal(v) for v in vectors],
        actor=actor,
        now=now,
        mode=mode,
    )
    return DistillResult(
        clusters=len(clusters),
        consolidated=sum(len(r.consolidated_from) for r in rewrites),
        created=len(rewrites),
        tokens=tokens,
        mode=mode,
        errors=errors,
    )


_TOTALS = ("clusters", "consolidated", "created", "tokens", "errors", "working_memory")


def distill_users(
    engine: Engine,
    *,
    only: tuple[str, str] | None,
    actor: str,
    fire_time: str | None,
    token_cap: int,
    embedder: Embedder,
    llm: LLMClient | None,
    distill_breaker: CircuitBreaker | None = None,
    working_memory_breaker: CircuitBreaker | None = None,
) -> dict[str, int]:
    """Distill `only` this (tenant, user), or every user with new fragments, and rewrite their working
    memory. Each user gets a run record (its slot, for a scheduled run, runs once) and one transaction
    under the per-user lock; a user that fails is recorded and skipped. The LLM is used while the tenant's
    `token_cap` for this run lasts. Returns the totals over the users distilled."""
    if only is not None:
        users = [only]
    else:
        with session_scope(engine, tenant=ALL_TENANTS) as db:
            users = users_to_distill(db)
    totals = {"users": 0, **dict.fromkeys(_TOTALS, 0)}
    spent: dict[str, int] = {}
    for t, u in users:
        now = utcnow()
        run_id = start_run(
            engine,
            kind="distill",
            scope=f"{t}/{u}",
            actor=actor,
            now=now,
            tenant_id=t,
            user_id=u,
            slot_key=slot_key("distill", fire_time, f":{t}:{u}"),
        )
        if run_id is None:
            continue
        since = last_run_start(engine, kind="distill", tenant_id=t, user_id=u)
        try:
            with session_scope(engine, tenant=t) as db:
                lock_user(db, t, u)  # reconciliation of this user waits; others go on
                cap = max(0, token_cap - spent.get(t, 0))
                result = distill_user(
                    db,
                    t,
                    u,
                    embedder=embedder,
                    llm=llm if cap > 0 else None,
                    now=now,
                    actor=actor,
                    new_since=since,
                    token_cap=cap,
                    breaker=distill_breaker,
                )
                wm, wm_tokens = rewrite_working_memory(
                    db, t, u, now=now, llm=llm if cap > 0 else None, breaker=working_memory_breaker
                )
        except Exception as exc:
            finish_run(
                engine, run_id, outcome="error", counts={"errors": 1}, now=utcnow(), detail=repr(exc)[:500]
            )
            totals["errors"] += 1
            log.exception("distill.user_failed", tenant_id=t, user_id=u)
            continue
        spent[t] = spent.get(t, 0) + result.tokens + wm_tokens
        counts = {
            "clusters": result.clusters,
            "consolidated": result.consolidated,
            "created": result.created,
            "tokens": result.tokens + wm_tokens,
            "working_memory": int(wm),
            "errors": len(result.errors),
        }
        finish_run(
            engine,
            run_id,
            outcome="partial" if result.errors else "ok",
            counts=counts,
            now=utcnow(),
            mode=result.mode,
            detail="; ".join(result.errors) or None,
        )
        totals["users"] += 1
        for k in _TOTALS:
            totals[k] += counts[k]
    return totals
