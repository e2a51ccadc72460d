"""What every database-bound task shares: a transient database error is retried, never lost.

`DatabaseTask` is the base of the tasks whose work is idempotent and read from Postgres (extraction,
reconciliation): a lost connection or a restarting server (`OperationalError`, `InterfaceError`) retries the
task with capped, jittered backoff, for as long as it takes; the message stays in Redis meanwhile (late
acks). Any other error fails the task as usual. `retry_later` is the one place that turns an error into a
Celery retry; the ingest task uses it with its own wider error set and ledger bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Task
from celery.exceptions import Retry
from sqlalchemy.exc import InterfaceError, OperationalError

from worker.retry import retry_countdown

DATABASE_ERRORS = (OperationalError, InterfaceError)


def retry_later(
    task: Task, exc: BaseException, *, max_s: int, before_retry: Callable[[float], None] | None = None
) -> Retry:
    """The `Retry` to raise for `task` after `exc`: its countdown is `retry_countdown` over the retries done
    so far, capped at `max_s`; `before_retry(countdown_s)` runs first (logging, bookkeeping)."""
    countdown = retry_countdown(task.request.retries, max_s=max_s)
    if before_retry is not None:
        before_retry(countdown)
    return task.retry(exc=exc, countdown=countdown)


class DatabaseTask(Task):
    """A task retried, without limit, while the database is unreachable (see the module docstring)."""

    max_retries = None
    database_retry_max_s = 60

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except DATABASE_ERRORS as exc:
            raise retry_later(self, exc, max_s=self.database_retry_max_s) from None
