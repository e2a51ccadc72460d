"""Prune and purge as set-based SQL (one statement per rule, no Python loop over rows).

Each function takes `now` and the policy, returns counts, and is idempotent: a second run with the same
`now` changes nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import text
from sqlalchemy.engine import CursorResult, Result
from sqlmodel import Session

from core.forgetting import DEFAULT_HALF_LIVES, ForgettingPolicy

# Per-tenant half-life: tenants.settings->'half_life_days'->>kind overrides the policy default. The overrides
# of every tenant are read once into one JSON object {tenant id: half_life_days} (`hl.o`, a one-row CTE the
# UPDATE joins), so each memory costs two lookups in it instead of a correlated subquery on tenants; a
# tenant without a row or without a numeric override for the kind gets the policy default, as before.
_OVERRIDES = (
    "hl AS (SELECT jsonb_object_agg(t.id, t.settings->'half_life_days') AS o FROM tenants t "
    "WHERE jsonb_typeof(t.settings->'half_life_days') = 'object')"
)
_HALF_LIFE = (
    "COALESCE(CASE WHEN jsonb_typeof(hl.o->m.tenant_id->m.kind) = 'number' "
    "THEN (hl.o->m.tenant_id->>m.kind)::real END, "
    "CASE m.kind WHEN 'episodic' THEN CAST(:hl_episodic AS real) WHEN 'procedural' THEN CAST(:hl_procedural AS real) "
    "WHEN 'semantic' THEN CAST(:hl_semantic AS real) END)"
)


_ONE_TENANT = "(CAST(:tenant AS text) IS NULL OR tenant_id = :tenant)"
# a memory last touched (confirmed, or returned by a search) before this has decayed past the policy
_DECAY_CUTOFF = f"CAST(:now AS timestamptz) - make_interval(secs => {_HALF_LIFE} * :times * 86400)"


def _policy_params(policy: ForgettingPolicy) -> dict[str, object]:
    half = {**DEFAULT_HALF_LIVES, **policy.half_life_days}
    return {
        "hl_episodic": half.get("episodic"),
        "hl_procedural": half.get("procedural"),
        "hl_semantic": half.get("semantic"),
        "times": policy.archive_after_half_lives,
        "min_acc": policy.min_accesses,
    }


def _rowcount(result: Result[Any]) -> int:
    """Rows the statement touched (text() statements return a CursorResult; the stubs say Result)."""
    return int(cast(CursorResult[Any], result).rowcount or 0)


def prune(
    db: Session, *, now: datetime, policy: ForgettingPolicy, actor: str, tenant_id: str | None = None
) -> dict[str, int]:
    """Archive expired memories (TTL) and memories decayed past `archive_after_half_lives` half-lives
    (every tenant, or only `tenant_id`)."""
    ttl = db.execute(
        text(
            "WITH hit AS (UPDATE memories SET status = 'archived', archived_at = :now, updated_at = :now "
            "  WHERE status = 'active' AND NOT pinned AND expires_at IS NOT NULL AND expires_at <= :now "
            f"  AND {_ONE_TENANT} "
            "  RETURNING id, tenant_id, user_id) "
            "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, reason, actor, created_at) "
            "SELECT id, tenant_id, user_id, 'archive', 'ttl: expires_at passed', :actor, :now FROM hit"
        ),
        {"now": now, "actor": actor, "tenant": tenant_id},
    )
    n_ttl = _rowcount(ttl)
    decay = db.execute(
        text(
            # a kind without a half-life never decays: make_interval(secs => NULL) makes the comparison NULL
            f"WITH {_OVERRIDES}, "
            "hit AS (UPDATE memories m SET status = 'archived', archived_at = :now, updated_at = :now FROM hl "
            f"  WHERE m.status = 'active' AND NOT m.pinned AND {_ONE_TENANT} AND CAST(:min_acc AS int) > 0 "
            f"  AND m.last_confirmed_at < {_DECAY_CUTOFF} "
            # the access counts (memory_access) are looked up only for rows already old by confirmation
            "  AND NOT EXISTS (SELECT 1 FROM memory_access a WHERE a.memory_id = m.id "
            f"      AND (a.access_count >= :min_acc OR a.last_accessed_at >= {_DECAY_CUTOFF})) "
            "  RETURNING m.id, m.tenant_id, m.user_id) "
            "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, reason, actor, created_at) "
            "SELECT id, tenant_id, user_id, 'archive', 'decay: older than three half-lives, rarely used', "
            ":actor, :now FROM hit"
        ),
        {"now": now, "actor": actor, "tenant": tenant_id, **_policy_params(policy)},
    )
    n_decay = _rowcount(decay)
    episodes = db.execute(
        text(
            # episodes decay by the episodic half-life (the tenant's override first) since their session ended
            # or they were last served in a context block, whichever is later; edited ones like the others
            f"WITH {_OVERRIDES} "
            "UPDATE episodes m SET archived_at = :now FROM hl "
            f"WHERE m.archived_at IS NULL AND m.deleted_at IS NULL AND {_ONE_TENANT} "
            "AND greatest(coalesce(m.ended_at, m.created_at), m.created_at, coalesce(m.last_used_at, m.created_at)) "
            "< CAST(:now AS timestamptz) - make_interval(secs => COALESCE(CASE WHEN "
            "jsonb_typeof(hl.o->m.tenant_id->'episodic') = 'number' THEN (hl.o->m.tenant_id->>'episodic')::real END, "
            "CAST(:hl_episodic AS real)) * :times * 86400)"
        ),
        {"now": now, "tenant": tenant_id, **_policy_params(policy)},
    )
    return {
        "archived": n_ttl + n_decay,
        "archived_ttl": n_ttl,
        "archived_decay": n_decay,
        "episodes_archived": _rowcount(episodes),
    }


def purge(
    db: Session, *, now: datetime, policy: ForgettingPolicy, actor: str, tenant_id: str | None = None
) -> dict[str, int]:
    """Delete archived / forgotten rows past retention; history keeps a tombstone without content."""
    cutoff = now - timedelta(days=policy.retention_days)
    gone = db.execute(
        text(
            "WITH gone AS (DELETE FROM memories WHERE status IN ('archived', 'deleted') AND NOT pinned "
            f"  AND {_ONE_TENANT} "
            "  AND archived_at IS NOT NULL AND archived_at <= :cutoff RETURNING id, tenant_id, user_id), "
            "counts AS (DELETE FROM memory_access a USING gone WHERE a.memory_id = gone.id), "
            # only rows that still hold content: setting NULL over NULL would rewrite a row for nothing
            "scrub AS (UPDATE memory_history h SET before = NULL, after = NULL FROM gone "
            "  WHERE h.memory_id = gone.id AND (h.before IS NOT NULL OR h.after IS NOT NULL)) "
            "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, reason, actor, created_at) "
            "SELECT id, tenant_id, user_id, 'purge', 'retention period passed', :actor, :now FROM gone"
        ),
        {"cutoff": cutoff, "now": now, "actor": actor, "tenant": tenant_id},
    )
    # archived episodes past retention go; a deleted episode's tombstone (no content) stays, so that closing
    # its session again cannot write it back
    episodes = db.execute(
        text(
            "DELETE FROM episodes WHERE archived_at IS NOT NULL AND archived_at <= :cutoff "
            f"AND deleted_at IS NULL AND {_ONE_TENANT}"
        ),
        {"cutoff": cutoff, "tenant": tenant_id},
    )
    return {"purged": _rowcount(gone), "episodes_purged": _rowcount(episodes)}


def _retention_days(key: str) -> str:
    """The tenant's `settings.retention.<key>` (days) when it is a positive number, else the default param."""
    return (
        f"COALESCE(CASE WHEN jsonb_typeof(t.settings->'retention'->'{key}') = 'number' "
        f"AND (t.settings->'retention'->>'{key}')::float8 > 0 THEN (t.settings->'retention'->>'{key}')::float8 END, "
        f"CAST(:{key} AS float8))"
    )


