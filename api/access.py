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
from store.access import record_access

log = structlog.get_logger("api.access")


class AccessRecorder:
    def __init__(self, engine: Engine, *, interval_s: float = 5.0):
        self._engine = engine
        self._interval_s = interval_s
        self._counts: Counter[tuple[str, str]] = Counter()  # (tenant, memory id) -> hits
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="access-recorder", daemon=True)

    def start(self) -> AccessRecorder:
        self._thread.start()
        return self

    def note(self, tenant_id: str, memory_ids: Iterable[str]) -> None:
        with self._lock:
            self._counts.update((tenant_id, m) for m in memory_ids)

    def flush(self) -> int:
        with self._lock:
            counts, self._counts = dict(self._counts), Counter()
        if not counts:
            return 0
        by_tenant: dict[str, dict[str, int]] = {}
        for (tenant_id, memory_id), n in counts.items():
            by_tenant.setdefault(tenant_id, {})[memory_id] = n
        done = 0
        for tenant_id, tenant_counts in by_tenant.items():
            try:
                with session_scope(self._engine, tenant=tenant_id) as db:
                    done += record_access(db, tenant_counts, now=utcnow())
            except Exception as exc:  # counts are advisory: never let them break reads
                log.warning("access.flush_failed", error=type(exc).__name__, dropped=len(tenant_counts))
        return done

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.flush()

    def stop(self) -> None:
        self._stop.set()
        self.flush()
