"""Episodes within their user's reach (issue 16, item 3), over the real API and `memctl`: listed, shown, edited
and deleted one by one; a deleted episode never comes back into the context block, the working memory, or
the table when its session is closed again."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from api.keys import create_key
from core.episodes import EpisodeText
from core.extraction.candidates import Turn
from shared.db.engine import session_scope
from shared.db.vectors import vector_literal
from store.embeddings import HashingEmbedder
from store.episodes import upsert_episode
from store.sessions import ClosingSession
from tests.integration.test_memctl import memctl
from worker.services.working_memory import rewrite_working_memory

pytestmark = pytest.mark.integration

T0 = datetime(2026, 6, 1, 9, tzinfo=UTC)
EMB = HashingEmbedder(384)
BILLING = EpisodeText(
    "The staging deploy of the billing service failed with a database timeout.",
    "It works after raising the pool size.",
    "Check the database pool size before every deploy.",
)
DOCS = EpisodeText(
    "Wrote the onboarding docs for the billing service.",
    "Docs merged.",
    "Put every billing runbook link in the docs index.",
)


def _close(engine, tenant: str, user: str, session: str, episode: EpisodeText, at: datetime) -> None:  # type: ignore[no-untyped-def]
    """What the worker's close of a session writes (again, when a late turn reopened it)."""
    with session_scope(engine, tenant=tenant) as db:
        upsert_episode(
            db,
            tenant,
            user,
            session,
            session=ClosingSession(summary="", agent_id=None, first_event_at=at, last_event_at=at),
            episode=episode,
            turns=[Turn(event_id=f"{session}-e1", role="user", content=episode.what_happened)],
            mode="deterministic",
            vector=vector_literal(EMB.embed([episode.as_text()])[0]),
            now=at,
        )
        db.execute(
            text(
                "INSERT INTO sessions (tenant_id, user_id, session_id, turn_count, status) "
                "VALUES (:t, :u, :s, 1, 'closed') ON CONFLICT DO NOTHING"
            ),
            {"t": tenant, "u": user, "s": session},
        )


def _seed(engine, tenant: str) -> None:  # type: ignore[no-untyped-def]
    _close(engine, tenant, "ops", "billing", BILLING, T0)
    _close(engine, tenant, "ops", "docs", DOCS, T0 + timedelta(days=1))
    with session_scope(engine, tenant=tenant) as db:
        rewrite_working_memory(db, tenant, "ops", now=T0 + timedelta(days=1))


