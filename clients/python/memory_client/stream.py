"""The ingest stream, producer side: where agents append transcript events (the `redis` extra).

One Redis Stream per (queue, shard), read by the server's ingest consumers through one consumer group
(`worker/ingest_consumer.py`). A producer appends an envelope `{"tenant_id": ..., "events": [...]}` as the one
field `e` of an entry, with XADD (one round trip). The key names, the field, the envelope's encoding and the
sharding are defined here, once: the server's consumers import them from this module.

Sharding: events shard over `shards` streams by a hash of (tenant, user), N = 1 by default. Every key of a
shard carries the hash tag `{queue:shard}`, so a Redis Cluster may place each shard on its own node while the
keys of one shard stay together.
"""

from __future__ import annotations

import json
import zlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from memory_client.spool import INGEST

GROUP = "ingest"
FIELD = b"e"  # the entry's one field: the JSON envelope
DEFAULT_QUEUE = "memory"


def redis_py_url(url: str) -> str:
    """Translate a kombu URL to one redis-py understands (`redis+socket://` -> `unix://`)."""
    if url.startswith("redis+socket://"):
        return "unix://" + url[len("redis+socket://") :]
    return url


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
    (the emitter spools). Speaks the emitter's transport interface: `publish(task_name, args)` with the task
    name `memory.ingest` and one envelope, as spooled calls are written."""

    def __init__(self, url: str, *, queue: str = DEFAULT_QUEUE, shards: int = 1, timeout_s: float = 0.05):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

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
    def redis(self) -> Any:
        """The `redis.Redis` client (typed loosely: redis is an optional dependency of the client)."""
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

    # the emitter's transport interface (calls as the spool stores them)
    def publish(self, task_name: str, args: Sequence[Any]) -> None:
        self.append(_envelope_of(task_name, args))

    def publish_many(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> None:
        self.append_many([_envelope_of(t, a) for t, a in calls])

    def ping(self) -> bool:
        import redis

        try:
            return bool(self._redis.ping())
        except redis.RedisError:
            return False

    def close(self) -> None:
        self._redis.close()


def outage_errors() -> tuple[type[Exception], ...]:
    """What this transport raises when the call should be spooled and re-sent later."""
    import redis

    return (redis.RedisError,)


def _envelope_of(task_name: str, args: Sequence[Any]) -> Any:
    if task_name != INGEST or len(args) != 1:
        raise ValueError(f"the ingest stream takes one envelope per {INGEST} call, not {task_name}")
    return args[0]
