"""Every scheduled job, as data: its id, its trigger, the Celery task it enqueues and why it exists.

A job only ever enqueues a task by name (from `shared.tasknames`); it imports nothing from the worker.
`jobs(settings)` is pure: it reads values from `settings` and returns `Job`s; nothing is started here.

Interval triggers are anchored at the Unix epoch, so every instance computes the same fire times (the
per-slot de-duplication in `schedules.runner` depends on that). `speedup` (test-only, see
`schedules.run`) divides every period; in that mode the nightly cron job becomes an interval job of
one day / speedup, so an accelerated test sees every job fire.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from shared import tasknames
from shared.errors import SettingsError

MINUTE_S = 60.0
HOUR_S = 60 * MINUTE_S
DAY_S = 24 * HOUR_S

# Fire times of interval jobs are multiples of the period since this instant, on every instance.
ANCHOR = datetime(1970, 1, 1, tzinfo=UTC)

# A late fire still runs within half its period, but never more than an hour late (see `misfire_grace_s`).
MAX_MISFIRE_GRACE_S = 3600

DEFAULT_DISTILL_AT = "03:00"
DEFAULT_DISTILL_TIMEZONE = "UTC"

_HH_MM = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


@dataclass(frozen=True)
class Job:
    """One scheduled job: when `trigger` fires, enqueue `task_name` with `(*args, scheduled_at_iso)`."""

    id: str
    trigger: BaseTrigger
    task_name: str
    reason: str
    args: tuple[Any, ...] = ()
    # seconds a fire may be late and still run; later fires are dropped (coalesced into the next one)
    misfire_grace_s: int = 60


def scaled_period_s(period_s: float, speedup: float) -> float:
    """The period actually used: `period_s / speedup` (speedup > 0; 1 in production)."""
    if speedup <= 0:
        raise ValueError(f"speedup must be > 0, got {speedup}")
    return period_s / speedup


def misfire_grace_s(period_s: float) -> int:
    """How late a fire may run: half the period, at least 1 s (APScheduler wants an int > 0), at most 1 h."""
    return max(1, min(MAX_MISFIRE_GRACE_S, int(period_s / 2)))


def every(period_s: float) -> IntervalTrigger:
    """An interval trigger whose fire times are epoch-aligned multiples of `period_s`."""
    return IntervalTrigger(seconds=period_s, start_date=ANCHOR, timezone=UTC)


def parse_hh_mm(value: str) -> tuple[int, int]:
    """'03:00' -> (3, 0); raises `SettingsError` naming MEMORY_DISTILL_AT otherwise."""
    match = _HH_MM.match(value.strip())
    if not match:
        raise SettingsError(f"MEMORY_DISTILL_AT={value!r}: expected a time of day as HH:MM (24 h)")
    return int(match.group(1)), int(match.group(2))


def parse_timezone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SettingsError(f"MEMORY_DISTILL_TIMEZONE={name!r}: not an IANA time zone name") from None


def jobs(settings: Any, *, speedup: float = 1.0) -> list[Job]:
    """The schedule. `settings.distill_at` / `settings.distill_timezone` default to 03:00 UTC when absent."""
    distill_at = str(getattr(settings, "distill_at", None) or DEFAULT_DISTILL_AT)
    distill_tz = parse_timezone(str(getattr(settings, "distill_timezone", None) or DEFAULT_DISTILL_TIMEZONE))
    hour, minute = parse_hh_mm(distill_at)

    def interval_job(job_id: str, period_s: float, task_name: str, reason: str) -> Job:
        period = scaled_period_s(period_s, speedup)
        return Job(job_id, every(period), task_name, reason, misfire_grace_s=misfire_grace_s(period))

    if speedup == 1:
        distill = Job(
            "distill-nightly",
            CronTrigger(hour=hour, minute=minute, timezone=distill_tz),
            tasknames.DISTILL,
            f"Consolidate each user's piled-up fragments once a night, at {distill_at} {distill_tz.key}, "
            "when agents are quiet.",
            misfire_grace_s=misfire_grace_s(DAY_S),
        )
    else:
        # accelerated tests: a wall-clock time of day cannot be sped up, a period can
        distill = interval_job(
            "distill-nightly",
            DAY_S,
            tasknames.DISTILL,
            "Nightly consolidation, accelerated: once per day / speedup.",
        )
    return [
        interval_job(
            "close-idle-sessions",
            MINUTE_S,
            tasknames.CLOSE_IDLE_SESSIONS,
            "Close sessions that went quiet so their episode summary is written within a minute.",
        ),
        interval_job(
            "sweep",
            5 * MINUTE_S,
            tasknames.SWEEP,
            "Re-enqueue events stuck unprocessed (lost messages, killed workers), so none is lost.",
        ),
        interval_job(
            "prune-hourly",
            HOUR_S,
            tasknames.PRUNE,
            "Apply TTLs and half-life decay every hour, so expired memories stop being served.",
        ),
        distill,
        interval_job(
            "purge-daily",
            DAY_S,
            tasknames.PURGE,
            "Delete archived rows past their retention period, once a day (00:00 UTC).",
        ),
    ]


def period_of(job: Job) -> timedelta | None:
    """The period of an interval job, None for a cron job (used in logs and tests)."""
    return job.trigger.interval if isinstance(job.trigger, IntervalTrigger) else None