TRANSCRIPT_BATCH = 5000


def purge_transcripts(
    db: Session,
    *,
    now: datetime,
    turn_days: float,
    candidate_days: float,
    tenant_id: str | None = None,
    batch: int = TRANSCRIPT_BATCH,
) -> dict[str, int]:
    """Retention of what transcripts leave behind (every tenant, or only `tenant_id`; a tenant's
    `settings.retention.turn_days` / `candidate_days` override the defaults):

    - a turn older than its retention has its text scrubbed (content '', no embedding, no keyword document),
      the row kept with its ids, time, status and `content_sha256` (the text's SHA-256), so a re-sent event is
      still a duplicate and memories still cite it; a turn not yet processed (`pending`, `llm_pending`) is
      never scrubbed;
    - a decided candidate (reconciled or rejected) older than its retention is deleted; new ones wait;
    - a task trace (`task_traces`: what an extraction or reconcile run did, per turn) goes with the turn text,
      after the turn retention.

    In batches of `batch` rows (each statement bounded), repeated until a batch comes back short."""
    scrubbed = 0
    while True:
        result = db.execute(
            text(
                "WITH due AS (SELECT e.tenant_id, e.event_id FROM events e LEFT JOIN tenants t ON t.id = e.tenant_id "
                "  WHERE e.content_purged_at IS NULL AND e.status NOT IN ('pending', 'llm_pending') "
                "  AND (CAST(:tenant AS text) IS NULL OR e.tenant_id = :tenant) "
                "  AND e.event_time < CAST(:now AS timestamptz) - make_interval(secs => "
                f"{_retention_days('turn_days')} * 86400) "
                "  LIMIT :batch FOR UPDATE OF e SKIP LOCKED) "
                "UPDATE events e SET content_sha256 = encode(sha256(convert_to(e.content, 'UTF8')), 'hex'), "
                "content = '', embedding = NULL, search_tokens = NULL, content_purged_at = :now "
                "FROM due WHERE e.tenant_id = due.tenant_id AND e.event_id = due.event_id"
            ),
            {"now": now, "tenant": tenant_id, "turn_days": turn_days, "batch": batch},
        )
        n = _rowcount(result)
        scrubbed += n
        if n < batch:
            break
    gone = db.execute(
        text(
            "DELETE FROM candidates c USING candidates c2 LEFT JOIN tenants t ON t.id = c2.tenant_id "
            "WHERE c.id = c2.id AND c.status <> 'new' "
            "AND (CAST(:tenant AS text) IS NULL OR c.tenant_id = :tenant) "
            "AND c.created_at < CAST(:now AS timestamptz) - make_interval(secs => "
            f"{_retention_days('candidate_days')} * 86400)"
        ),
        {"now": now, "tenant": tenant_id, "candidate_days": candidate_days},
    )
    traces = db.execute(
        text(
            "DELETE FROM task_traces x USING task_traces x2 LEFT JOIN tenants t ON t.id = x2.tenant_id "
            "WHERE x.id = x2.id AND (CAST(:tenant AS text) IS NULL OR x.tenant_id = :tenant) "
            "AND x.finished_at < CAST(:now AS timestamptz) - make_interval(secs => "
            f"{_retention_days('turn_days')} * 86400)"
        ),
        {"now": now, "tenant": tenant_id, "turn_days": turn_days},
    )
    return {
        "turns_scrubbed": scrubbed,
        "candidates_purged": _rowcount(gone),
        "traces_purged": _rowcount(traces),
    }
