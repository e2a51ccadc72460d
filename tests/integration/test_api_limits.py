"""The API's limits through real HTTP (uvicorn on a loopback port, PostgreSQL, Redis): request bodies over the
route's limit get a 413 problem whether their size is declared or chunked, and nothing of them is stored; a
key past its token bucket gets a 429 with Retry-After and is served again after the wait; a tenant's own
limit overrides the default; Redis down lets requests through. And the client that meets a 429 spools and
re-sends after the wait."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from shared.client import MemoryClient
from tests.services import RedisServer, app_server, free_port, wait_for

pytestmark = pytest.mark.integration

EVENTS_LIMIT = 64 * 1024
OTHER_LIMIT = 4 * 1024


@pytest.fixture
def serve(database_url: str, redis_url: str, queue_name: str) -> Iterator[Callable[..., str]]:
    """Factory: the real app under uvicorn with the given settings overrides; yields its base URL."""
    from shared.settings import load_settings

    with contextlib.ExitStack() as servers:

        def _serve(**overrides: Any) -> str:
            options: dict[str, Any] = {
                "database_url": database_url,
                "redis_url": redis_url,
                "queue": queue_name,
            }
            return servers.enter_context(app_server(load_settings(**{**options, **overrides})))

        yield _serve


def new_key(engine: Any, tenant: str, **tenant_settings: Any) -> str:
    from api.keys import create_key
    from shared.db.engine import session_scope

    with session_scope(engine) as session:
        key, _ = create_key(session, tenant, name="limits")
        if tenant_settings:
            session.execute(
                text("UPDATE tenants SET settings = CAST(:s AS jsonb) WHERE id = :t"),
                {"s": json.dumps(tenant_settings), "t": tenant},
            )
    return key


def stored_events(engine: Any, tenant: str) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(text("SELECT count(*) FROM events WHERE tenant_id = :t"), {"t": tenant}).scalar()
            or 0
        )


def batch_body(n: int, size: int) -> bytes:
    events = [
        {
            "user_id": "u",
            "session_id": "s",
            "role": "user",
            "content": f"{i} " + "x" * size,
            "event_id": f"e{i}",
        }
        for i in range(n)
    ]
    return json.dumps({"events": events}).encode()


def chunks(data: bytes, size: int = 4096) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["detail"]
    return body


# --- 413 ---------------------------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_refused_with_413_whether_declared_or_chunked_on_every_route(
    serve, engine, tenant
):  # type: ignore[no-untyped-def]
    url = serve(max_events_body_bytes=EVENTS_LIMIT, max_body_bytes=OTHER_LIMIT, rate_limit_per_s=0)
    key = new_key(engine, tenant)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    big_events = batch_body(20, 4000)  # ~80 KiB of valid events
    assert len(big_events) > EVENTS_LIMIT
    big_search = json.dumps({"user_id": "u", "query": "q " * 3000}).encode()  # valid JSON, over 4 KiB
    big_patch = json.dumps({"content": "y" * 6000}).encode()
    routes = [
        ("POST", "/v1/events", big_events),
        ("POST", "/v1/search", big_search),
        ("PATCH", f"/v1/memories/{uuid.uuid4()}", big_patch),
    ]
    with httpx.Client(base_url=url, headers=headers, timeout=10) as http:
        for method, path, body in routes:
            declared = http.request(method, path, content=body)  # Content-Length
            assert_problem(declared, 413)
            chunked = http.request(method, path, content=chunks(body))  # Transfer-Encoding: chunked
            assert "content-length" not in chunked.request.headers
            assert chunked.request.headers["transfer-encoding"] == "chunked"
            assert "over" in assert_problem(chunked, 413)["detail"]
        # a GET declaring a body too large is refused before it is read
        assert_problem(http.request("GET", "/v1/runs", content=b"z" * (OTHER_LIMIT + 1)), 413)
        assert stored_events(engine, tenant) == 0  # nothing of a refused batch was stored

        # under the limit, chunked or not, the same routes work
        small = batch_body(5, 1000)
        assert http.post("/v1/events", content=small).status_code == 202
        accepted = http.post("/v1/events", content=chunks(batch_body(8, 1000)))
        assert accepted.status_code == 202, accepted.text
        search = http.post(
            "/v1/search", content=chunks(json.dumps({"user_id": "u", "query": "q"}).encode(), 5)
        )
        assert search.status_code == 200, search.text
    assert stored_events(engine, tenant) == 8  # e0..e4 of the first batch are e0..e4 of the second


def test_the_events_limit_is_its_own_setting(serve, engine, tenant):  # type: ignore[no-untyped-def]
    url = serve(max_events_body_bytes=EVENTS_LIMIT, max_body_bytes=OTHER_LIMIT, rate_limit_per_s=0)
    headers = {"Authorization": f"Bearer {new_key(engine, tenant)}", "Content-Type": "application/json"}
    body = batch_body(10, 4000)  # ~40 KiB: over the other routes' limit, under the events'
    assert OTHER_LIMIT < len(body) < EVENTS_LIMIT
    r = httpx.post(f"{url}/v1/events", content=chunks(body), headers=headers)
    assert r.status_code == 202 and r.json()["inserted"] == 10


# --- 429 ---------------------------------------------------------------------------------------------------


def test_a_key_past_its_bucket_gets_429_with_retry_after_and_is_served_after_the_wait(serve, engine, tenant):  # type: ignore[no-untyped-def]
    url = serve(rate_limit_per_s=0.5, rate_limit_burst=3)
    key = new_key(engine, tenant)
    other_key = new_key(engine, tenant)  # same tenant, its own bucket
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as http:
        for _ in range(3):
            assert http.get("/v1/runs").status_code == 200
        refused = http.get("/v1/runs")
        body = assert_problem(refused, 429)
        retry_after = int(refused.headers["Retry-After"])
        assert 1 <= retry_after <= 2  # one token comes back in 2 s at 0.5/s
        assert "rate limit" in body["detail"]
        # a refused write stores nothing
        event = {"user_id": "u", "session_id": "s", "content": "refused", "event_id": "r1"}
        assert_problem(http.post("/v1/events", json=event), 429)
        assert stored_events(engine, tenant) == 0
        # another key of the tenant has its own bucket
        assert (
            httpx.get(f"{url}/v1/runs", headers={"Authorization": f"Bearer {other_key}"}).status_code == 200
        )

        time.sleep(retry_after + 0.1)
        assert http.get("/v1/runs").status_code == 200  # the token that came back
        assert http.get("/v1/runs").status_code == 429  # and only one
        # unauthenticated and health routes are not counted against anyone
        assert httpx.get(f"{url}/healthz").status_code == 200


def test_a_tenants_own_limit_overrides_the_default(serve, engine):  # type: ignore[no-untyped-def]
    url = serve(rate_limit_per_s=0.5, rate_limit_burst=2)
    unlimited = new_key(engine, f"t-{uuid.uuid4().hex[:10]}", rate_limit_per_s=0)
    roomy = new_key(engine, f"t-{uuid.uuid4().hex[:10]}", rate_limit_burst=30, rate_limit_per_s=100)
    tight = new_key(engine, f"t-{uuid.uuid4().hex[:10]}", rate_limit_burst=1, rate_limit_per_s=0.25)
    default = new_key(engine, f"t-{uuid.uuid4().hex[:10]}")

    def statuses(key: str, n: int) -> list[int]:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as http:
            return [http.get("/v1/runs").status_code for _ in range(n)]

    assert statuses(unlimited, 40) == [200] * 40
    assert statuses(roomy, 25) == [200] * 25
    assert statuses(default, 4) == [200, 200, 429, 429]
    tight_statuses = statuses(tight, 2)
    assert tight_statuses == [200, 429]
    r = httpx.get(f"{url}/v1/runs", headers={"Authorization": f"Bearer {tight}"})
    assert r.status_code == 429 and int(r.headers["Retry-After"]) in (3, 4)  # 1 token at 0.25/s


def test_the_limiter_fails_open_when_redis_is_down(serve, engine, tenant, tmp_path, caplog):  # type: ignore[no-untyped-def]
    redis_server = RedisServer(tmp_path / "redis").start()
    try:
        url = serve(redis_url=redis_server.url, rate_limit_per_s=0.1, rate_limit_burst=2)
        headers = {"Authorization": f"Bearer {new_key(engine, tenant)}"}
        with httpx.Client(base_url=url, headers=headers, timeout=10) as http:
            assert [http.get("/v1/runs").status_code for _ in range(3)] == [200, 200, 429]
            redis_server.stop()
            started = time.perf_counter()
            assert [http.get("/v1/runs").status_code for _ in range(5)] == [200] * 5
            assert time.perf_counter() - started < 3.0  # one short timeout, then Redis is not asked
        assert "api.rate_limit_unavailable" in caplog.text
    finally:
        redis_server.stop()


# --- the client ----------------------------------------------------------------------------------------------


def test_the_client_spools_on_429_and_resends_after_retry_after(serve, engine, tenant, tmp_path):  # type: ignore[no-untyped-def]
    url = serve(rate_limit_per_s=1, rate_limit_burst=2)
    client = MemoryClient(
        tenant,
        api_url=url,
        api_key=new_key(engine, tenant),
        spool_path=tmp_path / "spool.jsonl",
        flush_at_exit=False,
    )
    try:
        for n in range(6):
            client.emit(user_id="u", session_id="s", content=f"turn {n}", event_id=f"c{n}")
        # the bucket held two requests: the rest met a 429 (or the wait it asked for) and were spooled
        assert stored_events(engine, tenant) == 2
        assert client.spooled == 4
        assert (tmp_path / "spool.jsonl").stat().st_size > 0
        # nothing is re-sent before the Retry-After has passed
        time.sleep(0.5)
        assert stored_events(engine, tenant) == 2
        # then the timer re-sends, meeting the limit again as it goes (1 a second), until all are stored
        wait_for(lambda: stored_events(engine, tenant) == 6, timeout_s=20, what="the spooled events")
        wait_for(lambda: (tmp_path / "spool.jsonl").stat().st_size == 0, timeout_s=5, what="an empty spool")
        with engine.connect() as conn:
            ids = conn.execute(
                text("SELECT event_id FROM events WHERE tenant_id = :t ORDER BY event_id"), {"t": tenant}
            ).scalars()
            assert list(ids) == [f"c{n}" for n in range(6)]
    finally:
        client.close()


def test_the_client_splits_a_batch_the_api_finds_too_large(serve, engine, tenant, tmp_path):  # type: ignore[no-untyped-def]
    url = serve(max_events_body_bytes=EVENTS_LIMIT, rate_limit_per_s=0)
    client = MemoryClient(
        tenant,
        api_url=url,
        api_key=new_key(engine, tenant),
        spool_path=tmp_path / "spool.jsonl",
        flush_at_exit=False,
    )
    try:
        events = [
            {"user_id": "u", "session_id": "s", "content": f"{n} " + "z" * 3000, "event_id": f"b{n}"}
            for n in range(60)
        ]  # ~180 KiB in one call: the API answers 413, the client halves until each part fits
        client.emit_many(events)
        assert client.spooled == 0
        assert stored_events(engine, tenant) == 60
    finally:
        client.close()


def test_the_client_spools_while_the_api_is_unreachable(tenant, tmp_path):  # type: ignore[no-untyped-def]
    client = MemoryClient(
        tenant,
        api_url=f"http://127.0.0.1:{free_port()}",  # nothing listens there
        api_key="mk_whatever",
        spool_path=tmp_path / "spool.jsonl",
        retry_after_s=0.2,
        flush_at_exit=False,
    )
    try:
        started = time.perf_counter()
        client.emit(user_id="u", session_id="s", content="while down", event_id="d1")
        assert time.perf_counter() - started < 1.0
        assert client.spooled == 1 and client.flush() == 0
    finally:
        client.close()
