"""The pieces of the API's limits that need no server: Retry-After parsing (the client's side), a tenant's
override read from its settings, and the body limit's own 413 for a read outside the app's handlers."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from api.limits import BodyLimitMiddleware, RateLimit, RateLimiter
from shared.http_publisher import parse_retry_after


def test_retry_after_in_seconds_or_as_a_date() -> None:
    now = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=7), usegmt=True), now=now) == 7.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=7), usegmt=True), now=now) == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None


def test_a_tenant_override_replaces_the_default_and_a_bad_one_is_ignored() -> None:
    limiter = RateLimiter("redis://127.0.0.1:1/0", RateLimit(per_s=10, burst=20))
    try:
        assert limiter._parse("t", {}) == RateLimit(10, 20)
        assert limiter._parse("t", {"rate_limit_per_s": 0}) == RateLimit(0, 20)
        assert limiter._parse("t", {"rate_limit_per_s": "2.5", "rate_limit_burst": 4}) == RateLimit(2.5, 4)
        for bad in ({"rate_limit_per_s": -1}, {"rate_limit_burst": 0}, {"rate_limit_per_s": "fast"}):
            assert limiter._parse("t", bad) == RateLimit(10, 20)
        # a Redis that cannot be reached lets the request through (fail open)
        assert limiter.take("k", RateLimit(1, 1)) is None
    finally:
        limiter.close()


def _run(app: Any, body_chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    incoming = [
        {"type": "http.request", "body": c, "more_body": i < len(body_chunks) - 1}
        for i, c in enumerate(body_chunks)
    ]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/events/", "headers": headers, "query_string": b""}
    asyncio.run(app(scope, receive, send))
    return sent


def test_the_middleware_answers_413_itself_when_the_app_does_not() -> None:
    read: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:  # reads the whole body, no error handling
        total = 0
        while True:
            message = await receive()
            total += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        read.append(total)
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    limited = BodyLimitMiddleware(app, default=10, limits={"/v1/events": 100})
    # the path's own limit (a trailing slash is the same path), chunked: counted while read
    ok = _run(limited, [b"x" * 60, b"x" * 40], [])
    assert ok[0]["status"] == 202 and read == [100]
    refused = _run(limited, [b"x" * 60, b"x" * 41], [])
    assert refused[0]["status"] == 413 and read == [100]  # the app never finished its read
    assert json.loads(refused[1]["body"])["status"] == 413
    # declared: refused before the app runs
    declared = _run(limited, [b"x" * 101], [(b"content-length", b"101")])
    assert declared[0]["status"] == 413 and read == [100]
