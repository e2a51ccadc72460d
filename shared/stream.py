"""The ingest stream: where agents append transcript events, and what the ingest consumers read.

One Redis Stream per (queue, shard) with one consumer group. A producer appends an envelope
`{"tenant_id": ..., "events": [...]}` with XADD (one round trip); consumers read batches with XREADGROUP,
store them, then XACK and XDEL them (so the stream's length is the backlog: nothing accepted is ever trimmed
away unread); a dead consumer's entries are taken over with XAUTOCLAIM (see `worker/ingest_consumer.py`).

Sharding: events shard over `shards` streams by a hash of (tenant, user), N = 1 by default. Every key of a
shard carries the hash tag `{queue:shard}`, so a Redis Cluster may place each shard on its own node while the
keys of one shard stay together. Only Redis is needed here (no Celery): agents import this module.
"""

from __future__ import annotations

import json
import zlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from shared import tasknames
from shared.embedded import redis_py_url

GROUP = "ingest"
FIELD = b"e"  # the entry's one field: the JSON envelope


def stream_key(queue: str, shard: int = 0) -> str:
    return f"memory:ingest:{{{queue}:{shard}}}"


def stream_keys(queue: str, shards: int) -> list[str]:
    return [stream_key(queue, i) for i in range(shards)]


def shard_of(tenant_id: str, user_id: str, shards: int) -> int:
    """Stable across processes and versions (crc32, not Python's salted hash)."""
    if shards <= 1:
        return 0
    return zlib.crc32(f"{tenant_id}\x1f{user_id}".encode()) % shards


def encode(envelope: Any) -> bytes:
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def split_by_shard(envelope: Any, shards: int) -> list[tuple[int, Any]]:
    """The envelope as one part per shard its events belong to (one part when N = 1 or malformed)."""
    if shards <= 1 or not isinstance(envelope, dict) or not isinstance(envelope.get("events"), list):
        return [(0, envelope)]
    tenant = str(envelope.get("tenant_id"))
    parts: dict[int, list[Any]] = defaultdict(list)
    for event in envelope["events"]:
        user = str(event.get("user_id")) if isinstance(event, dict) else ""
        parts[shard_of(tenant, user, shards)].append(event)
    if len(parts) == 1:
        return [(next(iter(parts)), envelope)]
    return [(shard, {**envelope, "events": events}) for shard, events in sorted(parts.items())]


class StreamProducer:
    """Appends ingest envelopes to the stream; raises `redis.RedisError` on broker trouble, never retries
    (the client spools). Speaks the client's transport interface: `publish(task_name, args)` with the task
    name `memory.ingest` and one envelope, as spooled calls are written."""

    def __init__(self, url: str, *, queue: str, shards: int = 1, timeout_s: float = 0.05):
        if shards < 1:
            raise ValueError("shards must be >= 1")
        self.queue = queue
        self.shards = shards
        self._keys = stream_keys(queue, shards)
        self._redis = redis.Redis.from_url(
            redis_py_url(url),
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )

    @property
    def redis(self) -> redis.Redis:
        return self._redis

    def append(self, envelope: Any) -> None:
        parts = split_by_shard(envelope, self.shards)
        if len(parts) == 1:
            shard, part = parts[0]
            self._redis.xadd(self._keys[shard], {FIELD: encode(part)})
            return
        pipe = self._redis.pipeline(transaction=False)
        for shard, part in parts:
            pipe.xadd(self._keys[shard], {FIELD: encode(part)})
        pipe.execute()

    def append_many(self, envelopes: Sequence[Any]) -> None:
        if not envelopes:
            return
        pipe = self._redis.pipeline(transaction=False)
        for envelope in envelopes:
            for shard, part in split_by_shard(envelope, self.shards):
                pipe.xadd(self._keys[shard], {FIELD: encode(part)})
        pipe.execute()

    # the client's transport interface (calls as the spool stores them)
    def publish(self, task_name: str, args: Sequence[Any]) -> None:
        self.append(_envelope_of(task_name, args))

    def publish_many(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> None:
        self.append_many([_envelope_of(t, a) for t, a in calls])

    def ping(self) -> bool:
        try:
            return bool(self._redis.ping())
        except redis.RedisError:
            return False

    def close(self) -> None:
        self._redis.close()


def _envelope_of(task_name: str, args: Sequence[Any]) -> Any:
    if task_name != tasknames.INGEST or len(args) != 1:
        raise ValueError(f"the ingest stream takes one envelope per {tasknames.INGEST} call, not {task_name}")
    return args[0]


def _id_ms(entry_id: Any) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    return int(text.split("-", 1)[0])


def stream_stats(client: redis.Redis, queue: str, shards: int, *, now_ms: int | None = None) -> dict[str, Any]:
    """What operators watch: entries in the streams (the backlog: acknowledged entries are deleted), entries
    delivered but not acknowledged, the age of the oldest of each, the consumers and their pending counts."""
    import time

    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    length = pending = 0
    oldest_entry_ms: int | None = None
    oldest_pending_ms: int | None = None
    consumers: dict[str, dict[str, int]] = {}
    for key in stream_keys(queue, shards):
        if not client.exists(key):
            continue
        length += int(client.xlen(key))
        first = client.xrange(key, count=1)
        if first:
            ms = _id_ms(first[0][0])
            oldest_entry_ms = ms if oldest_entry_ms is None else min(oldest_entry_ms, ms)
        try:
            summary = client.xpending(key, GROUP)
            infos = client.xinfo_consumers(key, GROUP)
        except redis.ResponseError:  # no group yet: no consumer ever started
            continue
        pending += int(summary["pending"])
        if summary["pending"]:
            ms = _id_ms(summary["min"])
            oldest_pending_ms = ms if oldest_pending_ms is None else min(oldest_pending_ms, ms)
        for c in infos:
            name = c["name"].decode() if isinstance(c["name"], bytes) else str(c["name"])
            entry = consumers.setdefault(name, {"pending": 0, "idle_ms": int(c["idle"])})
            entry["pending"] += int(c["pending"])
            entry["idle_ms"] = min(entry["idle_ms"], int(c["idle"]))
    return {
        "streams": shards,
        "length": length,
        "pending": pending,
        "oldest_entry_age_s": round((now_ms - oldest_entry_ms) / 1000, 3) if oldest_entry_ms else 0.0,
        "oldest_pending_age_s": round((now_ms - oldest_pending_ms) / 1000, 3) if oldest_pending_ms else 0.0,
        "consumers": consumers,
    }
