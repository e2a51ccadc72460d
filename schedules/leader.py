"""Leader election for the scheduler: one Redis key, held by one instance at a time, renewed while alive.

Contract:
- The key (`memory:scheduler:leader`, suffixed with the queue name when it is not the default one, so two
  deployments sharing a Redis each get a leader) holds the leader's instance id, `host:pid:random`.
- `acquire()` is `SET key id NX PX ttl`; `renew()` extends the ttl only if the key still holds our id
  (compare-and-pexpire); `release()` deletes it only if it still holds our id (compare-and-delete).
- `tick()` is one election round (call it every `ttl_s / 3`): renew when we lead, try to acquire otherwise.
  A dead leader stops renewing, its key expires after at most `ttl_s`, and a follower's next tick takes it:
  a handover takes at most `ttl_s + ttl_s / 3` (20 s with the default 15 s).
- `is_leader` is the local view and errs on the side of "no": it turns false as soon as the ttl of our last
  successful acquire/renew has run out, even when Redis cannot be reached to confirm.
"""

from __future__ import annotations

import os
import socket
import time
import uuid

import redis

LEADER_KEY = "memory:scheduler:leader"
DEFAULT_QUEUE = "memory"
DEFAULT_TTL_S = 15.0

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def leader_key(queue: str = DEFAULT_QUEUE) -> str:
    return LEADER_KEY if queue == DEFAULT_QUEUE else f"{LEADER_KEY}:{queue}"


def new_instance_id() -> str:
    """Unique per process start; carries host and pid so an operator (or a test) can find the leader."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def pid_of(instance_id: str) -> int:
    """The pid inside an instance id made by `new_instance_id`."""
    return int(instance_id.rsplit(":", 2)[1])


class LeaderLock:
    """A renewable Redis lock naming one leader. Not thread-safe: one thread calls `tick()`."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        key: str = LEADER_KEY,
        ttl_s: float = DEFAULT_TTL_S,
        instance_id: str | None = None,
    ):
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be > 0, got {ttl_s}")
        self.key = key
        self.ttl_s = ttl_s
        self.instance_id = instance_id or new_instance_id()
        self._redis = client
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._valid_until = 0.0  # monotonic; 0 = not held

    @property
    def ttl_ms(self) -> int:
        return max(1, int(self.ttl_s * 1000))

    @property
    def renew_interval_s(self) -> float:
        return self.ttl_s / 3

    @property
    def is_leader(self) -> bool:
        return time.monotonic() < self._valid_until

    def acquire(self) -> bool:
        started = time.monotonic()
        if self._redis.set(self.key, self.instance_id, nx=True, px=self.ttl_ms):
            self._valid_until = started + self.ttl_s
            return True
        # after a restart with the same id (never in practice: ids are random) the key is already ours
        return self.renew()

    def renew(self) -> bool:
        # measured before the round trip: the key may expire ttl after Redis ran the script, never later
        started = time.monotonic()
        if int(self._renew(keys=[self.key], args=[self.instance_id, self.ttl_ms])) == 1:
            self._valid_until = started + self.ttl_s
            return True
        self._valid_until = 0.0
        return False

    def release(self) -> bool:
        self._valid_until = 0.0
        return int(self._release(keys=[self.key], args=[self.instance_id])) == 1

    def holder(self) -> str | None:
        value = self._redis.get(self.key)
        return value.decode() if isinstance(value, bytes) else value

    def tick(self) -> bool:
        """One election round; returns `is_leader` afterwards. Redis errors propagate (the caller logs them);
        the local view then lapses on its own when the ttl runs out."""
        if self.is_leader:
            return self.renew()
        return self.acquire()
