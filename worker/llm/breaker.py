"""A circuit breaker for an LLM endpoint that keeps failing, its state in Redis so that every worker process
(and every worker machine) sees the same one.

- Closed: calls go through. `failure()` counts consecutive failures (any answer the caller could not use:
  transport errors after the client's own retries, refusals, output that failed validation after its
  repair); `success()` resets the count.
- Open: after `threshold` consecutive failures, no call is made until `open_until`; the callers fall back
  (extraction: rules only, turns `llm_pending` with reason `circuit_open`; the other stages: their no-LLM
  path, see `worker.services.llm_stage`). The open period doubles with each opening
  since the last success: `base_s`, 2 x `base_s`, ... up to `max_s`.
- Half-open: once `open_until` has passed, one caller (a Redis `SET NX` token) makes a probe call; its
  success closes the breaker, its failure opens it again for the next, longer period.

A breaker is named per endpoint and stage (`breaker_name`): a model may fail the extraction schema and still
write fine summaries. Redis being unreachable never blocks a call (the breaker fails open, logged).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

log = logging.getLogger(__name__)

KEY_PREFIX = "memory:llm:breaker:"

# KEYS[1]: the state hash, KEYS[2]: the probe token. ARGV: now, threshold, base_s, max_s.
# Returns the new open_until (0 when the breaker stays closed).
_FAILURE = """
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local open_until = tonumber(redis.call('HGET', KEYS[1], 'open_until') or '0')
local now = tonumber(ARGV[1])
if failures >= tonumber(ARGV[2]) or open_until > 0 then
  local opens = redis.call('HINCRBY', KEYS[1], 'opens', 1)
  local delay = math.min(tonumber(ARGV[4]), tonumber(ARGV[3]) * 2 ^ (opens - 1))
  open_until = now + delay
  redis.call('HSET', KEYS[1], 'open_until', tostring(open_until), 'failures', 0)
  redis.call('DEL', KEYS[2])
  redis.call('EXPIRE', KEYS[1], math.ceil(delay + tonumber(ARGV[4]) * 4))
  return tostring(open_until)
end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[4]) * 4))
return '0'
"""


def breaker_name(stage: str, *, base_url: str | None, model: str) -> str:
    """`<stage>:<hash of the endpoint and model>` (no URL in Redis keys: it may carry credentials)."""
    digest = hashlib.sha256(f"{base_url or ''}|{model}".encode()).hexdigest()[:16]
    return f"{stage}:{digest}"


@dataclass(frozen=True)
class Gate:
    """Whether a call may be made now; when not, the earliest time (epoch seconds) worth asking again."""

    allowed: bool
    retry_at: float | None = None
    probe: bool = False  # this call is the half-open probe


class CircuitBreaker:
    def __init__(
        self,
        client: redis.Redis,
        name: str,
        *,
        threshold: int = 5,
        base_s: float = 30.0,
        max_s: float = 1800.0,
        probe_ttl_s: float = 120.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if threshold < 1 or base_s <= 0 or max_s < base_s:
            raise ValueError("a breaker needs threshold >= 1 and 0 < base_s <= max_s")
        self._redis = client
        self.name = name
        self._key = KEY_PREFIX + name
        self._probe_key = self._key + ":probe"
        self._threshold = threshold
        self._base_s = base_s
        self._max_s = max_s
        self._probe_ttl_ms = max(int(probe_ttl_s * 1000), 1)
        self._clock = clock
        self._failure_script: Any = client.register_script(_FAILURE)

    def allow(self) -> Gate:
        """May a call be made now? In the half-open state only one caller gets True (the probe)."""
        try:
            open_until = self._open_until()
            if open_until is None:
                return Gate(True)
            now = self._clock()
            if now < open_until:
                return Gate(False, retry_at=open_until)
            if self._redis.set(self._probe_key, b"1", nx=True, px=self._probe_ttl_ms):
                log.info("llm breaker %s half-open: probing", self.name)
                return Gate(True, probe=True)
            return Gate(False, retry_at=now + self._probe_ttl_ms / 1000)
        except redis.RedisError as exc:
            log.warning("llm breaker %s unreadable (%s): calling anyway", self.name, type(exc).__name__)
            return Gate(True)

    def is_open(self) -> bool:
        """Open and not yet due for a probe (reads only; takes no probe token)."""
        try:
            open_until = self._open_until()
        except redis.RedisError:
            return False
        return open_until is not None and self._clock() < open_until

    def success(self) -> None:
        try:
            self._redis.delete(self._key, self._probe_key)
        except redis.RedisError as exc:
            log.warning("llm breaker %s not reset (%s)", self.name, type(exc).__name__)

    def failure(self) -> float | None:
        """Count a failure; returns the time the breaker stays open until when this failure opened it."""
        try:
            raw = self._failure_script(
                keys=[self._key, self._probe_key],
                args=[repr(self._clock()), self._threshold, repr(self._base_s), repr(self._max_s)],
            )
        except redis.RedisError as exc:
            log.warning("llm breaker %s not updated (%s)", self.name, type(exc).__name__)
            return None
        open_until = float(raw.decode() if isinstance(raw, bytes) else raw)
        if open_until > 0:
            log.warning("llm breaker %s opened until %.0f", self.name, open_until)
            return open_until
        return None

    def state(self) -> dict[str, Any]:
        """failures, opens and open_until (None when closed) as stored; for operators."""
        raw = self._redis.hgetall(self._key)
        values = {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}

        def number(name: str) -> float:
            value = values.get(name)
            return float(value.decode() if isinstance(value, bytes) else value) if value is not None else 0.0

        open_until = number("open_until")
        return {
            "name": self.name,
            "failures": int(number("failures")),
            "opens": int(number("opens")),
            "open_until": open_until or None,
        }

    def _open_until(self) -> float | None:
        raw = self._redis.hget(self._key, "open_until")
        if raw is None:
            return None
        value = float(raw.decode() if isinstance(raw, bytes) else raw)
        return value or None


def breaker_states(client: redis.Redis) -> list[dict[str, Any]]:
    """Every breaker's stored state (for `memctl stats`)."""
    out = []
    for key in client.scan_iter(match=KEY_PREFIX + "*", count=100):
        name = (key.decode() if isinstance(key, bytes) else key)[len(KEY_PREFIX) :]
        if name.endswith(":probe"):
            continue
        out.append(CircuitBreaker(client, name).state())
    return sorted(out, key=lambda s: s["name"])
