"""Limits on what one client may ask of the API: the size of a request body, and requests per API key.

- **Body size** (`BodyLimitMiddleware`, ASGI): a body whose `Content-Length` is over the route's limit is
  refused before a byte of it is read; any other body (chunked, or a `Content-Length` that lies) is counted
  while it is read, and the read fails at the first chunk past the limit. Either way the answer is a 413
  problem+json. Routes read the whole body before they store anything, and a failed read propagates out of
  the route through its transaction (rolled back), so nothing of an oversized request is stored.
- **Request rate** (`RateLimiter`): a token bucket per API key in Redis, taken and refilled by one Lua script
  (atomic across API processes, timed by the Redis server's clock so the processes' clocks do not matter).
  Checked once the key is authenticated (`api.deps.principal_of`), so that the tenant's own limit applies
  (`tenants.settings`: `rate_limit_per_s`, `rate_limit_burst`). An empty bucket answers 429 with
  `Retry-After` (whole seconds until a token is back) and consumes nothing.

  When Redis cannot be reached the limiter **fails open**: the request is served, a warning is logged
  (`api.rate_limit_unavailable`, once per outage), and Redis is not asked again for a few seconds, so an
  outage costs at most one short timeout per process per interval. Why open: the limiter protects capacity,
  not correctness, and nothing else the API does needs Redis to answer: events are stored in PostgreSQL
  before the 202 and the sweeper enqueues them once the broker is back, searches read PostgreSQL only.
  Failing closed would turn a Redis outage into an outage of every route, including the event intake that
  is built to survive it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis
import structlog
from redis.backoff import NoBackoff
from redis.retry import Retry
from sqlmodel import Session
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.problems import problem
from shared.embedded import redis_py_url
from store.tenants import tenant_settings

log = structlog.get_logger("api")

# --- body size -----------------------------------------------------------------------------------------------


class BodyTooLarge(HTTPException):
    """Raised by the receive channel at the first chunk past the limit; rendered as a 413 problem."""

    def __init__(self, limit: int):
        super().__init__(413, _too_large(limit))


def _too_large(limit: int) -> str:
    return f"request body over {limit} bytes, the most this route accepts; send less per request"


class BodyLimitMiddleware:
    """Refuse request bodies over `limits[path]` (else `default`) bytes with a 413 problem+json."""

    def __init__(self, app: ASGIApp, *, default: int, limits: Mapping[str, int] | None = None):
        self.app = app
        self.default = default
        self.limits = dict(limits or {})

    def limit_for(self, path: str) -> int:
        return self.limits.get(path.rstrip("/") or "/", self.default)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        for name, value in scope["headers"]:
            if name == b"content-length":
                if value.isdigit() and int(value) > limit:
                    await self._refuse(scope, receive, send, limit)
                    return
                break

        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            # normally rendered by the app's exception handler; this catches a read outside its reach
            if started:
                raise
            await self._refuse(scope, receive, send, limit)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        response = problem(413, _too_large(limit))
        # the rest of the body is never read: the connection cannot carry another request
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


# --- request rate --------------------------------------------------------------------------------------------

# KEYS[1]: the bucket (a hash: tokens, ts in ms). ARGV: refill rate per second, capacity, cost.
# Returns {1, 0} when the cost was taken, else {0, milliseconds until the bucket holds the cost}.
_TOKEN_BUCKET = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
end
local allowed = 0
local wait_ms = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  wait_ms = math.ceil((cost - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(math.max(now, ts)))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, wait_ms}
"""

BUCKET_PREFIX = "memory:ratelimit:"


@dataclass(frozen=True)
class RateLimit:
    per_s: float  # refill rate; 0: no limit
    burst: int  # capacity: requests a key may send at once after a quiet spell

    @property
    def unlimited(self) -> bool:
        return self.per_s <= 0


class RateLimiter:
    """Per-key token buckets in Redis; see the module's docstring for the policy and its failure mode."""

    OVERRIDE_TTL_S = 30.0  # a change of a tenant's limit reaches every API process within this
    REDIS_RETRY_S = 5.0  # after a Redis failure, requests pass without asking it for this long

    def __init__(self, redis_url: str, default: RateLimit, *, timeout_s: float = 0.25):
        self.default = default
        self._redis = redis.Redis.from_url(
            redis_py_url(redis_url),
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )
        self._bucket = self._redis.register_script(_TOKEN_BUCKET)
        self._tenants: dict[str, tuple[float, RateLimit]] = {}
        self._lock = threading.Lock()
        self._skip_until = 0.0  # monotonic; > now while Redis is considered down
        self._warned = False

    def limit_for(self, session: Session, tenant_id: str) -> RateLimit:
        """The tenant's limit: its own overrides (read through the request's session, cached for
        OVERRIDE_TTL_S), else the default."""
        now = time.monotonic()
        cached = self._tenants.get(tenant_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        limit = self._parse(tenant_id, tenant_settings(session, tenant_id))
        with self._lock:
            self._tenants[tenant_id] = (now + self.OVERRIDE_TTL_S, limit)
        return limit

    def _parse(self, tenant_id: str, overrides: Mapping[str, Any]) -> RateLimit:
        per_s, burst = self.default.per_s, self.default.burst
        try:
            if overrides.get("rate_limit_per_s") is not None:
                per_s = float(overrides["rate_limit_per_s"])
            if overrides.get("rate_limit_burst") is not None:
                burst = int(overrides["rate_limit_burst"])
            if not (per_s >= 0 and math.isfinite(per_s)) or burst < 1:
                raise ValueError("rate_limit_per_s must be >= 0 and rate_limit_burst >= 1")
        except (TypeError, ValueError) as exc:
            log.warning("api.rate_limit_override_invalid", tenant_id=tenant_id, error=str(exc))
            return self.default
        return RateLimit(per_s=per_s, burst=burst)

    def take(self, key_id: str, limit: RateLimit) -> float | None:
        """Take one request from the key's bucket: None when allowed, else the seconds until it would be."""
        if limit.unlimited or time.monotonic() < self._skip_until:
            return None
        try:
            allowed, wait_ms = self._bucket(keys=[BUCKET_PREFIX + key_id], args=[limit.per_s, limit.burst, 1])
        except redis.RedisError as exc:
            self._skip_until = time.monotonic() + self.REDIS_RETRY_S
            if not self._warned:
                self._warned = True
                log.warning(
                    "api.rate_limit_unavailable",
                    error=type(exc).__name__,
                    policy="fail open: requests are served without a rate limit until Redis answers",
                    retry_in_s=self.REDIS_RETRY_S,
                )
            return None
        if self._warned:
            self._warned = False
            log.info("api.rate_limit_available")
        return None if int(allowed) else int(wait_ms) / 1000

    def check(self, session: Session, key_id: str, tenant_id: str) -> None:
        """Raise a 429 (with `Retry-After`) when the key's bucket is empty."""
        limit = self.limit_for(session, tenant_id)
        wait_s = self.take(key_id, limit)
        if wait_s is None:
            return
        retry_after = max(1, math.ceil(wait_s))
        raise HTTPException(
            429,
            f"rate limit of this API key exceeded ({limit.per_s:g} requests/s, bursts of {limit.burst}); "
            f"retry after {retry_after} s",
            headers={"Retry-After": str(retry_after)},
        )

    def close(self) -> None:
        self._redis.close()
