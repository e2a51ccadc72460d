"""The client's HTTP transport: ingest calls sent to the API's `POST /v1/events` instead of the broker.

The same interface as the Redis transport (`memory_client.stream.StreamProducer`: `publish`, `publish_many`,
`close`), so the emitter's outage handling (spool, re-send) serves both. What the API answers
decides what happens to a call:

- 202: stored (the API stores the events in PostgreSQL before it answers);
- 429, 503 (or any 5xx, 408), a timeout or a refused connection: `Unavailable`, with the server's
  `Retry-After` when it sent one; the client spools the call and re-sends it after that wait;
- 401 / 403: `Unavailable` too (the key may be fixed or rotated; the events are kept), logged as an error;
- 413: the batch is split in two and each half sent; a single event refused is dropped (below);
- other 4xx (422: an event the API refuses, which the client's own validation should have caught): nothing
  sent again will ever be accepted, so the events are dropped with an error naming their ids.

Batches are split before sending so that a body stays under `max_body_bytes` (the API's default
`MEMORY_MAX_EVENTS_BODY_BYTES`). Re-sending a call that was in fact stored is harmless: ingest is keyed by
`event_id`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from memory_client.spool import INGEST

log = logging.getLogger("memory.client")

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
AUTH_RETRY_S = 60.0  # a refused key is retried this much later, not at the client's outage pace


class Unavailable(Exception):
    """The API did not take the call now; try again after `retry_after_s` (None: the client's default)."""

    def __init__(self, reason: str, retry_after_s: float | None = None):
        super().__init__(reason)
        self.retry_after_s = retry_after_s


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delay-seconds or an HTTP date); None when absent or
    unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class HttpPublisher:
    def __init__(
        self,
        api_url: str,
        api_key: str,
        *,
        timeout_s: float = 2.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ):
        if not api_url.startswith(("http://", "https://")):
            raise ValueError("api_url must be an http:// or https:// URL")
        if not api_key:
            raise ValueError("api_key is required with api_url")
        self.max_body_bytes = max_body_bytes
        self._http = httpx.Client(
            base_url=api_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
            timeout=timeout_s,
        )

    def publish(self, task_name: str, args: Sequence[Any]) -> None:
        if task_name != INGEST:
            raise ValueError(f"the HTTP transport sends only {INGEST} calls, not {task_name}")
        self._send(list(args[0]["events"]))

    def publish_many(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> None:
        for task_name, args in calls:
            self.publish(task_name, args)

    def close(self) -> None:
        self._http.close()

    # --- internals ----------------------------------------------------------------------------------------

    def _send(self, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        body = json.dumps({"events": events}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if len(body) > self.max_body_bytes and len(events) > 1:
            self._split(events)
            return
        try:
            response = self._http.post("/v1/events", content=body)
        except httpx.TransportError as exc:  # refused, reset, timed out
            raise Unavailable(f"API unreachable ({type(exc).__name__})") from exc
        status = response.status_code
        if status < 300:
            return
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        if status == 429 or status == 408 or status >= 500:
            raise Unavailable(f"API answered {status}", retry_after)
        if status in (401, 403):
            log.error(
                "the API refused the client's key (%d); events kept in the spool: %s",
                status,
                _detail(response),
            )
            raise Unavailable(f"API answered {status}", retry_after or AUTH_RETRY_S)
        if status == 413 and len(events) > 1:
            self._split(events)
            return
        log.error(
            "the API refused %d event(s) for good (%d: %s); dropped: %s",
            len(events),
            status,
            _detail(response),
            ",".join(str(e.get("event_id")) for e in events),
        )

    def _split(self, events: list[dict[str, Any]]) -> None:
        half = len(events) // 2
        self._send(events[:half])
        self._send(events[half:])


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", ""))[:300]
    except ValueError:
        return response.text[:300]
