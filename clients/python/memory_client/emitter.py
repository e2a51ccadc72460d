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
  the agent for long), `emit` first waits up to `full_wait_s` (a few milliseconds) for the sender to take a
  batch, when the sender is only behind (not while the transport is down); if the queue is still full, it
  moves the oldest part of the queue (`spill_size` events, its own not among them) to the spool in one append
  (one fsync for all of them) and queues its own events in the room that made. Memory stays bounded and
  nothing is dropped.

Durability: an `emit` that returned has its events either in the in-memory queue (lost with the process, as
ever: `close()` and exit spool what is left) or in the spool file, fsync'd. Events moved from the queue to the
spool are in neither only inside the `emit` that moves them, which returns once they are on disk; `flush()`
waits for such a move. Spooled calls are re-sent oldest first, before the queue's next batch.
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
        full_wait_s: float = 0.005,
        spill_size: int | None = None,
    ):
        if not is_safe_id(tenant_id):
            raise ValueError("tenant_id must be 1-128 characters from A-Z a-z 0-9 . _ : @ -")
        if agent_id is not None and not is_safe_id(agent_id):
            raise ValueError("agent_id must be 1-128 characters from A-Z a-z 0-9 . _ : @ -")
        if queue_size < 1 or not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"queue_size must be >= 1 and batch_size 1..{MAX_BATCH}")
        if full_wait_s < 0 or (spill_size is not None and spill_size < 1):
            raise ValueError("full_wait_s must be >= 0 and spill_size >= 1")
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
        queue_lock = threading.Lock()
        self._wakeup = threading.Condition(queue_lock)  # the sender waits here for events
        self._room = threading.Condition(queue_lock)  # emit() waits here for room in a full queue
        self._full_wait_s = full_wait_s
        self._spill_size = spill_size or max(1, queue_size // 2)
        self._spilling = 0  # emit() calls moving queued events to the spool right now
        self._busy = False  # the sender holds events taken from the queue
        self._sender: threading.Thread | None = None
        # counters (for tests, metrics and the benchmark)
        self.spooled = 0  # calls spooled by this emitter
        self.sent = 0  # events handed to the transport successfully
        self.overflowed = 0  # queued events emit() moved to the spool because the background queue was full
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
                    # a refusal part-way keeps only the calls not sent (HTTP: the exception's sent_calls)
                    return self._spool.drain(
                        self._publisher.publish_many,
                        batch=self._spool_batch,
                        batch_events=self._batch_events(),
                    )
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
                self._room.notify_all()
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

    def _batch_events(self) -> int | None:
        """The most events the transport sends in one request of a spool re-send (None: no limit)."""
        value = getattr(self._publisher, "batch_events", None)
        return value if isinstance(value, int) else None

    def _submit(self, events: list[dict[str, Any]]) -> None:
        if not self._background:
            self._send(events)
            return
        spill: list[dict[str, Any]] = []
        with self._wakeup:
            if self._sender is None and not self._closed:
                self._sender = threading.Thread(target=self._run_sender, name="memory-sender", daemon=True)
                self._sender.start()
            if len(self._queue) + len(events) > self._queue_size and self._sender_healthy():
                # only behind: the sender frees a batch's room as soon as its request is done
                deadline = time.monotonic() + self._full_wait_s
                while len(self._queue) + len(events) > self._queue_size and not self._closed:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._room.wait(left)
            excess = len(self._queue) + len(events) - self._queue_size
            if excess > 0:
                # still full: the oldest queued events go to the spool, one append (one fsync) for all of them
                for _ in range(min(len(self._queue), max(excess, self._spill_size))):
                    spill.append(self._queue.popleft())
                excess = len(self._queue) + len(events) - self._queue_size
            if excess > 0:  # more events than the whole queue holds: the rest of this call is spooled too
                self._queue.extend(events[:-excess])
                spill.extend(events[-excess:])
            else:
                self._queue.extend(events)
            if spill:
                self._spilling += 1
            self._wakeup.notify()
        if not spill:
            return
        try:
            size = self._batch_size
            calls = [self._call(spill[i : i + size]) for i in range(0, len(spill), size)]
            if self._spool_calls(calls, len(spill), drop_on_error=False):
                self.overflowed += len(spill)
            else:
                self._requeue(spill)
        finally:
            with self._wakeup:
                self._spilling -= 1
                self._wakeup.notify_all()

    def _requeue(self, spill: list[dict[str, Any]]) -> None:
        """The spool could not be written (out of disk, read-only): the events go back to the front of the
        queue, and what is then over its bound, the newest, is dropped, loudly (memory stays bounded)."""
        with self._wakeup:
            self._queue.extendleft(reversed(spill))
            dropped = [self._queue.pop() for _ in range(max(0, len(self._queue) - self._queue_size))]
            self._wakeup.notify()
        if dropped:
            log.error(
                "the queue is full and the spool cannot be written; %d event(s) dropped: %s",
                len(dropped),
                ",".join(str(e.get("event_id")) for e in reversed(dropped)),
            )

    def _sender_healthy(self) -> bool:
        return (
            time.monotonic() >= self._down_until
            and self._sender is not None
            and self._sender.is_alive()
            and not self._closed
        )

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

    def _spool_calls(self, calls: list[Call], events: int, *, drop_on_error: bool = True) -> bool:
        try:
            self._spool.append(calls)
            self.spooled += len(calls)
            return True
        except OSError as exc:
            if not drop_on_error:
                log.error("spool write failed (%s); %d event(s) kept in memory", exc.strerror, events)
                return False
            # Out of disk or a read-only spool: we promised never to raise into the agent, so say it loudly.
            ids = [e.get("event_id") for _, args in calls for e in args[0]["events"]]
            log.error(
                "transport unavailable and spool write failed (%s); %d event(s) dropped: %s",
                exc.strerror,
                events,
                ",".join(str(i) for i in ids),
            )
            return False

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
                if batch:
                    self._room.notify_all()
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
        if self._spool.size() and not self._drain_spool(pausable=True):
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
        return self._drain_spool(pausable=False) and self._spool.size() == 0

    def _drain_spool(self, *, pausable: bool) -> bool:
        """Re-send the spool; False when the transport refused (the rest stays spooled). `pausable`: stop
        between two requests when an `emit` waits to append to the spool (the sender comes back to it)."""
        with self._flushing:
            try:
                with self._sending:
                    self._spool.drain(
                        self._publisher.publish_many,
                        batch=self._spool_batch,
                        batch_events=self._batch_events(),
                        pause=(lambda: self._spilling > 0) if pausable else None,
                    )
            except self._outage_errors as exc:
                self._outage(exc)
                return False
        return True

    def _send_queued(self, timeout_s: float | None) -> None:
        """Wait (at most `timeout_s`) until the sender has handed over everything queued."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._wakeup:
            self._wakeup.notify_all()
            while self._queue or self._busy or self._spilling:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                if self._spilling and not (self._queue or self._busy):
                    # an emit() moving queued events to the spool: flush() re-sends them once on disk
                    self._wakeup.wait(timeout=0.05 if left is None else min(left, 0.05))
                    continue
                if self._sender is None or not self._sender.is_alive():
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
