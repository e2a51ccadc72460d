"""The ingest stream: where agents append transcript events, and what the ingest consumers read.

One Redis Stream per (queue, shard) with one consumer group. A producer appends an envelope
`{"tenant_id": ..., "events": [...]}` with XADD (one round trip); consumers read batches with XREADGROUP,
store them, then XACK and XDEL them (so the stream's length is the backlog: nothing accepted is ever trimmed
away unread); a dead consumer's entries are taken over with XAUTOCLAIM (see `worker/ingest_consumer.py`).

The producer side (key names, the entry's field, the envelope's encoding, sharding, `StreamProducer`) is the
client package's (`memory_client.stream`): agents append with it without installing the server, and the
server's consumers read exactly what it writes because they import the same definitions from there. This
module adds what only the server needs: the operators' view of the streams.
"""

from __future__ import annotations

from typing import Any

import redis

from memory_client.stream import (
    FIELD,
    GROUP,
    StreamProducer,
    encode,
    shard_of,
    split_by_shard,
    stream_key,
    stream_keys,
)

__all__ = [
    "FIELD",
    "GROUP",
    "StreamProducer",
    "encode",
    "shard_of",
    "split_by_shard",
    "stream_key",
    "stream_keys",
    "stream_stats",
]


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
