"""The one retry mechanism of the tasks: a database outage becomes a Celery retry with capped backoff."""

from __future__ import annotations

from typing import Any

import pytest
from celery import Celery
from celery.exceptions import Retry
from sqlalchemy.exc import IntegrityError, OperationalError

from worker.tasks.base import DatabaseTask, retry_later

app = Celery("test-task-base", broker="memory://", set_as_current=False)


@app.task(base=DatabaseTask, bind=True)
def fails_with(self: Any, error: str) -> None:
    if error == "database":
        raise OperationalError("SELECT 1", {}, Exception("server closed the connection"))
    raise IntegrityError("INSERT", {}, Exception("duplicate key"))


@pytest.fixture
def retries(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    countdowns: list[float] = []

    def retry(*, exc: BaseException, countdown: float) -> Retry:
        countdowns.append(countdown)
        return Retry(exc=exc, when=countdown)

    monkeypatch.setattr(fails_with, "retry", retry)
    return countdowns


def test_a_lost_database_connection_is_retried_with_capped_backoff_forever(retries: list[float]) -> None:
    with pytest.raises(Retry):
        fails_with("database")

    assert len(retries) == 1 and 0.2 <= retries[0] <= 0.2 + 0.5
    assert fails_with.max_retries is None


def test_any_other_error_fails_the_task(retries: list[float]) -> None:
    with pytest.raises(IntegrityError):
        fails_with("integrity")

    assert retries == []


def test_retry_later_runs_its_bookkeeping_with_the_countdown_first(retries: list[float]) -> None:
    seen: list[float] = []

    retry = retry_later(fails_with, ValueError("x"), max_s=2, before_retry=seen.append)

    assert isinstance(retry, Retry) and seen == retries and 0.2 <= seen[0] <= 2.2
