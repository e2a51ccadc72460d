"""Retention of transcripts (issue #16, item 5): the purge scrubs a processed turn's text after the tenant's
turn retention (the row keeps ids, time, status and the text's SHA-256), never an unprocessed turn; decided
candidates are deleted after the candidate retention, new ones never; per-tenant overrides apply; a second
run changes nothing."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from store.pruning import purge_transcripts

pytestmark = pytest.mark.integration

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _event(db, tenant, event_id, *, age_days, status="extracted", content=None):
    db.execute(
        text(
            "INSERT INTO events (tenant_id, event_id, user_id, session_id, role, content, event_time, status, "
            "search_tokens) VALUES (:t, :e, 'u', 's', 'user', :c, :at, :st, to_tsvector('simple', :c))"
        ),
        {
            "t": tenant,
            "e": event_id,
            "c": content or f"turn text of {event_id}",
            "at": NOW - timedelta(days=age_days),
            "st": status,
        },
    )


def _candidate(db, tenant, *, age_days, status):
    return db.execute(
        text(
            "INSERT INTO candidates (tenant_id, user_id, session_id, content, kind, category, tier, confidence, "
            "origin, source_event_ids, event_time, status, created_at) VALUES (:t, 'u', 's', 'a fact', "
            "'semantic', 'fact', 'worth', 0.9, 'rules', '{e}', :at, :st, :at) RETURNING id"
        ),
        {"t": tenant, "at": NOW - timedelta(days=age_days), "st": status},
    ).scalar_one()


def _trace(db, tenant, *, age_days):
    return db.execute(
        text(
            "INSERT INTO task_traces (tenant_id, user_id, session_id, task_id, task_name, stage, finished_at, "
            "event_ids) VALUES (:t, 'u', 's', 'tid', 'memory.extract_session', 'extract', :at, '{old}') RETURNING id"
        ),
        {"t": tenant, "at": NOW - timedelta(days=age_days)},
    ).scalar_one()


def test_turn_text_and_decided_candidates_go_after_their_retention(db, tenant):
    short = f"{tenant}-short"
    db.execute(
        text("INSERT INTO tenants (id, settings) VALUES (:t, '{}'), (:s, CAST(:cfg AS jsonb))"),
        {"t": tenant, "s": short, "cfg": json.dumps({"retention": {"turn_days": 10, "candidate_days": 5}})},
    )
    _event(db, tenant, "old", age_days=100, content="We deploy with ArgoCD.")
    _event(db, tenant, "old-pending", age_days=100, status="pending")
    _event(db, tenant, "old-llm-pending", age_days=100, status="llm_pending")
    _event(db, tenant, "recent", age_days=20)
    _event(db, short, "recent", age_days=20)
    _event(db, short, "fresh", age_days=2)
    cands = {
        "old_decided": _candidate(db, tenant, age_days=40, status="reconciled"),
        "old_rejected": _candidate(db, tenant, age_days=40, status="rejected"),
        "old_new": _candidate(db, tenant, age_days=40, status="new"),
        "recent_decided": _candidate(db, tenant, age_days=10, status="reconciled"),
        "short_decided": _candidate(db, short, age_days=10, status="reconciled"),
    }
    # task traces (what a window did with each turn) go with the turn text, after the turn retention
    traces = {"old": _trace(db, tenant, age_days=100), "recent": _trace(db, tenant, age_days=20)}
    short_trace = _trace(db, short, age_days=20)
    for t in (tenant, short):
        counts = purge_transcripts(db, now=NOW, turn_days=90, candidate_days=30, tenant_id=t, batch=1)
        if t == tenant:
            assert counts == {"turns_scrubbed": 1, "candidates_purged": 2, "traces_purged": 1}
        else:
            assert counts == {"turns_scrubbed": 1, "candidates_purged": 1, "traces_purged": 1}
    left_traces = set(
        db.execute(
            text("SELECT id FROM task_traces WHERE tenant_id IN (:t, :s)"), {"t": tenant, "s": short}
        ).scalars()
    )
    assert left_traces == {traces["recent"]} and short_trace not in left_traces

    rows = {
        (r.tenant_id, r.event_id): r
        for r in db.execute(
            text(
                "SELECT tenant_id, event_id, content, content_sha256, content_purged_at, search_tokens, status, "
                "event_time FROM events WHERE tenant_id IN (:t, :s)"
            ),
            {"t": tenant, "s": short},
        ).all()
    }
    assert len(rows) == 6  # every row stays: idempotency and lineage hold
    old = rows[(tenant, "old")]
    assert old.content == "" and old.search_tokens is None and old.content_purged_at == NOW
    assert old.content_sha256 == hashlib.sha256(b"We deploy with ArgoCD.").hexdigest()
    assert old.status == "extracted" and old.event_time == NOW - timedelta(days=100)
    for key in ((tenant, "old-pending"), (tenant, "old-llm-pending"), (tenant, "recent"), (short, "fresh")):
        assert rows[key].content.startswith("turn text") and rows[key].content_sha256 is None, key
    assert rows[(short, "recent")].content == ""  # the tenant's 10-day override

    left = set(
        db.execute(
            text("SELECT id FROM candidates WHERE tenant_id IN (:t, :s)"), {"t": tenant, "s": short}
        ).scalars()
    )
    assert left == {cands["old_new"], cands["recent_decided"]}

    for t in (tenant, short):
        assert purge_transcripts(db, now=NOW, turn_days=90, candidate_days=30, tenant_id=t) == {
            "turns_scrubbed": 0,
            "candidates_purged": 0,
            "traces_purged": 0,
        }
