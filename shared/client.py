"""The agent-side client: `MemoryClient(tenant).emit(...)`, fire-and-forget.

Contract:
- `emit` / `emit_many` validate their arguments and raise `ValueError` at once when they are invalid;
- otherwise they never raise and return within a few milliseconds: the event is redacted here (secrets
  never leave the agent's process), appended to the ingest stream (`shared.stream`: one XADD), or, when the
  broker is unreachable, appended to a local fsync'd spool file;
- the spool is re-sent in the background after the next successful publish, by `flush()`, and at exit.
Agents import no worker code and no Celery: the only coupling is the stream's key names and envelope.

With `api_url` and `api_key` the client sends to the API's `POST /v1/events` instead of the broker
(`shared.http_publisher`): for an agent that cannot reach Redis, and the path on which the API's limits
apply. `emit` then waits for the API's 202 (the events are stored before it), at most `http_timeout_s`.
A 429 is an outage like an unreachable API: the call is spooled, nothing is sent before the `Retry-After`
the API gave, and the spool is re-sent by a timer when it has passed (and again after each refusal).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import redis

from shared import tasknames
from shared.contract import MAX_BATCH, EventIn, parse_event, utcnow
from shared.http_publisher import DEFAULT_MAX_BODY_BYTES, HttpPublisher, Unavailable
from shared.redaction import redact, redact_obj
from shared.spool import Spool
from shared.stream import StreamProducer


def _default_broker_url() -> str:
    from shared.embedded import _redis_socket_path
    from shared.settings import get_settings

    settings = get_settings()
    if settings.redis_url:
        return settings.redis_url
    return f"redis+socket://{_redis_socket_path(settings.data_path / 'redis')}"


def _default_spool_path() -> Path:
    from shared.settings import get_settings

    settings = get_settings()
    return settings.spool_path or settings.data_path / "spool" / "events.jsonl"


# what a transport raises when the call should be spooled and re-sent later
_OUTAGE = (redis.RedisError, Unavailable)


class _Transport(Protocol):
    def publish(self, task_name: str, args: Sequence[Any]) -> None: ...

    def publish_many(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> None: ...

    def close(self) -> None: ...


class MemoryClient:
    """Emit transcript events to the memory worker. Thread-safe; one per process is plenty."""

    def __init__(
        self,
        tenant_id: str,
        *,
        broker_url: str | None = None,
        queue: str | None = None,
        shards: int | None = None,
        spool_path: str | Path | None = None,
        agent_id: str | None = None,
        publish_timeout_s: float = 0.05,
        retry_after_s: float = 1.0,
        flush_at_exit: bool = True,
        api_url: str | None = None,
        api_key: str | None = None,
        http_timeout_s: float = 2.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ):
        from shared.contract import is_safe_id

        if not is_safe_id(tenant_id):
            raise ValueError("tenant_id must be 1-128 characters from A-Z a-z 0-9 . _ : @ -")
        if api_url is not None and broker_url is not None:
            raise ValueError("give broker_url or api_url, not both")
        self.tenant_id = tenant_id
        self.agent_id = agent_id
        self._publisher: _Transport
        if api_url is not None:
            # the tenant is the key's; tenant_id still names the client's events in the spool and the logs
            self._publisher = HttpPublisher(
                api_url, api_key or "", timeout_s=http_timeout_s, max_body_bytes=max_body_bytes
            )
        else:
            if queue is None or shards is None:
                from shared.settings import get_settings

                queue = queue or get_settings().queue
                shards = shards or get_settings().ingest_shards
            self._publisher = StreamProducer(
                broker_url or _default_broker_url(), queue=queue, shards=shards, timeout_s=publish_timeout_s
            )
        self._resend_on_timer = api_url is not None
        self._timer: threading.Timer | None = None
        self._closed = False
        self._spool = Spool(Path(spool_path) if spool_path else _default_spool_path())
        self._retry_after_s = retry_after_s
        self._down_until = 0.0  # monotonic time before which we don't try the broker (circuit open)
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self.spooled = 0  # calls spooled by this client (for tests and metrics)
        if flush_at_exit:
            atexit.register(self._flush_at_exit)

    # --- public API -------------------------------------------------------------------------------------

    def emit(
        self,
        *,
        user_id: str,
        session_id: str,
        content: str = "",
        role: str = "user",
        type: str = "turn",
        event_id: str | None = None,
        agent_id: str | None = None,
        event_time: datetime | None = None,
        source_turn_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Send one event; return its event_id (generated when not given). Raises only `ValueError`."""
        fields: dict[str, Any] = {
            "user_id": user_id,
            "session_id": session_id,
            "content": content,
            "role": role,
            "type": type,
            "agent_id": agent_id or self.agent_id,
            "event_time": event_time,
            "source_turn_id": source_turn_id,
            "metadata": dict(metadata) if metadata is not None else {},
        }
        if event_id is not None:
            fields["event_id"] = event_id
        event = self._validate(fields)
        self._send([self._wire(event)])
        return event.event_id

    def emit_many(self, events: Iterable[Mapping[str, Any]]) -> list[str]:
        """Send many events (dicts with the `emit` keywords); validates all before sending any."""
        validated = [self._validate({"agent_id": self.agent_id, **dict(e)}) for e in events]
        for start in range(0, len(validated), MAX_BATCH):
            self._send([self._wire(e) for e in validated[start : start + MAX_BATCH]])
        return [e.event_id for e in validated]

    def flush(self) -> int:
        """Re-send everything spooled; return how many calls were sent (0 when the broker is still down)."""
        with self._flushing:
            try:
                # over HTTP each call is a request of its own: count each as sent as soon as it is, so
                # that a refusal part-way keeps only the calls not yet sent
                sent = self._spool.drain(
                    self._publisher.publish_many, batch=1 if self._resend_on_timer else 500
                )
            except _OUTAGE as exc:
                self._outage(exc)
                return 0
        return sent

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self._flush_at_exit()
        self._publisher.close()

    # --- internals ----------------------------------------------------------------------------------------

    def _validate(self, fields: dict[str, Any]) -> EventIn:
        fields = {k: v for k, v in fields.items() if v is not None}
        fields["tenant_id"] = self.tenant_id
        now = utcnow()
        # an event without a time gets the time it was emitted, not the time a worker stored it: the events of
        # one session travel in separate messages, and receipt order across workers is not emission order
        fields.setdefault("event_time", now)
        return parse_event(fields, now=now)  # ContractError is a ValueError

    def _wire(self, event: EventIn) -> dict[str, Any]:
        data = event.model_dump(mode="json", exclude_none=True)
        data["content"] = redact(event.content)
        if event.metadata:
            data["metadata"] = redact_obj(event.metadata)
        return data

    def _send(self, events: list[dict[str, Any]]) -> None:
        call = (tasknames.INGEST, [{"tenant_id": self.tenant_id, "events": events}])
        if time.monotonic() >= self._down_until:
            try:
                self._publisher.publish(*call)
            except _OUTAGE as exc:
                self._outage(exc)
            else:
                if self._spool.size() and not self._flushing.locked():
                    threading.Thread(target=self.flush, name="memory-spool-flush", daemon=True).start()
                return
        try:
            self._spool.append([call])
            self.spooled += 1
        except OSError as exc:
            # Out of disk or a read-only spool: we promised never to raise into the agent, so say it loudly.
            logging.getLogger("memory.client").error(
                "broker unreachable and spool write failed (%s); %d event(s) dropped: %s",
                exc.strerror,
                len(events),
                ",".join(e["event_id"] for e in events),
            )

    def _outage(self, exc: Exception) -> None:
        """The transport refused the call for now: nothing is sent before the wait it asked for (a 429's
        Retry-After) or our own; on HTTP a timer re-sends the spool then."""
        wait_s = getattr(exc, "retry_after_s", None)
        wait_s = self._retry_after_s if wait_s is None else max(wait_s, 0.0)
        self._down_until = time.monotonic() + wait_s
        if self._resend_on_timer:
            self._schedule_resend(wait_s)

    def _schedule_resend(self, delay_s: float) -> None:
        with self._lock:
            if self._closed or self._timer is not None:
                return
            self._timer = threading.Timer(delay_s, self._resend)
            self._timer.name = "memory-spool-resend"
            self._timer.daemon = True
            self._timer.start()

    def _resend(self) -> None:
        with self._lock:
            self._timer = None
        if self._spool.size():
            self.flush()  # another refusal schedules the next try

    def _flush_at_exit(self) -> None:
        if self._spool.size():
            self._down_until = 0.0
            self.flush()
