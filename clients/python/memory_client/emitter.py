"""`emit`: transcript events out of the agent's process, fire-and-forget, nothing lost.

Promises, on every transport:
- `emit` / `emit_many` validate their arguments in the caller (`memory_client.contract`) and raise
  `ContractError` (a `ValueError`) at once when one is invalid; otherwise they never raise;
- secrets are redacted here (`memory_client.redaction`), before an event leaves the process;
- when the transport is down (Redis unreachable; the API unreachable, answering 5xx or 429, or refusing the
  key) the call goes to a local fsync'd spool file, re-sent after the wait the transport asked for (a
  `Retry-After`), after the next successful send, by `flush()`, and at exit. Re-sending is harmless:
  `event_id` (given or generated) is the idempotency key.

Two ways to send:
- in the caller (`background=False`): the Redis path's one XADD (well under a millisecond), or the HTTP
  path's one request when the caller wants the API's 202 before `emit` returns;
- from a background thread (`background=True`, the HTTP default of `Memory`): `emit` puts the event on a
  bounded in-memory queue and returns; a sender thread posts batches of what has queued up (one request for
  many events under load) and spools a batch it cannot send. When the queue is full (the API is slower than
  the agent for long), `emit` spools the event itself: memory stays bounded and nothing is dropped.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from memory_client.contract import MAX_BATCH, check_event, is_safe_id, to_wire, utcnow
from memory_client.http_ingest import Unavailable
from memory_client.redaction import redact, redact_obj
from memory_client.spool import INGEST, Spool

log = logging.getLogger("memory.client")


class Transport(Protocol):
    def publish(self, task_name: str, args: Sequence[Any]) -> None: ...

    def publish_many(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> None: ...

    def close(self) -> None: ...


Call = tuple[str, list[Any]]


def _at_exit(ref: weakref.ref[Emitter]) -> None:
    emitter = ref()
    if emitter is not None:
        emitter._at_exit()


class Emitter:
    """Emit transcript events for one tenant through one transport. Thread-safe; one per process is plenty."""

    def __init__(
        self,
        tenant_id: str,
        transport: Transport,
        *,
        spool_path: str | Path,
        outage: tuple[type[BaseException], ...] = (Unavailable,),
        agent_id: str | None = None,
        retry_after_s: float = 1.0,
        flush_at_exit: bool = True,
        background: bool = False,
        resend_on_timer: bool = False,
        queue_size: int = 10_000,
        batch_size: int = MAX_BATCH,
        spool_batch: int = 500,
    ):
        if not is_safe_id(tenant_id):
            raise ValueError("tenant_id must be 1-128 characters from A-Z a-z 0-9 . _ : @ -")
        if agent_id is not None and not is_safe_id(agent_id):
            raise ValueError("agent_id must be 1-128 characters from A-Z a-z 0-9 . _ : @ -")
        if queue_size < 1 or not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"queue_size must be >= 1 and batch_size 1..{MAX_BATCH}")
        self.tenant_id = tenant_id
        self.agent_id = agent_id
        self._publisher = transport
        self._outage_errors = outage
        self._spool = Spool(Path(spool_path))
        self._spool_batch = spool_batch
        self._retry_after_s = retry_after_s
        self._down_until = 0.0  # monotonic time before which we don't try the transport (circuit open)
        self._resend_on_timer = resend_on_timer
        self._timer: threading.Timer | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._sending = threading.Lock()  # one send at a time: the sender thread, flush() or close()
        # background sending
        self._background = background
        self._queue: deque[dict[str, Any]] = deque()
        self._queue_size = queue_size
        self._batch_size = batch_size
        self._wakeup = threading.Condition(threading.Lock())
        self._busy = False  # the sender holds events taken from the queue
        self._sender: threading.Thread | None = None
        # counters (for tests, metrics and the benchmark)
        self.spooled = 0  # calls spooled by this emitter
        self.sent = 0  # events handed to the transport successfully
        self.overflowed = 0  # events spooled by emit() because the background queue was full
        if flush_at_exit:
            atexit.register(_at_exit, weakref.ref(self))

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
        wire = self._wire(self._validate(fields))
        self._submit([wire])
        return str(wire["event_id"])

    def emit_many(self, events: Iterable[Mapping[str, Any]]) -> list[str]:
        """Send many events (dicts with the `emit` keywords); validates all before sending any."""
        wires = [self._wire(self._validate({"agent_id": self.agent_id, **dict(e)})) for e in events]
        for start in range(0, len(wires), MAX_BATCH):
            self._submit(wires[start : start + MAX_BATCH])
        return [str(w["event_id"]) for w in wires]

    def flush(self, timeout_s: float | None = None) -> int:
        """Send what the background queue holds, then re-send everything spooled; return how many spooled
        calls were sent (0 when the transport is still down: they stay spooled)."""
        if self._background:
            self._send_queued(timeout_s)
        with self._flushing:
            try:
                with self._sending:
                    # over HTTP each call is a request of its own: count each as sent as soon as it is, so
                    # that a refusal part-way keeps only the calls not yet sent
                    return self._spool.drain(self._publisher.publish_many, batch=self._spool_batch)
            except self._outage_errors as exc:
                self._outage(exc)
                return 0

    def pending(self) -> int:
        """Events waiting in the background queue (not counting the spool)."""
        return len(self._queue) + (1 if self._busy else 0)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the sender (sending what it holds, within `timeout_s`), re-send the spool once, and close the
        transport. Whatever could not be sent stays in the spool for the next process."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if self._background:
            with self._wakeup:
                self._wakeup.notify_all()
            if self._sender is not None:
                self._sender.join(timeout_s)
            self._spool_queue()
        self._flush_spool_once()
        self._publisher.close()

    # --- internals ----------------------------------------------------------------------------------------

    def _validate(self, fields: dict[str, Any]) -> dict[str, Any]:
        fields = {k: v for k, v in fields.items() if v is not None}
        fields["tenant_id"] = self.tenant_id
        now = utcnow()
        # an event without a time gets the time it was emitted, not the time a worker stored it: the events of
        # one session travel in separate messages, and receipt order across workers is not emission order
        fields.setdefault("event_time", now)
        return check_event(fields, now=now)  # ContractError is a ValueError

    def _wire(self, event: dict[str, Any]) -> dict[str, Any]:
        data = to_wire(event)
        data["content"] = redact(event["content"])
        if event["metadata"]:
            data["metadata"] = redact_obj(event["metadata"])
        return data

    def _call(self, events: list[dict[str, Any]]) -> Call:
        return (INGEST, [{"tenant_id": self.tenant_id, "events": events}])

    def _submit(self, events: list[dict[str, Any]]) -> None:
        if not self._background:
            self._send(events)
            return
        with self._wakeup:
            room = self._queue_size - len(self._queue)
            accepted, overflow = events[: max(room, 0)], events[max(room, 0) :]
            self._queue.extend(accepted)
            if accepted:
                self._wakeup.notify()
            if self._sender is None and not self._closed:
                self._sender = threading.Thread(target=self._run_sender, name="memory-sender", daemon=True)
                self._sender.start()
        if overflow:
            self.overflowed += len(overflow)
            self._spool_calls([self._call(overflow)], len(overflow))

    def _send(self, events: list[dict[str, Any]]) -> None:
        call = self._call(events)
        if time.monotonic() >= self._down_until:
            try:
                with self._sending:
                    self._publisher.publish(*call)
            except self._outage_errors as exc:
                self._outage(exc)
            else:
                self.sent += len(events)
                if self._spool.size() and not self._flushing.locked():
                    threading.Thread(target=self.flush, name="memory-spool-flush", daemon=True).start()
                return
        self._spool_calls([call], len(events))

    def _spool_calls(self, calls: list[Call], events: int) -> None:
        try:
            self._spool.append(calls)
            self.spooled += len(calls)
        except OSError as exc:
            # Out of disk or a read-only spool: we promised never to raise into the agent, so say it loudly.
            ids = [e.get("event_id") for _, args in calls for e in args[0]["events"]]
            log.error(
                "transport unavailable and spool write failed (%s); %d event(s) dropped: %s",
                exc.strerror,
                events,
                ",".join(str(i) for i in ids),
            )

    def _outage(self, exc: BaseException) -> None:
        """The transport refused the call for now: nothing is sent before the wait it asked for (a 429's
        Retry-After) or our own; the spool is re-sent then (a timer, or the background sender)."""
        wait_s = getattr(exc, "retry_after_s", None)
        wait_s = self._retry_after_s if wait_s is None else max(wait_s, 0.0)
        self._down_until = time.monotonic() + wait_s
        if self._resend_on_timer and not self._background:
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

    # --- the background sender ----------------------------------------------------------------------------

    def _take(self) -> list[dict[str, Any]]:
        batch: list[dict[str, Any]] = []
        while self._queue and len(batch) < self._batch_size:
            batch.append(self._queue.popleft())
        return batch

    def _run_sender(self) -> None:
        while True:
            with self._wakeup:
                while not self._queue and not self._closed:
                    wait_s = self._down_until - time.monotonic()
                    if self._spool.size() and wait_s <= 0:
                        break  # a spool waiting and the wait over: re-send it now
                    self._wakeup.wait(timeout=max(wait_s, 0.05) if self._spool.size() else None)
                if self._closed and not self._queue:
                    return
                batch = self._take()
                self._busy = bool(batch)
            try:
                self._deliver(batch)
            except Exception:  # never let the thread die: whatever failed is spooled
                log.exception("the background sender failed; %d event(s) spooled", len(batch))
                if batch:
                    self._spool_calls([self._call(batch)], len(batch))
            finally:
                with self._wakeup:
                    self._busy = False
                    self._wakeup.notify_all()
            if self._closed:
                return

    def _deliver(self, batch: list[dict[str, Any]]) -> None:
        """Send one batch, the spool first when it holds older calls; spool the batch while the transport is
        down."""
        if time.monotonic() < self._down_until:
            if batch:
                self._spool_calls([self._call(batch)], len(batch))
            return
        if self._spool.size() and not self.flush_spool_only():
            if batch:
                self._spool_calls([self._call(batch)], len(batch))
            return
        if not batch:
            return
        try:
            with self._sending:
                self._publisher.publish(*self._call(batch))
        except self._outage_errors as exc:
            self._outage(exc)
            self._spool_calls([self._call(batch)], len(batch))
        else:
            self.sent += len(batch)

    def flush_spool_only(self) -> bool:
        """Re-send the spool (not the queue); True when it is empty afterwards."""
        with self._flushing:
            try:
                with self._sending:
                    self._spool.drain(self._publisher.publish_many, batch=self._spool_batch)
            except self._outage_errors as exc:
                self._outage(exc)
                return False
        return self._spool.size() == 0

    def _send_queued(self, timeout_s: float | None) -> None:
        """Wait (at most `timeout_s`) until the sender has handed over everything queued."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._wakeup:
            self._wakeup.notify_all()
            while self._queue or self._busy:
                if self._sender is None or not self._sender.is_alive():
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                if time.monotonic() < self._down_until:
                    break  # the transport is down: the sender spools, flush() re-sends below
                self._wakeup.wait(timeout=0.05 if left is None else min(left, 0.05))

    def _spool_queue(self) -> None:
        """Move whatever is still queued (a sender that did not finish in time) to the spool."""
        with self._wakeup:
            left = list(self._queue)
            self._queue.clear()
        for start in range(0, len(left), MAX_BATCH):
            part = left[start : start + MAX_BATCH]
            self._spool_calls([self._call(part)], len(part))

    def _flush_spool_once(self) -> None:
        if self._spool.size():
            self._down_until = 0.0
            try:
                self.flush_spool_only()
            except Exception:  # at exit or close: never raise; the spool stays for the next process
                log.exception("could not re-send the spool")

    def _at_exit(self) -> None:
        if self._background:
            self.close(timeout_s=2.0)
        else:
            self._flush_spool_once()
