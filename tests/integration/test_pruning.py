"""Pruning with an injected clock: the set-based SQL archives / keeps / purges exactly what the pure policy
says, row by row; pinned memories never; a second run changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from core.forgetting import ForgettingPolicy, MemoryFacts, prune_action
from store.memories import insert_sql
from store.pruning import prune, purge
from tests.memory_rows import insert_memory

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
POLICY = ForgettingPolicy()


def _cases() -> list[dict]:
    cases = []
    for kind in ("semantic", "episodic", "procedural"):
        for age_days in (1, 29, 89, 91, 269, 271, 400):
            for accesses in (0, 1, 2, 5):
                for pinned in (False, True):
                    cases.append({"kind": kind, "age": age_days, "acc": accesses, "pinned": pinned})
    # a recent search keeps an old memory: age counts from the last access (memory_access)
    for kind in ("episodic", "procedural"):
        for accessed_days in (10, 89, 91, 269, 271):
            for accesses in (0, 1, 2):
                cases.append(
                    {"kind": kind, "age": 400, "acc": accesses, "pinned": False, "accessed": accessed_days}
                )
    # TTL and archived rows around the retention edge
    for pinned in (False, True):
        cases.append(
            {"kind": "semantic", "age": 1, "acc": 0, "pinned": pinned, "expires": NOW - timedelta(hours=1)}
        )
        cases.append(
            {"kind": "semantic", "age": 1, "acc": 0, "pinned": pinned, "expires": NOW + timedelta(hours=1)}
        )
        for archived_days in (29, 31):
            cases.append(
                {
                    "kind": "episodic",
                    "age": 500,
                    "acc": 0,
                    "pinned": pinned,
                    "status": "archived",
                    "archived": NOW - timedelta(days=archived_days),
                }
            )
            cases.append(
                {
                    "kind": "semantic",
                    "age": 5,
                    "acc": 0,
                    "pinned": pinned,
                    "status": "deleted",
                    "archived": NOW - timedelta(days=archived_days),
                }
            )
    return cases


def _facts(case: dict) -> MemoryFacts:
    return MemoryFacts(
        kind=case["kind"],
        status=case.get("status", "active"),
        pinned=case["pinned"],
        access_count=case["acc"],
        last_confirmed_at=NOW - timedelta(days=case["age"]),
        last_accessed_at=NOW - timedelta(days=case["accessed"]) if "accessed" in case else None,
        expires_at=case.get("expires"),
        archived_at=case.get("archived"),
    )


def _insert(db, tenant: str, cases: list[dict]) -> list[str]:
    db.execute(text("INSERT INTO tenants (id) VALUES (:t)"), {"t": tenant})
    ids = []
    for i, case in enumerate(cases):
        f = _facts(case)
        row = {
            "tenant_id": tenant,
            "user_id": "u",
            "kind": f.kind,
            "category": "fact",
            "content": f"memory {i}",
            "content_key": f"memory {i}",
            "valid_from": f.last_confirmed_at,
            "status": f.status,
            "pinned": f.pinned,
            "last_confirmed_at": f.last_confirmed_at,
            "expires_at": f.expires_at,
            "archived_at": f.archived_at,
        }
        mid = db.execute(
            text(insert_sql(tuple(row))), row
        ).scalar_one()
        if f.access_count or f.last_accessed_at:  # what searches record (api.access)
            db.execute(
                text(
                    "INSERT INTO memory_access (memory_id, tenant_id, user_id, access_count, last_accessed_at) "
                    "VALUES (:m, :t, 'u', :acc, :la)"
                ),
                {
                    "m": mid,
                    "t": tenant,
                    "acc": f.access_count,
                    "la": f.last_accessed_at or f.last_confirmed_at,
                },
            )
        ids.append(str(mid))
    return ids


def test_prune_and_purge_do_exactly_what_the_policy_says_and_a_second_run_changes_nothing(db, tenant):
    cases = _cases()
    ids = _insert(db, tenant, cases)
    expected = {
        mid: prune_action(_facts(c), now=NOW, policy=POLICY) for mid, c in zip(ids, cases, strict=True)
    }
    assert {"keep", "archive_ttl", "archive_decay", "purge"} <= set(expected.values())

    counts = {
        **prune(db, now=NOW, policy=POLICY, actor="test", tenant_id=tenant),
        **purge(db, now=NOW, policy=POLICY, actor="test", tenant_id=tenant),
    }
    rows = dict(
        db.execute(text("SELECT id::text, status FROM memories WHERE tenant_id = :t"), {"t": tenant}).all()
    )
    for (mid, action), case in zip(expected.items(), cases, strict=True):
        if action == "purge":
            assert mid not in rows, case
        elif action.startswith("archive"):
            assert rows[mid] == "archived", (case, action)
        else:
            assert rows[mid] == case.get("status", "active"), (case, action)
    assert counts["archived_ttl"] == sum(a == "archive_ttl" for a in expected.values())
    assert counts["archived_decay"] == sum(a == "archive_decay" for a in expected.values())
    assert counts["purged"] == sum(a == "purge" for a in expected.values())
    for mid, case in zip(ids, cases, strict=True):
        if case["pinned"]:
            assert rows[mid] == case.get("status", "active")
    # purged rows leave a tombstone without content
    tomb = db.execute(
        text(
            "SELECT count(*) FROM memory_history WHERE tenant_id = :t AND op = 'purge' "
            "AND before IS NULL AND after IS NULL"
        ),
        {"t": tenant},
    ).scalar()
    assert tomb == counts["purged"]
    again = {
        **prune(db, now=NOW, policy=POLICY, actor="test", tenant_id=tenant),
        **purge(db, now=NOW, policy=POLICY, actor="test", tenant_id=tenant),
    }
    assert again == {
        "archived": 0,
        "archived_ttl": 0,
        "archived_decay": 0,
        "episodes_archived": 0,
        "purged": 0,
        "episodes_purged": 0,
    }


def test_a_tenant_can_override_a_kinds_half_life(db, tenant):
    db.execute(
        text('INSERT INTO tenants (id, settings) VALUES (:t, \'{"half_life_days": {"episodic": 5}}\')'),
        {"t": tenant},
    )
    for age in (14, 16):
        insert_memory(
            db,
            tenant_id=tenant,
            user_id="u",
            content=f"age {age}",
            kind="episodic",
            valid_from=NOW - timedelta(days=age),
            last_confirmed_at=NOW - timedelta(days=age),
        )
    prune(db, now=NOW, policy=POLICY, actor="test", tenant_id=tenant)
    statuses = dict(
        db.execute(text("SELECT content, status FROM memories WHERE tenant_id = :t"), {"t": tenant}).all()
    )
    assert statuses == {"age 14": "active", "age 16": "archived"}


def test_without_a_tenant_row_or_a_numeric_override_the_policy_half_life_applies(db, tenant):
    """The overrides are read once for all tenants: a memory whose tenant has no row, a non-numeric
    override, or `half_life_days` that is not an object, decays with the policy's half-life."""
    other = f"{tenant}-norow"  # memories of a tenant without a tenants row
    db.execute(
        text(
            "INSERT INTO tenants (id, settings) VALUES (:t, "
            '\'{"half_life_days": {"episodic": "5", "procedural": 5, "semantic": null}}\'), '
            "(:t2, '{\"half_life_days\": [5]}')"
        ),
        {"t": tenant, "t2": f"{tenant}-array"},
    )
    rows = []
    for t in (tenant, other, f"{tenant}-array"):
        for kind, age in (("episodic", 80), ("episodic", 100), ("procedural", 14), ("procedural", 16)):
            rows.append((t, kind, age))
            insert_memory(
                db,
                tenant_id=t,
                user_id="u",
                content=f"{kind} {age}",
                kind=kind,
                valid_from=NOW - timedelta(days=age),
                last_confirmed_at=NOW - timedelta(days=age),
            )
    for t in (tenant, other, f"{tenant}-array"):
        prune(db, now=NOW, policy=POLICY, actor="test", tenant_id=t)
    got = {
        (r.tenant_id, r.content): r.status
        for r in db.execute(
            text("SELECT tenant_id, content, status FROM memories WHERE tenant_id LIKE :p"),
            {"p": f"{tenant}%"},
        )
    }
    # episodic: policy 30 days (x3 = 90); procedural: 90 days, except the numeric override of 5 (x3 = 15)
    for t in (tenant, other, f"{tenant}-array"):
        assert got[(t, "episodic 80")] == "active" and got[(t, "episodic 100")] == "archived"
    assert got[(tenant, "procedural 14")] == "active" and got[(tenant, "procedural 16")] == "archived"
    for t in (other, f"{tenant}-array"):
        assert got[(t, "procedural 14")] == got[(t, "procedural 16")] == "active"


