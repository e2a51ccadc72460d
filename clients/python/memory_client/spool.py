"""A local, fsync'd JSONL spool for ingest calls that could not reach the broker or the API.

Each line is one call: `{"task": "memory.ingest", "args": [{"tenant_id": ..., "events": [...]}]}` (the
name is the one the server's task of the same name has always had: spools written by older clients are
re-sent as they are).

Appends and drains take an exclusive `flock`, so several processes may share one spool file.
A line is removed only after it was published; a crash in between re-sends it, which the
idempotent ingest (keyed by event_id) turns into a no-op.
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
            os.write(fd, data.encode("utf-8"))
            os.fdatasync(fd)  # the data is what must survive a crash; metadata-only flushes are skipped
        finally:
            os.close(fd)  # closing releases the lock

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def drain(self, publish: Callable[[list[tuple[str, list[Any]]]], None], *, batch: int = 500) -> int:
        """Publish every spooled call in order; return how many were sent. Stops (keeping the rest) when
        `publish` raises, and re-raises."""
        if self.size() == 0:
            return 0
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        sent = 0
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "r", encoding="utf-8") as fh:
                lines = fh.read().splitlines()
            calls: list[tuple[str, list[Any]]] = []
            for line in lines:
                try:
                    rec = json.loads(line)
                    calls.append((str(rec["task"]), list(rec["args"])))
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line from a crash mid-write: nothing we can send
            try:
                for start in range(0, len(calls), batch):
                    publish(calls[start : start + batch])
                    sent = start + len(calls[start : start + batch])
            finally:
                remaining = calls[sent:]
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
                if remaining:
                    os.write(
                        fd,
                        "".join(
                            json.dumps({"task": t, "args": a}, ensure_ascii=False) + "\n"
                            for t, a in remaining
                        ).encode("utf-8"),
                    )
                os.fsync(fd)
        finally:
            os.close(fd)
        return sent
