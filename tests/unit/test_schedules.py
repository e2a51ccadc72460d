"""The schedule as data: every job names a real task and says why, registers on a real APScheduler, and the
test-only speedup divides every period. No Redis, no processes."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from schedules.jobs import (
    DAY_S,
    HOUR_S,
    MINUTE_S,
    Job,
    every,
    jobs,
    misfire_grace_s,
    parse_hh_mm,
    period_of,
    scaled_period_s,
)
from schedules.runner import new_scheduler, register, slot_iso
from shared import tasknames
from shared.errors import SettingsError
from shared.settings import load_settings

REAL_TASKS = {value for name, value in vars(tasknames).items() if name.isupper() and isinstance(value, str)}


def _by_id(schedule: list[Job]) -> dict[str, Job]:
    return {job.id: job for job in schedule}


def _schedules() -> list[list[Job]]:
    settings = load_settings()
    return [jobs(settings), jobs(settings, speedup=60), jobs(settings, speedup=3600)]


@pytest.mark.parametrize("schedule", _schedules(), ids=["production", "speedup-60", "speedup-3600"])
def test_every_job_names_a_real_task_and_says_why(schedule: list[Job]) -> None:
    for job in schedule:
        assert job.task_name in REAL_TASKS, job
        assert job.reason.strip().endswith("."), f"{job.id}: the reason should be a sentence"
        assert len(job.reason.split()) >= 5, job.id


def test_the_schedule_covers_prune_distill_close_idle_sweep_and_purge_with_unique_ids() -> None:
    schedule = jobs(load_settings())
    assert len({job.id for job in schedule}) == len(schedule)
    assert {job.task_name for job in schedule} == {
        tasknames.PRUNE,
        tasknames.DISTILL,
        tasknames.CLOSE_IDLE_SESSIONS,
        tasknames.SWEEP,
        tasknames.PURGE,
    }


def test_production_periods_are_a_minute_five_minutes_an_hour_and_a_day() -> None:
    schedule = _by_id(jobs(load_settings()))
    assert period_of(schedule["close-idle-sessions"]) == timedelta(minutes=1)
    assert period_of(schedule["sweep"]) == timedelta(minutes=5)
    assert period_of(schedule["prune-hourly"]) == timedelta(hours=1)
    assert period_of(schedule["purge-daily"]) == timedelta(days=1)
    assert isinstance(schedule["distill-nightly"].trigger, CronTrigger)


@pytest.mark.parametrize("schedule", _schedules(), ids=["production", "speedup-60", "speedup-3600"])
def test_every_job_registers_on_a_real_background_scheduler_without_piling_up(schedule: list[Job]) -> None:
    scheduler = new_scheduler()
    register(scheduler, schedule, lambda job_id, *, scheduled_at: None)
    registered = {job.id: job for job in scheduler.get_jobs()}
    assert set(registered) == {job.id for job in schedule}
    for job in schedule:
        entry = registered[job.id]
        assert entry.name == job.task_name
        assert entry.coalesce is True
        assert entry.max_instances == 1
        assert entry.misfire_grace_time == job.misfire_grace_s >= 1
        assert job.trigger.get_next_fire_time(None, datetime.now(UTC)) is not None


def test_jobs_also_register_on_a_plain_apscheduler_background_scheduler() -> None:
    scheduler = BackgroundScheduler(timezone=UTC)
    register(scheduler, jobs(load_settings()), lambda job_id, *, scheduled_at: None)
    assert len(scheduler.get_jobs()) == len(jobs(load_settings()))


def test_speedup_divides_every_period_and_turns_the_nightly_cron_into_an_interval() -> None:
    schedule = _by_id(jobs(load_settings(), speedup=60))
    assert period_of(schedule["close-idle-sessions"]) == timedelta(seconds=1)
    assert period_of(schedule["sweep"]) == timedelta(seconds=5)
    assert period_of(schedule["prune-hourly"]) == timedelta(seconds=60)
    assert period_of(schedule["distill-nightly"]) == timedelta(seconds=DAY_S / 60)
    assert period_of(schedule["purge-daily"]) == timedelta(seconds=DAY_S / 60)


def test_speedup_math_is_a_plain_division_and_rejects_non_positive_values() -> None:
    assert scaled_period_s(MINUTE_S, 1) == 60
    assert scaled_period_s(HOUR_S, 60) == 60
    assert scaled_period_s(MINUTE_S, 120) == 0.5
    with pytest.raises(ValueError):
        scaled_period_s(MINUTE_S, 0)


def test_misfire_grace_is_half_the_period_at_least_a_second_and_at_most_an_hour() -> None:
    assert misfire_grace_s(MINUTE_S) == 30
    assert misfire_grace_s(1) == 1
    assert misfire_grace_s(0.25) == 1
    assert misfire_grace_s(DAY_S) == 3600


def test_distill_runs_at_the_configured_time_in_the_configured_zone() -> None:
    settings = SimpleNamespace(distill_at="02:30", distill_timezone="Europe/Berlin")
    distill = _by_id(jobs(settings))["distill-nightly"]
    berlin = ZoneInfo("Europe/Berlin")
    now = datetime(2025, 7, 1, 12, 0, tzinfo=berlin)
    assert distill.trigger.get_next_fire_time(None, now) == datetime(2025, 7, 2, 2, 30, tzinfo=berlin)


def test_distill_defaults_to_three_in_the_morning_utc_when_settings_lack_the_fields() -> None:
    distill = _by_id(jobs(SimpleNamespace()))["distill-nightly"]
    now = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
    assert distill.trigger.get_next_fire_time(None, now) == datetime(2025, 7, 2, 3, 0, tzinfo=UTC)


BAD_DISTILL_SETTINGS = [{"distill_at": "3am"}, {"distill_at": "24:00"}, {"distill_timezone": "Mars/Base"}]


@pytest.mark.parametrize("bad", BAD_DISTILL_SETTINGS)
def test_a_bad_distill_time_or_zone_is_a_settings_error_naming_the_variable(bad: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="MEMORY_DISTILL_"):
        jobs(SimpleNamespace(**bad))


def test_hh_mm_parsing_accepts_one_or_two_digit_hours() -> None:
    assert parse_hh_mm("3:05") == (3, 5)
    assert parse_hh_mm("23:59") == (23, 59)


def test_interval_fire_times_are_the_same_on_every_instance_whenever_it_started() -> None:
    # two instances build their triggers at different moments; the slots they compute must agree
    first, second = every(5.0), every(5.0)
    now = datetime(2025, 7, 1, 12, 0, 3, 250_000, tzinfo=UTC)
    expected = datetime(2025, 7, 1, 12, 0, 5, tzinfo=UTC)
    assert first.get_next_fire_time(None, now) == expected
    assert second.get_next_fire_time(None, now + timedelta(seconds=1)) == expected
    assert isinstance(first, IntervalTrigger)


def test_slots_are_spelled_in_utc_whatever_the_trigger_zone() -> None:
    berlin = datetime(2025, 7, 2, 3, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    assert slot_iso(berlin) == "2025-07-02T01:00:00+00:00"


def test_the_executor_hands_each_fire_its_scheduled_time() -> None:
    fired: list[datetime] = []
    enough = threading.Event()

    def fire(job_id: str, *, scheduled_at: Any) -> None:
        fired.append(scheduled_at)
        if len(fired) >= 2:
            enough.set()

    scheduler = new_scheduler()
    register(scheduler, [Job("tick", every(0.2), tasknames.SWEEP, "A test tick every 200 ms.")], fire)
    scheduler.start()
    try:
        assert enough.wait(5), "the job did not fire twice within 5 s"
    finally:
        scheduler.shutdown(wait=True)
    for scheduled_at in fired:
        assert isinstance(scheduled_at, datetime)
        assert round(scheduled_at.timestamp() * 1000) % 200 == 0, scheduled_at
    # consecutive slots (a fire may be coalesced away on a loaded machine, never duplicated)
    gap_ms = round((fired[1] - fired[0]).total_seconds() * 1000)
    assert gap_ms > 0 and gap_ms % 200 == 0, gap_ms
