"""Working memory stays fresh (issue 16, item 2), on the real stack: a worker, Redis, Postgres, the API.

It is rewritten when a session closes (from that session's episode and the current memories), and when a
memory it mentions stops being current: after a pnpm -> npm change is processed, the next context read
shows npm under "Working memory", never the old value beside the new fact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import text

from shared import tasknames
from shared.client import MemoryClient
from shared.db.engine import session_scope
from shared.publisher import TaskPublisher
from tests.services import wait_for
from worker.services.working_memory import rewrite_working_memory

pytestmark = pytest.mark.integration

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
SLOT = "project.package_manager"


def _current_value(engine, tenant: str, user: str) -> str | None:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return conn.execute(  # type: ignore[no-any-return]
            text(
                "SELECT value FROM memories WHERE tenant_id = :t AND user_id = :u AND slot = :s "
                "AND status = 'active'"
            ),
            {"t": tenant, "u": user, "s": SLOT},
        ).scalar()


def _document(engine, tenant: str, user: str) -> str | None:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return conn.execute(  # type: ignore[no-any-return]
            text(
                "SELECT content FROM working_memory WHERE tenant_id = :t AND user_id = :u AND agent_id = ''"
            ),
            {"t": tenant, "u": user},
        ).scalar()


def _working_section(context: str) -> str:
    return context.split("## Working memory", 1)[1] if "## Working memory" in context else ""


def _client(tenant, redis_url, queue_name, tmp_path) -> MemoryClient:  # type: ignore[no-untyped-def]
    return MemoryClient(
        tenant, broker_url=redis_url, queue=queue_name, spool_path=tmp_path / "s.jsonl", flush_at_exit=False
    )


def test_a_slot_change_is_in_working_memory_before_the_next_context_read(  # type: ignore[no-untyped-def]
    start_worker, engine, tenant, redis_url, queue_name, tmp_path, api_server, api_key
):
    start_worker(env={"MEMORY_DEBOUNCE_IDLE_S": "1"})
    client = _client(tenant, redis_url, queue_name, tmp_path)
    client.emit(
        user_id="dev", session_id="s1", content="We switched from npm to pnpm for this repo.", event_time=T0
    )
    client.emit(user_id="dev", session_id="s1", type="session_end", event_time=T0 + timedelta(seconds=1))
    wait_for(lambda: _current_value(engine, tenant, "dev") == "pnpm", timeout_s=60, what="pnpm current")
    with session_scope(engine, tenant=tenant) as db:  # the document as the nightly run would have left it
        rewrite_working_memory(db, tenant, "dev", now=datetime.now(UTC))
    assert "The user's project uses pnpm." in (_document(engine, tenant, "dev") or "")

    later = T0 + timedelta(days=2)
    client.emit(user_id="dev", session_id="s2", content="We moved from pnpm back to npm.", event_time=later)
    client.emit(user_id="dev", session_id="s2", type="session_end", event_time=later + timedelta(seconds=1))
    wait_for(lambda: _current_value(engine, tenant, "dev") == "npm", timeout_s=60, what="the change to npm")

    r = httpx.get(
        f"{api_server}/v1/users/dev/context",
        params={"query": "install the dependencies"},
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert r.status_code == 200, r.text
    working = _working_section(r.json()["context"])
    assert "The user's project uses npm." in working
    assert "The user's project uses pnpm." not in working
    with engine.connect() as conn:
        history = (
            conn.execute(
                text("SELECT content FROM working_memory_history WHERE tenant_id = :t AND user_id = 'dev'"),
                {"t": tenant},
            )
            .scalars()
            .all()
        )
    assert any("uses pnpm." in h for h in history)  # the replaced version is kept


def test_closing_a_session_rewrites_working_memory_from_its_episode(  # type: ignore[no-untyped-def]
    start_worker, engine, tenant, redis_url, queue_name, tmp_path
):
    start_worker(
        env={"MEMORY_DEBOUNCE_IDLE_S": "1", "MEMORY_SESSION_IDLE_S": "2", "MEMORY_SESSION_END_SETTLE_S": "2"}
    )
    client = _client(tenant, redis_url, queue_name, tmp_path)
    turns = [
        "The staging deploy of the billing service fails with a database timeout.",
        "Never deploy the billing service on Fridays.",
        "Lesson learned: check the pool size before every deploy.",
    ]
    for i, content in enumerate(turns):
        client.emit(user_id="ops", session_id="s1", content=content, event_id=f"s1-{i}")
    client.emit(user_id="ops", session_id="s1", type="session_end", event_id="s1-end")
    publisher = TaskPublisher(redis_url, queue=queue_name)

    def closed_with_every_turn() -> bool:
        publisher.publish(tasknames.CLOSE_IDLE_SESSIONS, [None])
        with engine.connect() as conn:
            return bool(
                conn.execute(
                    text(
                        "SELECT count(*) = 1 FROM episodes e JOIN sessions s USING (tenant_id, user_id, session_id) "
                        "WHERE e.tenant_id = :t AND cardinality(e.source_event_ids) = 3 AND s.status = 'closed'"
                    ),
                    {"t": tenant},
                ).scalar()
            )

    wait_for(closed_with_every_turn, timeout_s=60, interval_s=2, what="the session closed into its episode")
    document = _document(engine, tenant, "ops") or ""
    progress = document.split("## Current progress", 1)[-1].split("##", 1)[0]
    assert "billing" in progress  # the session's episode
    assert "Never deploy the billing service on Fridays." in document  # a current memory
    assert "pool size" in document.split("## Lessons", 1)[-1]


def test_a_change_through_the_api_is_in_working_memory_before_the_next_read(  # type: ignore[no-untyped-def]
    engine, tenant, api_server, api_key
):
    """`POST /v1/memories` superseding a slot, `PATCH` of a memory's text and `DELETE` rewrite the working
    memory in their own transaction when it names what they ended (no worker running here)."""
    api = httpx.Client(base_url=api_server, headers={"Authorization": f"Bearer {api_key}"}, timeout=30)
    first = api.post(
        "/v1/memories",
        json={"user_id": "dev", "content": "The user's project uses pnpm.", "slot": "project.package_manager",
              "value": "pnpm", "category": "decision"},
    )
    assert first.status_code == 201, first.text
    tea = api.post(
        "/v1/memories", json={"user_id": "dev", "content": "Never serve the user green tea.", "category": "constraint"}
    ).json()
    with session_scope(engine, tenant=tenant) as db:
        rewrite_working_memory(db, tenant, "dev", now=datetime.now(UTC))
    assert "uses pnpm." in (_document(engine, tenant, "dev") or "")

    moved = api.post(
        "/v1/memories",
        json={"user_id": "dev", "content": "The user's project uses npm.", "slot": "project.package_manager",
              "value": "npm", "category": "decision"},
    )
    assert moved.json()["op"] == "supersede", moved.text
    working = _working_section(api.get("/v1/users/dev/context", params={"query": "install"}).json()["context"])
    assert "uses npm." in working and "uses pnpm." not in working

    tea_id = tea["memory"]["id"]
    assert api.patch(f"/v1/memories/{tea_id}", json={"content": "Never serve the user black coffee."}).status_code == 200
    document = _document(engine, tenant, "dev") or ""
    assert "black coffee" in document and "green tea" not in document
    assert api.delete(f"/v1/memories/{tea_id}").status_code == 200
    assert "black coffee" not in (_document(engine, tenant, "dev") or "")
