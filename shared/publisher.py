"""A lean publisher of Celery (protocol 2) task messages straight onto a Redis list.

Why not `celery.send_task`: it costs ~0.4 ms per call (signals, routing, amqp objects); an agent calls
`emit()` on every turn and we promise a few microseconds of overhead. The message layout below is exactly
what kombu's Redis transport writes (LPUSH of a JSON envelope with a base64 body), so an ordinary Celery
worker consumes it. Only Redis brokers are supported by this fast path.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from shared.embedded import redis_py_url

_ORIGIN = f"{os.getpid()}@{socket.gethostname()}"


def build_message(
    task_name: str,
    args: Sequence[Any],
    *,
    queue: str,
    task_id: str | None = None,
    countdown_s: float | None = None,
) -> bytes:
    """Serialise one task call as kombu's Redis transport stores it (`countdown_s`: run no earlier than)."""
    task_id = task_id or str(uuid.uuid4())
    eta = (datetime.now(UTC) + timedelta(seconds=countdown_s)).isoformat() if countdown_s else None
    body = json.dumps(
        [list(args), {}, {"callbacks": None, "errbacks": None, "chain": None, "chord": None}],
        ensure_ascii=False,
    ).encode("utf-8")
    envelope = {
        "body": base64.b64encode(body).decode("ascii"),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {
            "lang": "py",
            "task": task_name,
            "id": task_id,
            "shadow": None,
            "eta": eta,
            "expires": None,
            "group": None,
            "group_index": None,
            "retries": 0,
            "timelimit": [None, None],
            "root_id": task_id,
            "parent_id": None,
            # never the arguments themselves: Celery logs argsrepr, and arguments carry user content
            "argsrepr": f"<{len(args)} args>",
            "kwargsrepr": "{}",
            "origin": _ORIGIN,
            "ignore_result": True,
        },
        "properties": {
            "correlation_id": task_id,
            "reply_to": "",
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        },
    }
    return json.dumps(envelope, ensure_ascii=False).encode("utf-8")


class RedisPublisher:
    """Publishes task messages to one queue; raises `redis.RedisError` on broker trouble, never retries."""

    def __init__(self, url: str, *, queue: str, timeout_s: float = 0.05):
        self.queue = queue
        self._redis = redis.Redis.from_url(
            redis_py_url(url),
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )

    def publish(self, task_name: str, args: Sequence[Any], *, countdown_s: float | None = None) -> None:
        self._redis.lpush(
            self.queue, build_message(task_name, args, queue=self.queue, countdown_s=countdown_s)
        )

    def set_once(self, key: str, ttl_s: float) -> bool:
        """SET key NX PX ttl: True for the first caller within the ttl (used to arm one timer per session)."""
        return bool(self._redis.set(key, b"1", nx=True, px=max(1, int(ttl_s * 1000))))

    @property
    def redis(self) -> redis.Redis:
        return self._redis

    def publish_many(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> None:
        if not calls:
            return
        pipe = self._redis.pipeline(transaction=False)
        for task_name, args in calls:
            pipe.lpush(self.queue, build_message(task_name, args, queue=self.queue))
        pipe.execute()

    def ping(self) -> bool:
        try:
            return bool(self._redis.ping())
        except redis.RedisError:
            return False

    def close(self) -> None:
        self._redis.close()