def _api(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def _context(api: httpx.Client, query: str) -> dict[str, Any]:
    r = api.get("/v1/users/ops/context", params={"query": query, "max_tokens": 4000})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_episodes_are_listed_shown_edited_and_deleted_and_a_deleted_one_never_comes_back(  # type: ignore[no-untyped-def]
    api_server, api_key, engine, tenant
):
    _seed(engine, tenant)
    api = _api(api_server, api_key)
    listed = api.get("/v1/users/ops/episodes").json()
    assert [e["session_id"] for e in listed["items"]] == ["docs", "billing"]  # latest first
    billing, docs = listed["items"][1], listed["items"][0]
    shown = api.get(f"/v1/episodes/{billing['id']}").json()
    assert (shown["what_happened"], shown["lesson"], shown["edited_at"]) == (
        BILLING.what_happened,
        BILLING.lesson,
        None,
    )

    # a wrong lesson corrected: the context block and the working memory follow
    r = api.patch(f"/v1/episodes/{docs['id']}", json={"lesson": "Link runbooks from the service README."})
    assert r.status_code == 200, r.text
    assert r.json()["lesson"] == "Link runbooks from the service README." and r.json()["edited_at"]
    block = _context(api, "billing service docs")
    assert "Link runbooks from the service README." in block["context"]
    assert DOCS.lesson not in block["context"]

    before = _context(api, "billing deploy database timeout pool size")
    assert f"episode:{billing['id']}" in before["included"] and BILLING.lesson in before["context"]
    r = api.delete(f"/v1/episodes/{billing['id']}")
    assert r.status_code == 200 and r.json()["working_memory_rewritten"] is True, r.text
    assert api.get(f"/v1/episodes/{billing['id']}").status_code == 404
    assert [e["id"] for e in api.get("/v1/users/ops/episodes").json()["items"]] == [docs["id"]]

    def gone() -> None:
        block = _context(api, "billing deploy database timeout pool size")
        assert f"episode:{billing['id']}" not in block["included"]
        assert "pool size" not in block["context"] and "database timeout" not in block["context"]
        wm = api.get("/v1/users/ops/working-memory").json()["content"]
        assert "pool size" not in wm

    gone()
    # the session is closed again (a late turn reopened it): the deleted episode stays deleted, and an
    # edited one keeps its edit
    _close(engine, tenant, "ops", "billing", BILLING, T0 + timedelta(days=2))
    _close(engine, tenant, "ops", "docs", DOCS, T0 + timedelta(days=2))
    with session_scope(engine, tenant=tenant) as db:
        rewrite_working_memory(db, tenant, "ops", now=T0 + timedelta(days=2))
    gone()
    assert api.get(f"/v1/episodes/{docs['id']}").json()["lesson"] == "Link runbooks from the service README."
    with engine.connect() as conn:
        left = conn.execute(
            text("SELECT what_happened, lesson, embedding IS NULL FROM episodes WHERE id = :i"),
            {"i": billing["id"]},
        ).one()
    assert tuple(left) == ("", "", True)  # the text is gone, not hidden


def test_episode_routes_refuse_bad_input_and_other_tenants(api_server, api_key, engine, tenant):  # type: ignore[no-untyped-def]
    _seed(engine, tenant)
    with session_scope(engine) as db:
        other_key, _ = create_key(db, f"{tenant}-other")
    api, other = _api(api_server, api_key), _api(api_server, other_key)
    episode_id = api.get("/v1/users/ops/episodes").json()["items"][0]["id"]
    assert other.get("/v1/users/ops/episodes").status_code == 404
    assert other.get(f"/v1/episodes/{episode_id}").status_code == 404
    assert other.patch(f"/v1/episodes/{episode_id}", json={"lesson": "x"}).status_code == 404
    assert other.delete(f"/v1/episodes/{episode_id}").status_code == 404
    assert api.patch(f"/v1/episodes/{episode_id}", json={}).status_code == 422
    assert api.patch(f"/v1/episodes/{episode_id}", json={"what_happened": ""}).status_code == 422
    assert api.patch(f"/v1/episodes/{episode_id}", json={"mood": "x"}).status_code == 422
    assert api.get("/v1/episodes/not-a-uuid").status_code == 422
    assert api.get(f"/v1/episodes/{episode_id}").status_code == 200  # untouched by the other tenant


def test_memctl_lists_shows_edits_and_deletes_episodes(worker_env, engine, tenant):  # type: ignore[no-untyped-def]
    _seed(engine, tenant)
    env = worker_env
    listed = json.loads(memctl(env, "episodes", "list", "ops", "--tenant", tenant, "--json").stdout)
    assert [e["session_id"] for e in listed] == ["docs", "billing"]
    billing = listed[1]["id"]
    shown = json.loads(memctl(env, "episodes", "show", billing, "--tenant", tenant, "--json").stdout)
    assert shown["lesson"] == BILLING.lesson
    edited = json.loads(
        memctl(
            env, "episodes", "edit", billing, "--tenant", tenant, "--outcome", "Fixed for good.", "--json"
        ).stdout
    )
    assert edited["outcome"] == "Fixed for good." and edited["edited_at"]
    deleted = json.loads(memctl(env, "episodes", "delete", billing, "--tenant", tenant, "--json").stdout)
    assert deleted["deleted"] is True
    missing = memctl(env, "episodes", "show", billing, "--tenant", tenant, ok=False)
    assert missing.returncode == 1 and "no episode" in missing.stderr
    listed = json.loads(memctl(env, "episodes", "list", "ops", "--tenant", tenant, "--json").stdout)
    assert [e["session_id"] for e in listed] == ["docs"]
    wrong = memctl(env, "episodes", "edit", listed[0]["id"], "--tenant", tenant, ok=False)
    assert wrong.returncode == 2 and "nothing to change" in wrong.stderr
    with engine.connect() as conn:
        wm = conn.execute(
            text("SELECT content FROM working_memory WHERE tenant_id = :t AND user_id = 'ops'"), {"t": tenant}
        ).scalar()
    assert "pool size" not in wm and "Fixed for good." not in wm


def test_the_client_package_lists_shows_edits_and_deletes_episodes(api_server, api_key, engine, tenant, tmp_path):  # type: ignore[no-untyped-def]
    import asyncio

    from memory_client import AsyncMemory, Memory

    _seed(engine, tenant)
    memory = Memory(api_server, api_key, spool_path=tmp_path / "spool.jsonl", flush_at_exit=False)
    try:
        page = memory.episodes("ops", limit=1)
        assert [e.session_id for e in page.items] == ["docs"] and page.next_offset == 1
        billing = memory.episodes("ops", offset=1).items[0]
        assert billing.session_id == "billing" and billing.archived_at is None
        assert memory.episode(billing.id) == billing
        edited = memory.edit_episode(billing.id, lesson="Raise the pool size before a deploy.")
        assert edited.lesson == "Raise the pool size before a deploy." and edited.edited_at is not None
        with pytest.raises(ValueError):
            memory.edit_episode(billing.id)
        assert memory.delete_episode(billing.id).id == billing.id
        assert memory.episode(billing.id) is None
    finally:
        memory.close()

    async def the_async_client() -> None:
        async with AsyncMemory(api_server, api_key, spool_path=tmp_path / "aspool.jsonl") as amemory:
            page = await amemory.episodes("ops")
            assert [e.session_id for e in page.items] == ["docs"]
            assert (await amemory.episode(page.items[0].id)) == page.items[0]

    asyncio.run(the_async_client())
