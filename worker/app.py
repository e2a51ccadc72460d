"""The Celery application: JSON only, late acks, lost-worker rejection, bounded prefetch and time limits.

Start a worker with `celery -A worker.app worker` (or `memctl up`). Logging goes through structlog;
each task run binds its context and ends with one canonical `task.finished` line.
"""

from __future__ import annotations

import time
from typing import Any

import structlog
from celery import Celery, signals

from shared.db.engine import dispose_inherited_engines, resolve_redis_url
from shared.embedded import kombu_url
from shared.logging import configure_logging
from shared.settings import get_settings
from worker import broker, metrics


def broker_transport_options(visibility_timeout_s: int) -> dict[str, int]:
    """Redis transport options. A task delivered to a worker that dies unacknowledged comes back once the
    visibility timeout has passed, but only when a worker next sweeps for it: kombu sweeps every interval x
    throttle seconds (10 x 10 by default), which would add up to 100 s to the timeout. One cheap ZRANGE per
    interval, the interval a quarter of the timeout (at most 10 s), bounds that wait: with the default
    timeout (180 s) a killed worker's tasks run again within about 190 s."""
    return {
        "visibility_timeout": visibility_timeout_s,
        "unacked_restore_interval": max(1, min(10, visibility_timeout_s // 4)),
        "unacked_restore_throttle": 1,
        "socket_timeout": 10,
        "socket_connect_timeout": 5,
    }


_settings = get_settings()

broker.use_for_redis_urls()  # a channel that finishes closing when Redis is gone: see worker/broker.py
app = Celery("memory")
app.conf.update(
    broker_url=kombu_url(resolve_redis_url(_settings)),
    broker_connection_retry_on_startup=True,
    # a broker outage of any length is waited out (the default gives up after 100 attempts, ~45 min)
    broker_connection_max_retries=None,
    broker_transport_options=broker_transport_options(_settings.broker_visibility_timeout_s),
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    task_ignore_result=True,
    result_backend=None,
    task_default_queue=_settings.queue,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    task_acks_on_failure_or_timeout=True,
    worker_prefetch_multiplier=_settings.worker_prefetch,
    task_time_limit=_settings.task_time_limit_s,
    task_soft_time_limit=max(1, int(_settings.task_time_limit_s * 0.8)),
    worker_hijack_root_logger=False,
    worker_redirect_stdouts=False,
    worker_send_task_events=True,
    # kept on: its mailbox's PUBSUB socket is always polled, so a busy worker (prefetch full, no BRPOP
    # pending) still notices a lost broker and reconnects (tests/integration/test_broker_outage.py)
    worker_enable_remote_control=True,
    task_send_sent_event=False,
    # KiB. A pool child with MiniLM loaded holds ~475 MB: a lower cap recycled it after every task and
    # reloaded torch each time (10 s per extraction on the LoCoMo replay)
    worker_max_memory_per_child=_settings.worker_max_memory_mb * 1024,
    enable_utc=True,
    timezone="UTC",
)
import worker.tasks.extract  # noqa: E402 - registers the tasks
import worker.tasks.ingest  # noqa: E402
import worker.tasks.maintenance  # noqa: E402
import worker.tasks.reconcile  # noqa: E402,F401

log = structlog.get_logger("worker")


@signals.setup_logging.connect
def _setup_logging(**_: Any) -> None:
    configure_logging(level=_settings.log_level, fmt=_settings.log_format)


@signals.worker_init.connect
def _check_schema_at_start(**_: Any) -> None:
    """Refuse to start against a database whose schema or embedding space differs from the settings."""
    from shared.errors import MemoryError_
    from worker import runtime

    try:
        runtime.check_schema()
    except MemoryError_ as exc:
        log.error("worker.refusing_to_start", detail=str(exc))
        raise SystemExit(f"memory worker: {exc}") from None
    finally:
        dispose_inherited_engines()


@signals.worker_process_init.connect
def _after_fork(**_: Any) -> None:
    dispose_inherited_engines()


@signals.task_prerun.connect
def _bind_task_context(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(task_id=task_id, task_name=getattr(task, "name", None))
    if task is not None:
        task.request._started_at = time.perf_counter()  # type: ignore[attr-defined]


@signals.task_postrun.connect
def _canonical_line(task: Any = None, retval: Any = None, state: str | None = None, **_: Any) -> None:
    """One line per task run: outcome, duration and the counts the task returned."""
    started = getattr(getattr(task, "request", None), "_started_at", None)
    duration_ms = round((time.perf_counter() - started) * 1000, 2) if started else None
    counts = retval if isinstance(retval, dict) else {}
    outcome = {"SUCCESS": counts.pop("outcome", "ok"), "RETRY": "retry", "FAILURE": "error"}.get(
        state or "", (state or "unknown").lower()
    )
    log.info("task.finished", outcome=outcome, duration_ms=duration_ms, **counts)
    name = getattr(task, "name", "unknown")
    metrics.TASKS.labels(name, str(outcome)).inc()
    if duration_ms is not None:
        metrics.TASK_SECONDS.labels(name).observe(duration_ms / 1000)
    structlog.contextvars.clear_contextvars()
