"""Sending Celery tasks by name: the follow-up work of ingest, the schedules, the operators' commands.

Messages are built and sent by Celery itself (`send_task`), never by hand: what a worker reads is whatever
the installed Celery writes. Agents do not use this module (they append events to the ingest stream,
`shared.stream`); it is imported by the server's processes only, and Celery is loaded on first use.

Broker trouble is raised as `PublishError`, a `redis.ConnectionError`, so that callers handle one family of
errors whatever the layer that failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from shared.embedded import kombu_url, redis_py_url

if TYPE_CHECKING:
    from celery import Celery


class PublishError(redis.ConnectionError):
    """The broker did not take a task message."""


class TaskPublisher:
    """Sends tasks to one queue; raises `PublishError` on broker trouble, never retries.

    `app`: the Celery application to send with (a worker passes its own, to share its connection pool); by
    default a private one on `url`, created when the first task is sent."""

    def __init__(self, url: str, *, queue: str, timeout_s: float = 2.0, app: Celery | None = None):
        self.queue = queue
        self._url = url
        self._timeout_s = timeout_s
        self._app = app
        self._redis = redis.Redis.from_url(
            redis_py_url(url),
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )

    def _celery(self) -> Celery:
        if self._app is None:
            from celery import Celery

            app = Celery("memory-publisher", set_as_current=False)
            app.conf.update(
                broker_url=kombu_url(self._url),
                broker_connection_timeout=self._timeout_s,
                broker_transport_options={
                    "socket_timeout": self._timeout_s,
                    "socket_connect_timeout": self._timeout_s,
                },
                task_serializer="json",
                accept_content=["json"],
                task_ignore_result=True,
                result_backend=None,
            )
            self._app = app
        return self._app

    def publish(
        self,
        task_name: str,
        args: Sequence[Any],
        *,
        countdown_s: float | None = None,
        task_id: str | None = None,
    ) -> None:
        """Send one task (`countdown_s`: run no earlier than; `task_id`: a chosen id, e.g. one per schedule
        slot). Task arguments are identifiers, never user content; Celery's logs show only their count."""
        try:
            self._celery().send_task(
                task_name,
                args=list(args),
                queue=self.queue,
                countdown=countdown_s,
                task_id=task_id,
                ignore_result=True,
                add_to_parent=False,
                retry=False,
                argsrepr=f"<{len(args)} args>",
                kwargsrepr="{}",
            )
        except PublishError:
            raise
        except Exception as exc:  # kombu's OperationalError, redis errors, socket errors
            raise PublishError(f"{type(exc).__name__}: {exc}") from exc

    def publish_many(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> None:
        for task_name, args in calls:
            self.publish(task_name, args)

    def set_once(self, key: str, ttl_s: float) -> bool:
        """SET key NX PX ttl: True for the first caller within the ttl (used to arm one timer per session)."""
        return bool(self._redis.set(key, b"1", nx=True, px=max(1, int(ttl_s * 1000))))

    def set_many_once(self, keys: Sequence[str], ttl_s: float) -> list[bool]:
        """`set_once` for several keys in one round trip."""
        if not keys:
            return []
        pipe = self._redis.pipeline(transaction=False)
        for key in keys:
            pipe.set(key, b"1", nx=True, px=max(1, int(ttl_s * 1000)))
        return [bool(r) for r in pipe.execute()]

    @property
    def redis(self) -> redis.Redis:
        return self._redis

    def ping(self) -> bool:
        try:
            return bool(self._redis.ping())
        except redis.RedisError:
            return False

    def close(self) -> None:
        self._redis.close()
        if self._app is not None:
            self._app.close()
