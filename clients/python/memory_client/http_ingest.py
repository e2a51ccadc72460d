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

`publish_many` (the spool's re-send) merges consecutive calls into as few requests as the API takes: one body
holds the events of any users and sessions (the key decides the tenant; calls that name another tenant are not
merged with each other), at most `MAX_BATCH` events and `max_body_bytes`. A merged body the API refuses for
good (a 4xx other than 413) is split back along the calls, so that a bad call still loses only its own events,
as it would alone. When a request fails for now, the `Unavailable` it raises says in `sent_calls` how many of
the calls, from the first, the API stored: the spool keeps the others (calls of a merged request that failed
are re-sent whole; the events that were stored anyway are no-ops the second time).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from memory_client.contract import MAX_BATCH
from memory_client.spool import INGEST

log = logging.getLogger("memory.client")

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
AUTH_RETRY_S = 60.0  # a refused key is retried this much later, not at the client's outage pace


class Unavailable(Exception):
    """The API did not take the call now; try again after `retry_after_s` (None: the client's default)."""

    def __init__(self, reason: str, retry_after_s: float | None = None, *, sent_calls: int = 0):
        super().__init__(reason)
        self.retry_after_s = retry_after_s
        # publish_many: how many of its calls, from the first, were stored before this failure
        self.sent_calls = sent_calls


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
    batch_events = MAX_BATCH  # the most events one request carries (the emitter's spool re-send batches)

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
        self._requests = 0
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
        """Send the calls in order, merged into as few requests as the API takes. On `Unavailable`, its
        `sent_calls` counts the calls (from the first) that were stored; the rest were not, or not all."""
        done = 0
        for group in self._groups(calls):
            try:
                self._send_group(group)
            except Unavailable as exc:
                exc.sent_calls += done
                raise
            done += len(group)

    def requests(self) -> int:
        """POSTs made so far (for tests and the benchmark)."""
        return self._requests

    def close(self) -> None:
        self._http.close()

    # --- internals ----------------------------------------------------------------------------------------

    def _groups(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> list[list[_Part]]:
        """Consecutive calls of one tenant packed into bodies of at most MAX_BATCH events and
        `max_body_bytes` (a call over either limit alone is a group of its own, sent as it always was)."""
        groups: list[list[_Part]] = []
        current: list[_Part] = []
        events = size = 0
        tenant: object = None
        for task_name, args in calls:
            if task_name != INGEST:
                raise ValueError(f"the HTTP transport sends only {INGEST} calls, not {task_name}")
            part = _Part(args[0])
            fits = (
                current
                and part.tenant == tenant
                and events + len(part.events) <= MAX_BATCH
                and size + 1 + len(part.json) <= self.max_body_bytes
            )
            if current and not fits:
                groups.append(current)
                current, events, size = [], 0, len(_BODY_FRAME)
            if not current:
                size = len(_BODY_FRAME)
            current.append(part)
            events += len(part.events)
            size += len(part.json) + 1
            tenant = part.tenant
        if current:
            groups.append(current)
        return groups

    def _send_group(self, group: list[_Part]) -> None:
        """One request for the group's calls; split along the calls when the API refuses the merged body for
        good or as too large. An `Unavailable` says how many of the group's calls were stored."""
        if len(group) == 1:
            self._send(group[0].events)
            return
        body = b'{"events":[' + b",".join(p.json for p in group if p.json) + b"]}"
        response = self._post(body) if len(body) <= self.max_body_bytes else None
        if response is not None and response.status_code < 300:
            return
        if response is not None:
            self._raise_if_unavailable(response)
        half = len(group) // 2  # too large, or a call the API refuses: each half as it would go alone
        self._send_group(group[:half])
        try:
            self._send_group(group[half:])
        except Unavailable as exc:
            exc.sent_calls += half
            raise

    def _post(self, body: bytes) -> httpx.Response:
        self._requests += 1
        try:
            return self._http.post("/v1/events", content=body)
        except httpx.TransportError as exc:  # refused, reset, timed out
            raise Unavailable(f"API unreachable ({type(exc).__name__})") from exc

    def _raise_if_unavailable(self, response: httpx.Response) -> None:
        status = response.status_code
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

    def _send(self, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        body = json.dumps({"events": events}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if len(body) > self.max_body_bytes and len(events) > 1:
            self._split(events)
            return
        response = self._post(body)
        status = response.status_code
        if status < 300:
            return
        self._raise_if_unavailable(response)
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


_BODY_FRAME = b'{"events":[]}'


class _Part:
    """One call's events, serialized once (a merged body joins these)."""

    __slots__ = ("events", "json", "tenant")

    def __init__(self, envelope: Any):
        self.tenant = envelope.get("tenant_id")
        self.events: list[dict[str, Any]] = list(envelope["events"])
        text = json.dumps(self.events, ensure_ascii=False, separators=(",", ":"))
        self.json = text[1:-1].encode("utf-8")  # the events without the list's brackets


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", ""))[:300]
    except ValueError:
        return response.text[:300]
