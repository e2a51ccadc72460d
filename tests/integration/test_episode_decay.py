"""Episodes decay like other memories (issue 16, item 3): one never served in a context block for three
episodic half-lives is archived by the prune (out of the context block, shown as archived), one that was
served stays, an archived one is purged after the retention period, and a deleted one's tombstone stays so
that its session closed again cannot bring it back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from core.forgetting import ForgettingPolicy
from shared.db.engine import session_scope
from store.pruning import prune, purge
from tests.integration.test_episodes_api import BILLING, DOCS, _api, _close, _context

pytestmark = pytest.mark.integration
POLICY = ForgettingPolicy()  # episodic half-life 30 days, archived after 3 of them, purged 30 days later


def _episodes(engine, tenant: str) -> dict[str, tuple[object, object]]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT session_id, last_used_at, archived_at FROM episodes WHERE tenant_id = :t"), {"t": tenant}
        ).all()
    return {r[0]: (r[1], r[2]) for r in rows}


def test_an_unused_episode_decays_a_served_one_stays_and_archived_ones_are_purged(  # type: ignore[no-untyped-def]
    api_server, api_key, engine, tenant
):
    now = datetime.now(UTC)
    ended = now - timedelta(days=100)  # past 3 x 30 days
    for session, episode in (("billing", BILLING), ("docs", DOCS), ("gone", BILLING)):
        _close(engine, tenant, "ops", session, episode, ended)
    api = _api(api_server, api_key)
    gone = next(e["id"] for e in api.get("/v1/users/ops/episodes").json()["items"] if e["session_id"] == "gone")
    assert api.delete(f"/v1/episodes/{gone}").status_code == 200

    served = _context(api, "the deploy failed with a database timeout")
    billing = next(e for e in api.get("/v1/users/ops/episodes").json()["items"] if e["session_id"] == "billing")
    assert f"episode:{billing['id']}" in served["included"]
    state = _episodes(engine, tenant)
    assert state["billing"][0] is not None and state["docs"][0] is None  # served: marked used

    with session_scope(engine, tenant=tenant) as db:
        counts = prune(db, now=now, policy=POLICY, actor="test", tenant_id=tenant)
    assert counts["episodes_archived"] == 1
    state = _episodes(engine, tenant)
    assert state["docs"][1] is not None and state["billing"][1] is None and state["gone"][1] is None

    # archived: out of the context block, still listed (with when it decayed) until the purge
    block = _context(api, "onboarding docs for the billing service runbook links")
    assert DOCS.lesson not in block["context"]
    listed = {e["session_id"]: e for e in api.get("/v1/users/ops/episodes").json()["items"]}
    assert listed["docs"]["archived_at"] is not None and listed["billing"]["archived_at"] is None

    with session_scope(engine, tenant=tenant) as db:
        assert purge(db, now=now + timedelta(days=10), policy=POLICY, actor="test", tenant_id=tenant)[
            "episodes_purged"
        ] == 0  # not yet past retention
        assert purge(db, now=now + timedelta(days=31), policy=POLICY, actor="test", tenant_id=tenant)[
            "episodes_purged"
        ] == 1
    state = _episodes(engine, tenant)
    assert set(state) == {"billing", "gone"}  # the deleted episode's tombstone stays

    # closing the purged session again writes a fresh episode; closing the deleted one writes nothing back
    _close(engine, tenant, "ops", "docs", DOCS, now)
    _close(engine, tenant, "ops", "gone", BILLING, now)
    listed = {e["session_id"]: e for e in api.get("/v1/users/ops/episodes").json()["items"]}
    assert set(listed) == {"billing", "docs"} and listed["docs"]["archived_at"] is None
