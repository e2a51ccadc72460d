"""Buffered access counting: searches note which memories they returned; a background thread applies the
counts in one UPDATE every few seconds (and at shutdown), instead of one write per read."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable

import structlog
from sqlalchemy import Engine

from shared.contract import utcnow
from shared.db.engine import session_scope

log = structlog.get_logger("api.access")


class AccessRecorder:
    def __init__(self, engine: Engine, *, interval_s: float = 5.0):
        self._engine = engine
        self._interval_s = interval_s
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="access-recorder", daemon=True)

    def start(self) -> AccessRecorder:
        self._thread.start()
        return self

    def note(self, memory_ids: Iterable[str]) -> None:
        with self._lock:
            self._counts.update(memory_ids)

    def flush(self) -> int:
        from worker.services.search import record_access

        with self._lock:
            counts, self._counts = dict(self._counts), Counter()
        if not counts:
            return 0
        try:
            with session_scope(self._engine) as db:
                return record_access(db, counts, now=utcnow())
        except Exception as exc:  # counts are advisory: never let them break reads
            log.warning("access.flush_failed", error=type(exc).__name__, dropped=len(counts))
            return 0

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.flush()

    def stop(self) -> None:
        self._stop.set()
        self.flush()
