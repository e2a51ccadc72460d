"""A local, fsync'd JSONL spool for ingest calls that could not reach the broker or the API.

Each line is one call: `{"task": "memory.ingest", "args": [{"tenant_id": ..., "events": [...]}]}` (the
name is the one the server's task of the same name has always had: spools written by older clients are
re-sent as they are).

Appends and drains take an exclusive `flock`, so several processes may share one spool file.
A line is removed only after it was published; a crash in between re-sends it, which the
idempotent ingest (keyed by event_id) turns into a no-op. A drain that fails part-way keeps the calls
`publish` did not store: all of the failed batch, or those past the exception's `sent_calls` when it says
how many of the batch's calls (from the first) were stored.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

INGEST = "memory.ingest"  # the one call a spool holds (shared.tasknames.INGEST is this name)


class Spool:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, calls: Sequence[tuple[str, Sequence[Any]]]) -> None:
        data = "".join(json.dumps({"task": t, "args": list(a)}, ensure_ascii=False) + "\n" for t, a in calls)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _write_all(fd, data.encode("utf-8"))
            os.fdatasync(fd)  # the data is what must survive a crash; metadata-only flushes are skipped
        finally:
            os.close(fd)  # closing releases the lock

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def drain(
        self,
        publish: Callable[[list[tuple[str, list[Any]]]], None],
        *,
        batch: int = 500,
        batch_events: int | None = None,
        pause: Callable[[], bool] | None = None,
    ) -> int:
        """Publish every spooled call in order, `batch` calls at a time (and at most `batch_events` events,
        when given, unless one call holds more); return how many were sent. Stops (keeping the rest) when
        `publish` raises, and re-raises. When `pause` answers True between batches, stops there (keeping the
        rest) and releases the lock, so that an append waiting for it can go on."""
        if self.size() == 0:
            return 0
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        sent = 0
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "r", encoding="utf-8") as fh:
                lines = fh.read().splitlines()
            keep_from = (
                0  # the first line not (yet) published: it and those after it are written back as read
            )
            try:
                # lines are parsed a batch at a time: a drain that stops early parses no more than it sends
                while keep_from < len(lines):
                    if sent and pause is not None and pause():
                        break
                    calls, at = _next_batch(lines, keep_from, batch, batch_events)
                    if not calls:
                        keep_from = len(lines)  # only torn lines left
                        break
                    try:
                        publish(calls)
                    except BaseException as exc:
                        stored = getattr(exc, "sent_calls", 0)
                        if isinstance(stored, int) and 0 < stored <= len(calls):
                            sent += stored
                            keep_from = at[stored] if stored < len(calls) else at[-1] + 1
                        raise
                    sent += len(calls)
                    keep_from = at[-1] + 1
            finally:
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
                if keep_from < len(lines):
                    _write_all(fd, "".join(line + "\n" for line in lines[keep_from:]).encode("utf-8"))
                os.fsync(fd)
        finally:
            os.close(fd)
        return sent


def _next_batch(
    lines: list[str], start: int, batch: int, batch_events: int | None
) -> tuple[list[tuple[str, list[Any]]], list[int]]:
    """The calls of the next batch from `lines[start:]` (at most `batch` calls and, when given,
    `batch_events` events, but at least one call) and the index of each one's line. Torn lines (a crash
    mid-write) are skipped: nothing can be sent from them."""
    calls: list[tuple[str, list[Any]]] = []
    at: list[int] = []
    events = 0
    for i in range(start, len(lines)):
        if len(calls) >= batch:
            break
        try:
            rec = json.loads(lines[i])
            call = (str(rec["task"]), list(rec["args"]))
        except (ValueError, KeyError, TypeError):
            continue
        n = _events_in(call[1])
        if calls and batch_events is not None and events + n > batch_events:
            break
        calls.append(call)
        at.append(i)
        events += n
    return calls, at


def _events_in(args: list[Any]) -> int:
    try:
        return len(args[0]["events"])
    except (IndexError, KeyError, TypeError):
        return 1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