def test_purge_scrubs_the_content_of_purged_memories_history_only(db, tenant):
    cases = [
        {"kind": "episodic", "age": 500, "acc": 0, "pinned": False, "status": "archived", "archived": a}
        for a in (NOW - timedelta(days=31), NOW - timedelta(days=29))
    ]
    gone, kept = _insert(db, tenant, cases)
    for mid in (gone, kept):
        db.execute(
            text(
                "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, before, after, reason, actor) "
                "VALUES (:m, :t, 'u', 'add', NULL, '{\"content\": \"x\"}', 'r', 'a'), "
                "(:m, :t, 'u', 'archive', NULL, NULL, 'r', 'a'), "
                "(:m, :t, 'u', 'update', '{\"content\": \"x\"}', '{\"content\": \"y\"}', 'r', 'a')"
            ),
            {"m": mid, "t": tenant},
        )
        db.execute(
            text(
                "INSERT INTO memory_access (memory_id, tenant_id, user_id, access_count, last_accessed_at) "
                "VALUES (:m, :t, 'u', 1, :now)"
            ),
            {"m": mid, "t": tenant, "now": NOW - timedelta(days=400)},
        )
    assert purge(db, now=NOW, policy=POLICY, actor="test", tenant_id=tenant) == {"purged": 1, "episodes_purged": 0}
    # the purged memory's access count goes with it
    counted = db.execute(
        text("SELECT memory_id::text FROM memory_access WHERE tenant_id = :t"), {"t": tenant}
    ).scalars()
    assert list(counted) == [kept]
    hist = db.execute(
        text(
            "SELECT memory_id::text AS m, op, before IS NULL AND after IS NULL AS empty FROM memory_history "
            "WHERE tenant_id = :t ORDER BY id"
        ),
        {"t": tenant},
    ).all()
    assert [(r.op, r.empty) for r in hist if r.m == gone] == [
        ("add", True),
        ("archive", True),
        ("update", True),
        ("purge", True),
    ]
    assert [(r.op, r.empty) for r in hist if r.m == kept] == [
        ("add", False),
        ("archive", True),
        ("update", False),
    ]
