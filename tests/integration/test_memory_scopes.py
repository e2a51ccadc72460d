"""Memory scopes over the real API: user, agent and app memories (issue 16, item 1).

An agent-scoped memory is read by its agent only (not by another agent of the same user, not by a read
without an agent); an app-scoped memory is read by every user of its tenant and by no other tenant; reads
rank the three together and label each result with its scope. Extracted memories stay user scope."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from api.keys import create_key
from core.reconcile import Decision, Op, PendingCandidate
from memory_client import Memory
from shared.db.engine import session_scope
from shared.db.vectors import vector_literal
from store import memories as repo
from store.embeddings import HashingEmbedder
from store.scopes import APP_USER

pytestmark = pytest.mark.integration


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _remember(url: str, key: str, **body: Any) -> dict[str, Any]:
    r = httpx.post(f"{url}/v1/memories", json=body, headers=_h(key), timeout=30)
    assert r.status_code == 201, r.text
    return r.json()["memory"]  # type: ignore[no-any-return]


def _search(url: str, key: str, **body: Any) -> list[dict[str, Any]]:
    r = httpx.post(f"{url}/v1/search", json={"k": 20, **body}, headers=_h(key), timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["results"]  # type: ignore[no-any-return]


def _context(url: str, key: str, user: str, **params: Any) -> dict[str, Any]:
    r = httpx.get(f"{url}/v1/users/{user}/context", params=params, headers=_h(key), timeout=30)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_an_agent_scoped_memory_is_read_by_its_agent_only(api_server, api_key):  # type: ignore[no-untyped-def]
    own = _remember(
        api_server, api_key, user_id="alice", content="Alice deploys with ArgoCD", category="fact"
    )
    coder = _remember(
        api_server,
        api_key,
        user_id="alice",
        scope="agent",
        agent_id="coder",
        content="Alice wants deploy scripts written in bash",
        kind="procedural",
        category="feedback",
    )
    assert (coder["scope"], coder["agent_id"], coder["user_id"]) == ("agent", "coder", "alice")
    assert (own["scope"], own["agent_id"]) == ("user", None)

    as_coder = {
        h["id"]: h for h in _search(api_server, api_key, user_id="alice", query="deploy", agent_id="coder")
    }
    assert coder["id"] in as_coder and own["id"] in as_coder  # ranked together
    assert (as_coder[coder["id"]]["scope"], as_coder[coder["id"]]["agent_id"]) == ("agent", "coder")
    assert as_coder[own["id"]]["scope"] == "user"
    block = _context(api_server, api_key, "alice", query="deploy", agent_id="coder")
    assert coder["id"] in block["included"] and own["id"] in block["included"]
    assert "[agent] Alice wants deploy scripts written in bash" in block["context"]

    for reader in ({"agent_id": "reviewer"}, {}):  # another agent of the same user; no agent at all
        ids = {h["id"] for h in _search(api_server, api_key, user_id="alice", query="deploy", **reader)}
        assert own["id"] in ids and coder["id"] not in ids, reader
        block = _context(api_server, api_key, "alice", query="deploy", **reader)
        assert coder["id"] not in block["included"] and "bash" not in block["context"], reader
    # the agent's memory is not the user's either for another user with the same agent
    _remember(api_server, api_key, user_id="bob", content="Bob deploys with Flux")
    ids = {h["id"] for h in _search(api_server, api_key, user_id="bob", query="deploy", agent_id="coder")}
    assert coder["id"] not in ids


def test_an_agent_has_its_own_slots_beside_the_users(api_server, api_key):  # type: ignore[no-untyped-def]
    slot = {"slot": "tooling.package_manager", "category": "preference"}
    user_row = _remember(api_server, api_key, user_id="dana", content="Dana uses pnpm", value="pnpm", **slot)
    agent_row = _remember(
        api_server,
        api_key,
        user_id="dana",
        scope="agent",
        agent_id="ci-bot",
        content="Use npm in CI",
        value="npm",
        **slot,
    )
    # the agent's value did not supersede the user's: each owner holds one current value in the slot
    listed = httpx.get(
        f"{api_server}/v1/users/dana/memories", params={"slot": slot["slot"]}, headers=_h(api_key)
    )
    assert {m["id"]: m["status"] for m in listed.json()["items"]} == {
        user_row["id"]: "active",
        agent_row["id"]: "active",
    }
    newer = _remember(
        api_server,
        api_key,
        user_id="dana",
        scope="agent",
        agent_id="ci-bot",
        content="Use yarn in CI",
        value="yarn",
        **slot,
    )
    current = httpx.get(
        f"{api_server}/v1/users/dana/memories", params={"slot": slot["slot"]}, headers=_h(api_key)
    ).json()["items"]
    assert {m["id"] for m in current} == {user_row["id"], newer["id"]}


def test_an_app_scoped_memory_is_read_by_every_user_of_the_tenant_and_no_other_tenant(  # type: ignore[no-untyped-def]
    api_server, api_key, engine, tenant
):
    with session_scope(engine) as db:
        other_key, _ = create_key(db, f"{tenant}-other")
    for key in (api_key, other_key):
        for user in ("erin", "frank"):
            _remember(api_server, key, user_id=user, content=f"{user} writes Go services")
    shared = _remember(
        api_server,
        api_key,
        scope="app",
        content="The staging cluster is rebuilt every Monday",
        category="fact",
    )
    assert (shared["scope"], shared["user_id"], shared["agent_id"]) == ("app", APP_USER, None)

    for user in ("erin", "frank"):
        for reader in ({}, {"agent_id": "coder"}):
            hits = _search(api_server, api_key, user_id=user, query="staging cluster rebuilt", **reader)
            labelled = {h["id"]: h["scope"] for h in hits}
            assert labelled.get(shared["id"]) == "app", (user, reader)
            block = _context(api_server, api_key, user, query="staging cluster", **reader)
            assert "[app] The staging cluster is rebuilt every Monday" in block["context"]
        # the other tenant's users of the same names never see it
        hits = _search(api_server, other_key, user_id=user, query="staging cluster rebuilt")
        assert shared["id"] not in {h["id"] for h in hits} and all(h["scope"] != "app" for h in hits)
        assert "staging" not in _context(api_server, other_key, user, query="staging cluster")["context"]
    r = httpx.get(f"{api_server}/v1/memories/{shared['id']}", headers=_h(other_key))
    assert r.status_code == 404


def test_the_client_and_its_remember_take_a_scope(api_server, api_key, tmp_path):  # type: ignore[no-untyped-def]
    with Memory(api_server, api_key, spool_path=tmp_path / "s.jsonl", flush_at_exit=False) as memory:
        memory.remember("gina", "Gina reviews every PR on Fridays")
        shared = memory.remember(None, "Release notes go in CHANGELOG.md", scope="app")
        mine = memory.remember("gina", "Gina wants terse answers", scope="agent", agent_id="helper")
        assert shared.memory is not None and shared.memory.scope == "app"
        assert mine.memory is not None and (mine.memory.scope, mine.memory.agent_id) == ("agent", "helper")
        hits = memory.search("gina", "release notes terse answers", agent_id="helper")
        assert {h.scope for h in hits} >= {"app", "agent"}
        assert (
            "[agent] Gina wants terse answers"
            in memory.context("gina", query="answers", agent_id="helper").context
        )
        assert mine.memory.id not in {h.id for h in memory.search("gina", "terse answers", agent_id="other")}


def test_remember_refuses_a_scope_without_its_owner(api_server, api_key):  # type: ignore[no-untyped-def]
    for body in (
        {"user_id": "hal", "scope": "agent", "content": "x"},  # agent scope needs an agent
        {"scope": "user", "content": "x"},  # user scope needs a user
        {"user_id": "hal", "agent_id": "coder", "content": "x"},  # an agent only for agent scope
        {"agent_id": "coder", "scope": "app", "content": "x"},
        {"user_id": "hal", "scope": "team", "content": "x"},
    ):
        r = httpx.post(f"{api_server}/v1/memories", json=body, headers=_h(api_key), timeout=30)
        assert r.status_code == 422, (body, r.text)


def test_extracted_memories_stay_user_scope_whatever_agent_heard_them(db, tenant):  # type: ignore[no-untyped-def]
    """The worker applies decisions with the candidate's agent (from the events) and no owner: the row is the
    user's, so every agent of the user reads it, and the database refuses the shapes no scope allows."""
    now = datetime(2026, 6, 1, 9, tzinfo=UTC)
    candidate = PendingCandidate(
        content="Uses Neovim",
        kind="semantic",
        op="remember",
        event_time=now,
        source_event_ids=("e1",),
        agent_id="coder",
    )
    vec = vector_literal(HashingEmbedder(384).embed(["Uses Neovim"])[0])
    mid = repo.apply_decision(
        db, tenant, "ivy", candidate, Decision(Op.ADD, reason="new"), vec, actor="worker", now=now
    )
    row = db.execute(text("SELECT scope, agent_id, user_id FROM memories WHERE id = :i"), {"i": mid}).one()
    assert tuple(row) == ("user", None, "ivy")
    for scope, user, agent in (("app", "ivy", None), ("agent", "ivy", None), ("user", "ivy", "coder")):
        with pytest.raises(IntegrityError, match="ck_memories_scope_owner"), db.begin_nested():
            db.execute(
                text("UPDATE memories SET scope = :s, user_id = :u, agent_id = :a WHERE id = :i"),
                {"s": scope, "u": user, "a": agent, "i": mid},
            )
