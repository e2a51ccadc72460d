"""Tenant isolation enforced by PostgreSQL, erasure, and the read API over real HTTP.

Every endpoint with tenant A's key on tenant B's user, memory or session answers 404 (no existence leak);
a raw SELECT without a WHERE clause, run as the application role, sees one tenant only."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import httpx
import pytest
from sqlalchemy import text

from api.keys import create_key
from shared.db.engine import session_scope
from shared.db.vectors import vector_literal
from store.embeddings import HashingEmbedder
from tests.memory_rows import insert_memory

pytestmark = pytest.mark.integration
T0 = datetime(2026, 5, 1, 9, tzinfo=UTC)
EMB = HashingEmbedder(384)


def _seed_user(conn, tenant: str, user: str, session: str) -> dict[str, str]:
    conn.execute(text("INSERT INTO tenants (id) VALUES (:t) ON CONFLICT DO NOTHING"), {"t": tenant})
    conn.execute(
        text("INSERT INTO sessions (tenant_id, user_id, session_id, turn_count) VALUES (:t, :u, :s, 2)"),
        {"t": tenant, "u": user, "s": session},
    )
    for i, content in enumerate([f"{user} says: I use pnpm", f"{user} says: never use ORMs"]):
        conn.execute(
            text(
                "INSERT INTO events (tenant_id, event_id, user_id, session_id, role, content, event_time) "
                "VALUES (:t, :e, :u, :s, 'user', :c, :ts)"
            ),
            {"t": tenant, "e": f"{user}-e{i}", "u": user, "s": session, "c": content, "ts": T0},
        )
    ids = {}
    for name, kind, cat, content in [
        ("fact", "semantic", "profile", f"{user} uses pnpm."),
        ("rule", "procedural", "constraint", "Never suggest an ORM."),
    ]:
        ids[name] = insert_memory(
            conn,
            tenant_id=tenant,
            user_id=user,
            content=content,
            kind=kind,
            category=cat,
            valid_from=T0,
            source_event_ids=[f"{user}-e0"],
            embedding=vector_literal(EMB.embed([content])[0]),
            search_tokens=content,
        )
        conn.execute(
            text(
                "INSERT INTO memory_history (memory_id, tenant_id, user_id, op, after, reason, actor) "
                "VALUES (:m, :t, :u, 'add', CAST(:a AS jsonb), 'seed', 'test')"
            ),
            {"m": ids[name], "t": tenant, "u": user, "a": json.dumps({"content": content})},
        )
    conn.execute(
        text(
            "INSERT INTO candidates (tenant_id, user_id, session_id, content, kind, category, tier, "
            "confidence, origin, source_event_ids, event_time) VALUES (:t, :u, :s, 'x', 'semantic', "
            "'fact', 'worth', 0.5, 'rules', :se, :ts)"
        ),
        {"t": tenant, "u": user, "s": session, "se": [f"{user}-e0"], "ts": T0},
    )
    conn.execute(
        text(
            "INSERT INTO episodes (tenant_id, user_id, session_id, what_happened, mode, embedding) "
            "VALUES (:t, :u, :s, 'set up the repo', 'deterministic', CAST(:v AS vector))"
        ),
        {"t": tenant, "u": user, "s": session, "v": vector_literal(EMB.embed(["set up the repo"])[0])},
    )
    conn.execute(
        text(
            "INSERT INTO working_memory (tenant_id, user_id, content, mode) VALUES (:t, :u, "
            "'## Constraints\n- Never suggest an ORM.', 'deterministic')"
        ),
        {"t": tenant, "u": user},
    )
    conn.execute(
        text(
            "INSERT INTO dead_letters (fingerprint, tenant_id, task_name, payload, reason) VALUES "
            "(:f, :t, 'memory.ingest', CAST(:p AS jsonb), 'bad role')"
        ),
        {"f": uuid.uuid4().hex, "t": tenant, "p": json.dumps({"user_id": user, "role": "x"})},
    )
    return ids


@pytest.fixture
def two_tenants(engine):
    a, b = f"ta-{uuid.uuid4().hex[:8]}", f"tb-{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        ids_a = _seed_user(conn, a, "alice", "sa")
        _seed_user(conn, a, "carol", "sc")
        ids_b = _seed_user(conn, b, "bob", "sb")
    with session_scope(engine) as db:
        key_a, _ = create_key(db, a)
        key_b, _ = create_key(db, b)
    return {"a": a, "b": b, "key_a": key_a, "key_b": key_b, "ids_a": ids_a, "ids_b": ids_b}


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_every_endpoint_answers_404_for_another_tenants_user_memory_or_session(api_server, two_tenants):
    t = two_tenants
    key, mem = t["key_a"], t["ids_b"]["fact"]
    calls = [
        ("GET", "/v1/users/bob/memories", None),
        ("GET", "/v1/users/bob/context?query=pnpm", None),
        ("DELETE", "/v1/users/bob", None),
        ("POST", "/v1/search", {"user_id": "bob", "query": "pnpm"}),
        ("GET", f"/v1/memories/{mem}", None),
        ("PATCH", f"/v1/memories/{mem}", {"pinned": True}),
        ("DELETE", f"/v1/memories/{mem}", None),
        ("GET", "/v1/sessions/sb/window", None),
    ]
    with httpx.Client(base_url=api_server) as http:
        for method, path, body in calls:
            r = http.request(method, path, json=body, headers=_h(key))
            assert r.status_code == 404, (method, path, r.status_code, r.text)
        # the same calls with B's own key work: the 404s above were isolation, not missing data
        assert http.get("/v1/users/bob/memories", headers=_h(t["key_b"])).status_code == 200
        assert http.get(f"/v1/memories/{mem}", headers=_h(t["key_b"])).json()["pinned"] is False
        assert http.get("/v1/runs", headers=_h(key)).status_code == 200


def test_a_raw_select_without_where_as_the_application_role_sees_only_the_current_tenant(engine, two_tenants):
    t = two_tenants
    with engine.connect() as conn:
        conn.execute(text("SET ROLE memory_api"))
        conn.commit()
        tables = [
            "memories",
            "events",
            "sessions",
            "episodes",
            "memory_history",
            "candidates",
            "working_memory",
            "dead_letters",
            "api_keys",
        ]
        with conn.begin():
            conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": t["a"]})
            for table in tables:
                tenants = set(conn.execute(text(f"SELECT tenant_id FROM {table}")).scalars().all())
                assert tenants == {t["a"]}, (table, tenants)
        with conn.begin():  # no tenant set: nothing at all (fail closed)
            assert conn.execute(text("SELECT count(*) FROM memories")).scalar() == 0
        with conn.begin():  # the API role cannot widen its scope with the worker's wildcard
            conn.execute(text("SELECT set_config('app.tenant_id', '*', true)"))
            assert conn.execute(text("SELECT count(*) FROM memories")).scalar() == 0
        with (
            pytest.raises(Exception, match="row-level security"),
            conn.begin(),
        ):  # nor write into another tenant
            conn.execute(text("SELECT set_config('app.tenant_id', :t, true)"), {"t": t["a"]})
            conn.execute(
                text("INSERT INTO sessions (tenant_id, user_id, session_id) VALUES (:b, 'x', 'y')"),
                {"b": t["b"]},
            )
        conn.execute(text("RESET ROLE"))
        conn.commit()


def test_erasing_a_user_removes_every_row_that_mentions_them_and_nothing_else(
    api_server, engine, two_tenants
):
    t = two_tenants
    with httpx.Client(base_url=api_server) as http:
        r = http.delete("/v1/users/alice", headers=_h(t["key_a"]))
        assert r.status_code == 200, r.text
        deleted = r.json()["deleted"]
        assert deleted["memories"] == 2 and deleted["events"] == 2 and deleted["memory_history"] == 2
        assert deleted["episodes"] == 1 and deleted["working_memory"] == 1 and deleted["dead_letters"] == 1
        assert (
            http.post(
                "/v1/search", json={"user_id": "alice", "query": "pnpm"}, headers=_h(t["key_a"])
            ).status_code
            == 404
        )
        assert http.get("/v1/users/carol/memories", headers=_h(t["key_a"])).status_code == 200
    with engine.connect() as conn:
        tables = (
            conn.execute(
                text(
                    "SELECT table_name FROM information_schema.columns WHERE column_name = 'user_id' "
                    "AND table_schema = 'public'"
                )
            )
            .scalars()
            .all()
        )
        for table in tables:
            n = conn.execute(
                text(f"SELECT count(*) FROM {table} WHERE tenant_id = :t AND user_id = 'alice'"),
                {"t": t["a"]},
            ).scalar()
            assert n == 0, table
        everything = conn.execute(
            text(
                "SELECT string_agg(x::text, ' ') FROM (SELECT row_to_json(d) x FROM dead_letters d WHERE tenant_id = :t "
                "UNION ALL SELECT row_to_json(h) FROM memory_history h WHERE tenant_id = :t) s"
            ),
            {"t": t["a"]},
        ).scalar()
        assert "alice" not in (everything or "")
        for user, tenant in (("carol", t["a"]), ("bob", t["b"])):
            assert (
                conn.execute(
                    text("SELECT count(*) FROM memories WHERE tenant_id = :t AND user_id = :u"),
                    {"t": tenant, "u": user},
                ).scalar()
                == 2
            )


def test_edit_pin_ttl_and_forget_are_recorded_in_history_as_this_key(api_server, two_tenants):
    t = two_tenants
    mem = t["ids_a"]["fact"]
    with httpx.Client(base_url=api_server, headers=_h(t["key_a"])) as http:
        r = http.patch(
            f"/v1/memories/{mem}", json={"content": "alice uses pnpm 9.", "pinned": True, "ttl_days": 7}
        )
        assert r.status_code == 200, r.text
        assert (
            r.json()["pinned"] is True
            and r.json()["expires_at"]
            and r.json()["content"] == "alice uses pnpm 9."
        )
        assert http.patch(f"/v1/memories/{mem}", json={"bogus": 1}).status_code == 422
        assert http.delete(f"/v1/memories/{mem}").json()["status"] == "deleted"
        history = http.get(f"/v1/memories/{mem}").json()["history"]
        assert [h["op"] for h in history] == ["add", "edit", "forget"]
        assert all(h["actor"].startswith("api_key:") for h in history[1:])
        listed = http.get("/v1/users/alice/memories", params={"status": ["deleted"]}).json()["items"]
        assert [m["id"] for m in listed] == [mem]


def test_the_context_block_stays_within_budget_and_keeps_rules(api_server, two_tenants):
    t = two_tenants
    with httpx.Client(base_url=api_server, headers=_h(t["key_a"])) as http:
        small = http.get("/v1/users/alice/context", params={"query": "pnpm", "max_tokens": 30}).json()
        assert small["tokens"] <= 30 and "Never suggest an ORM." in small["context"]
        big = http.get("/v1/users/alice/context", params={"query": "pnpm", "max_tokens": 2000}).json()
        assert "Working memory" in big["context"] and "alice uses pnpm." in big["context"]
        metrics = http.get("/metrics").text
        assert "memory_memories" in metrics and "memory_api_request_seconds" in metrics
        # latency is labelled by the route's template (not the raw path) and the response's status
        assert 'method="GET",route="/v1/users/{user_id}/context",status="200"' in metrics


def test_a_dropped_database_connection_fails_one_request_with_503_and_the_next_one_reconnects(
    api_server, engine, two_tenants
):
    # the API's pool does not ping before each request: the request that meets a dead connection must get
    # a retryable 503 (not a 500), and the pool must then replace its connections
    search = {"user_id": "alice", "query": "pnpm"}
    with httpx.Client(base_url=api_server, headers=_h(two_tenants["key_a"])) as http:
        assert http.post("/v1/search", json=search).status_code == 200
        with engine.connect() as conn:  # the database owner ends every backend of the API
            ended = conn.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = 'memory-api' AND datname = current_database()"
                )
            ).scalar_one()
        assert ended >= 1
        lost = http.post("/v1/search", json=search)
        assert lost.status_code == 503, lost.text
        assert lost.headers["content-type"] == "application/problem+json"
        assert lost.headers["retry-after"] == "1" and "retry" in lost.json()["detail"]
        again = http.post("/v1/search", json=search)
        assert again.status_code == 200 and again.json()["results"], again.text


def test_every_table_with_a_tenant_column_has_row_level_security_for_both_roles(engine):
    """A table added later without its policies would be readable across tenants by the application."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT c.relname, c.relrowsecurity, "
                "array(SELECT p.polname::text FROM pg_policy p WHERE p.polrelid = c.oid ORDER BY 1) "
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'public' AND c.relkind = 'r' AND EXISTS (SELECT 1 FROM pg_attribute a "
                "WHERE a.attrelid = c.oid AND a.attname IN ('tenant_id') AND NOT a.attisdropped)"
            )
        ).all()
    assert {r[0] for r in rows} >= {"memories", "events", "memory_access"}
    for table, secured, policies in rows:
        assert secured and policies == ["tenant_isolation_api", "tenant_isolation_worker"], table
