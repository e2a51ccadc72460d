"""A tenant's half-life override (`tenants.settings->'half_life_days'`) changes search ranking as well as
pruning: both derive a memory's half-life from its kind and its tenant's policy, by one rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from shared.db.engine import session_scope
from store.search import search
from tests.memory_rows import EMBEDDER, insert_memory

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)
SIXTY_DAYS_AGO = NOW - timedelta(days=60)


def _scores(engine, tenant: str) -> dict[str, float]:
    with session_scope(engine, tenant=tenant) as db:
        hits = search(
            db, tenant_id=tenant, user_id="u", query="release checklist", k=5, embedder=EMBEDDER, now=NOW
        )
    return {h.kind or "": h.score for h in hits}


def _tenant_with_two_memories(engine, tenant: str, settings: str) -> None:
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO tenants (id, settings) VALUES (:t, CAST(:s AS jsonb))"),
            {"t": tenant, "s": settings},
        )
        for kind in ("episodic", "semantic"):
            insert_memory(
                conn,
                tenant_id=tenant,
                user_id="u",
                content=f"the release checklist ({kind})",
                kind=kind,
                valid_from=SIXTY_DAYS_AGO,
                last_confirmed_at=SIXTY_DAYS_AGO,
            )


def test_a_tenants_half_life_override_changes_how_results_rank(engine, tenant):
    default, slow = f"{tenant}-default", f"{tenant}-slow"
    _tenant_with_two_memories(engine, default, "{}")
    # episodic memories of this tenant fade over ten years instead of 30 days
    _tenant_with_two_memories(engine, slow, '{"half_life_days": {"episodic": 3650}}')
    by_default, by_override = _scores(engine, default), _scores(engine, slow)

    # two episodic half-lives (60 of 30 days) leave a quarter of the score; the override leaves ~99 %
    assert by_override["episodic"] / by_default["episodic"] == pytest.approx(
        2 ** (-60 / 3650) / 0.25, rel=1e-3
    )
    # semantic memories have no half-life in either tenant: the same score
    assert by_override["semantic"] == pytest.approx(by_default["semantic"], rel=1e-6)


def test_only_a_number_overrides_a_kinds_half_life_in_ranking_as_in_pruning(engine, tenant):
    default, odd = f"{tenant}-default", f"{tenant}-odd"
    _tenant_with_two_memories(engine, default, "{}")
    _tenant_with_two_memories(engine, odd, '{"half_life_days": {"episodic": "3650", "semantic": null}}')
    assert _scores(engine, odd) == pytest.approx(_scores(engine, default), rel=1e-6)
