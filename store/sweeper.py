"""Stuck work, found for the sweeper: events whose extraction never finished, and candidates never
reconciled. The pending set lives in Postgres, so whatever a lost message or a killed worker left behind
is found here and sent again; events that keep failing are dead-lettered."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlmodel import Session

from shared import tasknames
from store.dead_letters import record_dead_letter


@dataclass(frozen=True)
class StuckWork:
    counts: dict[str, int]  # dead_lettered, sessions_requeued, users_requeued
    sessions: list[tuple[str, str, str, str]]  # (tenant, user, session, reason) to extract again
    users: list[tuple[str, str]]  # (tenant, user) whose candidates wait for reconciliation


def find_stuck_work(
    db: Session, *, now: datetime, stale_after_s: float, max_attempts: int, llm_available: bool
) -> StuckWork:
    """Events pending for `stale_after_s` past `max_attempts` sweeps become `failed` and dead letters; the
    other stale ones count one more attempt and their sessions are returned (reason `sweep`), with, when an
    LLM is available, sessions holding `llm_pending` events due for a retry (reason `llm_retry`; a failed
    turn's `llm_retry_at` is its backoff)."""
    cutoff = now - timedelta(seconds=stale_after_s)
    poisoned = db.execute(
        text(
            "UPDATE events SET status = 'failed', processed_at = :now WHERE status = 'pending' AND "
            "received_at < :cutoff AND attempts >= :max RETURNING tenant_id, event_id, user_id, session_id, role, "
            "event_time"
        ),
        {"now": now, "cutoff": cutoff, "max": max_attempts},
    ).all()
    for r in poisoned:
        record_dead_letter(
            db,
            task_name=tasknames.EXTRACT_SESSION,
            now=now,
            tenant_id=r[0],
            event_id=r[1],
            payload={
                "event_id": r[1],
                "user_id": r[2],
                "session_id": r[3],
                "role": r[4],
                "event_time": r[5].isoformat(),
            },
            reason=f"still pending after {max_attempts} sweeps; extraction keeps failing",
        )
    stale = db.execute(
        text(
            "WITH s AS (UPDATE events SET attempts = attempts + 1 WHERE status = 'pending' AND received_at < :cutoff "
            "RETURNING tenant_id, user_id, session_id) SELECT DISTINCT tenant_id, user_id, session_id FROM s"
        ),
        {"cutoff": cutoff},
    ).all()
    sessions = [(r[0], r[1], r[2], "sweep") for r in stale]
    if llm_available:
        retry = db.execute(
            text(
                "SELECT DISTINCT tenant_id, user_id, session_id FROM events WHERE status = 'llm_pending' "
                "AND (llm_retry_at IS NULL OR llm_retry_at <= :now) LIMIT 200"
            ),
            {"now": now},
        ).all()
        sessions += [(r[0], r[1], r[2], "llm_retry") for r in retry]
    users = db.execute(
        text(
            "SELECT DISTINCT tenant_id, user_id FROM candidates WHERE status = 'new' AND created_at < :cutoff"
        ),
        {"cutoff": now - timedelta(seconds=min(stale_after_s, 300))},
    ).all()
    counts = {
        "dead_lettered": len(poisoned),
        "sessions_requeued": len(sessions),
        "users_requeued": len(users),
    }
    return StuckWork(counts, sessions, [(u[0], u[1]) for u in users])
