"""The client package (`memory_client`) against the real stack: every method of `Memory` and `AsyncMemory`
round-trips through the real API (uvicorn on a port, PostgreSQL, Redis), errors come back as typed
exceptions with the problem's detail, and the HTTP `emit` loses nothing while the API is down."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path

import pytest
import uvicorn
from sqlalchemy import text

from api.app import create_app
from api.keys import create_key
from memory_client import AsyncMemory, BadRequest, Forbidden, Memory, NotFound, RateLimited
from shared.db.engine import session_scope
from shared.settings import load_settings
from store.working_memory import write_document
from tests.services import free_port, wait_for

pytestmark = pytest.mark.integration


def _stored(engine, tenant: str) -> list[str]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return list(
            conn.execute(
                text("SELECT event_id FROM events WHERE tenant_id = :t ORDER BY event_id"), {"t": tenant}
            ).scalars()
        )


def _key(engine, tenant: str, *, read_only: bool = False) -> str:  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        key, _ = create_key(session, tenant, name="client-test", read_only=read_only)
    return key


def test_every_method_of_memory_round_trips_through_the_api(api_server, api_key, engine, tenant, tmp_path):  # type: ignore[no-untyped-def]
    memory = Memory(api_server, api_key, spool_path=tmp_path / "spool.jsonl", flush_at_exit=False)
    try:
        # emit: validated and redacted in the caller, sent by the background sender
        ids = memory.emit_many(
            [
                {"user_id": "alice", "session_id": "s1", "content": "We use pnpm, not npm."},
                {"user_id": "alice", "session_id": "s1", "role": "assistant", "content": "Noted."},
            ]
        )
        ids.append(
            memory.emit(user_id="alice", session_id="s1", content="my password is hunter22, keep it safe")
        )
        memory.flush()
        assert sorted(ids) == sorted(_stored(engine, tenant))
        with pytest.raises(ValueError, match="role"):
            memory.emit(user_id="alice", session_id="s1", role="robot", content="x")

        window = memory.window("s1")
        assert [t.event_id for t in window.turns] == ids and window.user_id == "alice"
        assert (
            "hunter22" not in window.turns[-1].content and "[REDACTED:password]" in window.turns[-1].content
        )

        # remember: reconciled like extracted memories (a slot holds one value; the same value reinforces)
        first = memory.remember("alice", "Lives in Berlin", slot="home.city", value="Berlin")
        assert first.op == "add" and first.memory is not None and first.memory.slot == "home.city"
        again = memory.remember("alice", "Lives in Berlin", slot="home.city", value="Berlin")
        assert again.op == "reinforce" and again.memory is not None and again.memory.id == first.memory.id
        assert again.memory.evidence_count == 2
        moved = memory.remember("alice", "Lives in Paris", slot="home.city", value="Paris")
        assert moved.op == "supersede" and moved.memory is not None
        retried = memory.remember("alice", "Prefers tea", idempotency_key="k-1")
        assert memory.remember("alice", "Prefers tea", idempotency_key="k-1").op == "noop"
        assert retried.memory is not None

        current = memory.memories("alice", slot="home.city")
        assert [m.content for m in current.items] == ["Lives in Paris"] and current.next_offset is None
        every = memory.memories("alice", slot="home.city", status=["active", "superseded"])
        assert {m.status for m in every.items} == {"active", "superseded"}
        detail = memory.get(first.memory.id)
        assert detail.status == "superseded" and detail.superseded_by == moved.memory.id
        assert [h.op for h in detail.history] == ["add", "reinforce", "supersede"]
        assert all(h.actor.startswith("api_key:") for h in detail.history)

        hits = memory.search("alice", "which city does she live in", k=5)
        assert moved.memory.id in [h.id for h in hits] and first.memory.id not in [h.id for h in hits]
        block = memory.context("alice", query="where does she live?")
        assert "Paris" in block.context and block.tokens <= block.max_tokens

        edited = memory.edit(moved.memory.id, content="Lives in Paris, 11e")
        assert edited.content == "Lives in Paris, 11e"
        assert memory.pin(moved.memory.id).pinned is True
        assert memory.pin(moved.memory.id, pinned=False).pinned is False
        assert memory.forget(retried.memory.id).status == "deleted"
        assert retried.memory.id not in [m.id for m in memory.memories("alice").items]

        assert memory.working_memory("alice") is None
        with session_scope(engine, tenant=tenant) as db:
            write_document(
                db,
                tenant,
                "alice",
                "",
                content="Moving to Paris; next: find a flat.",
                mode="rules",
                source_hash="h",
                now=detail.recorded_at,
            )
        wm = memory.working_memory("alice")
        assert wm is not None and wm.content.startswith("Moving to Paris") and wm.version == 1

        popped = memory.pop_turn("s1")
        assert popped is not None and popped.event_id == ids[-1]
        assert [t.event_id for t in memory.window("s1").turns] == ids[:-1]
        assert memory.clear_session("s1") == 2
        with pytest.raises(NotFound):
            memory.window("s1")
        assert memory.clear_session("s1") == 0  # an unknown session: nothing to clear

        erased = memory.erase_user("alice")
        assert erased.deleted["memories"] >= 3
        with pytest.raises(NotFound):
            memory.memories("alice")
    finally:
        memory.close()


def test_errors_are_typed_and_carry_the_problem_detail(api_server, api_key, engine, tenant, tmp_path):  # type: ignore[no-untyped-def]
    with Memory(api_server, api_key, spool_path=tmp_path / "s.jsonl", flush_at_exit=False) as memory:
        with pytest.raises(BadRequest) as bad:
            memory.search("alice", "x", k=1000)
        assert bad.value.status == 422 and any(e["field"] == "k" for e in bad.value.errors)
        with pytest.raises(NotFound, match="no memory"):
            memory.get(str(uuid.uuid4()))
        with pytest.raises(NotFound, match="no user"):
            memory.context("nobody")
    reader = Memory(api_server, _key(engine, tenant, read_only=True), flush_at_exit=False)
    with reader, pytest.raises(Forbidden, match="read-only"):
        reader.remember("alice", "Likes jazz")
    with pytest.raises(ValueError, match="MEMORY_API_KEY"):
        Memory(api_server, "")


def test_async_memory_round_trips_the_same_surface(api_server, api_key, engine, tenant, tmp_path):  # type: ignore[no-untyped-def]
    async def scenario() -> None:
        async with AsyncMemory(
            api_server, api_key, spool_path=tmp_path / "a.jsonl", flush_at_exit=False
        ) as memory:
            memory.emit(user_id="bob", session_id="s9", content="I deploy with ArgoCD.")
            await memory.aflush()
            assert [t.content for t in (await memory.window("s9")).turns] == ["I deploy with ArgoCD."]
            done = await memory.remember(
                "bob", "Never suggest an ORM", kind="procedural", category="constraint"
            )
            assert done.op == "add" and done.memory is not None
            assert done.memory.id in [h.id for h in await memory.search("bob", "ORM")]
            assert "ORM" in (await memory.context("bob")).context
            page = await memory.memories("bob", kind=["procedural"])
            assert [m.id for m in page.items] == [done.memory.id]
            assert (await memory.get(done.memory.id)).history[0].op == "add"
            assert (await memory.pin(done.memory.id)).pinned
            assert (await memory.edit(done.memory.id, ttl_days=30)).expires_at is not None
            assert (await memory.forget(done.memory.id)).status == "deleted"
            assert await memory.working_memory("bob") is None
            assert (await memory.pop_turn("s9")) is not None
            assert await memory.clear_session("s9") == 0
            assert (await memory.erase_user("bob")).user_id == "bob"

    asyncio.run(scenario())


class _Api:
    """The real API on a fixed port, stopped and started again in place (an outage and a restart).
    `event_posts` counts the `POST /v1/events` requests it received (an ASGI wrapper in front of the app)."""

    def __init__(self, database_url: str, redis_url: str, queue: str, **settings: object):
        self.settings = load_settings(database_url=database_url, redis_url=redis_url, queue=queue, **settings)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.event_posts = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        app = create_app(self.settings)

        async def counted(scope, receive, send):  # type: ignore[no-untyped-def]
            if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/v1/events":
                self.event_posts += 1
            await app(scope, receive, send)

        config = uvicorn.Config(counted, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        server, thread = self._server, self._thread
        wait_for(lambda: server.started or not thread.is_alive(), timeout_s=30, what="the API")
        assert server.started

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=15)
            self._server = None


def test_http_emit_loses_nothing_while_the_api_is_down_for_ten_seconds(  # type: ignore[no-untyped-def]
    database_url, redis_url, queue_name, engine, tenant, tmp_path: Path
):
    api = _Api(database_url, redis_url, queue_name)
    api.start()
    memory = Memory(api.url, _key(engine, tenant), spool_path=tmp_path / "spool.jsonl", flush_at_exit=False)
    sent: list[str] = []
    try:
        for n in range(20):
            sent.append(memory.emit(user_id="u", session_id="s", content=f"before {n}", event_id=f"a{n:03}"))
        memory.flush()
        assert _stored(engine, tenant) == sent
        api.stop()
        # ten seconds without the API: the agent keeps emitting, nothing raises, nothing is dropped
        stop_at = threading.Event()
        timer = threading.Timer(10.0, stop_at.set)
        timer.start()
        n = 0
        while not stop_at.wait(0.05):
            sent.append(memory.emit(user_id="u", session_id="s", content=f"during {n}", event_id=f"b{n:04}"))
            n += 1
        assert n > 50 and memory.emitter.spooled > 0
        assert _stored(engine, tenant) == sent[:20]
        api.start()
        for m in range(20):
            sent.append(memory.emit(user_id="u", session_id="s", content=f"after {m}", event_id=f"c{m:03}"))
        # the sender re-sends the spool once the wait has passed; flush() does what is left at once
        wait_for(
            lambda: len(_stored(engine, tenant)) == len(sent) or memory.flush() < 0,
            timeout_s=60,
            what="every event",
        )
        assert _stored(engine, tenant) == sorted(sent)
        assert (tmp_path / "spool.jsonl").stat().st_size == 0
    finally:
        memory.close()
        api.stop()


def test_a_burst_of_http_emits_is_stored_once_in_far_fewer_requests_than_calls(  # type: ignore[no-untyped-def]
    database_url, redis_url, queue_name, engine, tenant, tmp_path: Path
):
    api = _Api(database_url, redis_url, queue_name)
    api.start()
    memory = Memory(
        api.url,
        _key(engine, tenant),
        spool_path=tmp_path / "spool.jsonl",
        flush_at_exit=False,
        emit_queue_size=100,  # small: the agent outruns the sender, and the queue overflows to the spool
    )
    try:
        ids = [
            memory.emit(user_id=f"u{n % 20}", session_id=f"s{n % 10}", content=f"burst turn {n}")
            for n in range(5_000)
        ]
        memory.flush(timeout_s=120)
        wait_for(
            lambda: len(_stored(engine, tenant)) == len(ids) or memory.flush() < 0,
            timeout_s=120,
            what="every event",
        )
        assert _stored(engine, tenant) == sorted(ids)  # each once (event_id is the events' key), none lost
        assert memory.emitter.overflowed > 0 and memory.emitter.spooled < memory.emitter.overflowed
        assert api.event_posts <= 5_000 / 20  # merged: the queue's batches and the spool's re-sends
        assert (tmp_path / "spool.jsonl").stat().st_size == 0
    finally:
        memory.close()
        api.stop()


def test_a_429_is_retried_after_retry_after_and_surfaces_once_retries_are_spent(  # type: ignore[no-untyped-def]
    database_url, redis_url, queue_name, engine, tenant
):
    api = _Api(database_url, redis_url, queue_name, rate_limit_per_s=2.0, rate_limit_burst=1)
    api.start()
    key = _key(engine, tenant)
    try:
        patient = Memory(api.url, key, retries=5, flush_at_exit=False)
        impatient = Memory(api.url, key, retries=0, flush_at_exit=False)
        with patient, impatient:
            done = [patient.remember("frank", f"Fact number {n}").op for n in range(4)]  # 2/s, burst 1
            assert done == ["add"] * 4  # each 429 waited out (the server's Retry-After), none lost
            with pytest.raises(RateLimited) as limited:
                for _ in range(5):
                    impatient.search("frank", "fact")
            assert limited.value.status == 429 and limited.value.retry_after_s is not None
    finally:
        api.stop()


def test_the_redis_fast_path_appends_to_the_stream_the_consumers_read(  # type: ignore[no-untyped-def]
    api_server, api_key, redis_url, queue_name, start_worker, engine, tenant, tmp_path
):
    start_worker()
    memory = Memory(
        api_server,
        api_key,
        redis_url=redis_url,
        queue=queue_name,
        tenant_id=tenant,
        spool_path=tmp_path / "r.jsonl",
        flush_at_exit=False,
    )
    try:
        ids = [memory.emit(user_id="gina", session_id="s", content=f"turn {n}") for n in range(5)]
        assert memory.emitter.spooled == 0
        wait_for(
            lambda: len(_stored(engine, tenant)) == 5, timeout_s=60, what="the consumer to store the events"
        )
        assert _stored(engine, tenant) == sorted(ids)
        assert [t.content for t in memory.window("s").turns] == [f"turn {n}" for n in range(5)]
    finally:
        memory.close()
