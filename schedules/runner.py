"""The scheduler shell: APScheduler runs the jobs of `schedules.jobs`, only on the elected leader, and each
fire enqueues its Celery task once per (job, scheduled fire time), across every instance.

Contract:
- Every instance runs a `BackgroundScheduler` that starts paused; it is resumed when this instance wins the
  leader lock (`schedules.leader`) and paused when it loses it. On resume, fires missed while following are
  coalesced into one, and run only if still within the job's misfire grace time.
- A fire checks, in one Redis script, that this instance still holds the leader key and that the slot key
  `memory:scheduler:fired:{queue}:{job id}:{fire time}` does not exist yet; then sends the task with Celery's
  `send_task` and sets the slot key (with a ttl). A slot is never sent by two instances (only the leader
  sends) and never lost between the check and the send; a crash after the send and before the mark may let
  the next leader send it again, which the tasks absorb: each is idempotent per slot. The task receives
  `(*job.args, scheduled_at_iso)` (UTC ISO 8601) and a task id derived from the slot.
- Every fire logs one structured line `schedule_fire` with job, task, scheduled_at and outcome: `enqueued`,
  `skipped_duplicate`, `skipped_not_leader`, `missed` (later than the grace time) or `failed` (Redis error).
- Jobs never pile up: `coalesce=True`, `max_instances=1`, a misfire grace time per job.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import traceback
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

import redis
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.executors.base import BaseExecutor
from apscheduler.job import Job as SchedulerJob
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler

from schedules.jobs import Job
from schedules.leader import LeaderLock, leader_key
from shared.logging import get_logger
from shared.publisher import TaskPublisher

log = get_logger("schedules")

Outcome = Literal["enqueued", "skipped_duplicate", "skipped_not_leader", "missed", "failed"]

FIRED_KEY_PREFIX = "memory:scheduler:fired"

# The slot key must outlive every moment at which any instance could still fire that slot (its misfire
# grace), plus room for clock skew between hosts.
_SLOT_KEY_MARGIN_S = 60

# Whether this instance may send the slot's task: it holds the leader key and nobody sent the slot yet.
_MAY_SEND = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'skipped_not_leader' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'skipped_duplicate' end
return 'send'
"""


def slot_iso(scheduled_at: datetime) -> str:
    """The fire time as every instance spells it: UTC, ISO 8601."""
    return scheduled_at.astimezone(UTC).isoformat()


def slot_ttl_ms(job: Job) -> int:
    return (2 * job.misfire_grace_s + _SLOT_KEY_MARGIN_S) * 1000


class SlotEnqueuer:
    """Enqueues a job's task for one fire time, only while holding the leader key, once per slot.

    The check (leader, slot not yet sent), the send (Celery's own `send_task`) and the mark of the slot are
    three steps: a crash between the send and the mark lets the next leader send the slot again, never lose
    it, and every scheduled task is idempotent per slot (the slot is its last argument)."""

    def __init__(self, publisher: TaskPublisher, *, leader_key: str, instance_id: str):
        self.queue = publisher.queue
        self.leader_key = leader_key
        self.instance_id = instance_id
        self._publisher = publisher
        self._script = publisher.redis.register_script(_MAY_SEND)

    def slot_key(self, job_id: str, scheduled_at: datetime) -> str:
        return f"{FIRED_KEY_PREFIX}:{self.queue}:{job_id}:{slot_iso(scheduled_at)}"

    def enqueue(self, job: Job, scheduled_at: datetime) -> Outcome:
        slot = slot_iso(scheduled_at)
        # the same slot always gets the same task id: a duplicate, if one ever slipped through, is visible
        task_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.queue}/{job.id}/{slot}"))
        slot_key = self.slot_key(job.id, scheduled_at)
        result = self._script(keys=[self.leader_key, slot_key], args=[self.instance_id])
        verdict = result.decode() if isinstance(result, bytes) else str(result)
        if verdict != "send":
            return cast(Outcome, verdict)  # the script returns one of the Outcome strings
        self._publisher.publish(job.task_name, (*job.args, slot), task_id=task_id)
        self._publisher.redis.set(slot_key, self.instance_id, px=slot_ttl_ms(job))
        return "enqueued"


class FireTimeExecutor(BaseExecutor):
    """APScheduler's thread-pool executor, except that it passes `scheduled_at=run_time` to the job.

    APScheduler 3 does not tell a job which fire time it is running for, and the fire time is what makes
    a fire idempotent across instances. Misfire handling and events are those of `apscheduler.executors`.
    """

    def __init__(self, max_workers: int = 4):
        super().__init__()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers, thread_name_prefix="schedule-fire")

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait)

    def _do_submit_job(self, job: SchedulerJob, run_times: list[datetime]) -> None:
        future = self._pool.submit(_run_job, job, run_times)
        future.add_done_callback(lambda f: self._done(job.id, f))

    def _done(self, job_id: str, future: concurrent.futures.Future[list[JobExecutionEvent]]) -> None:
        exc = future.exception()
        if exc is not None:
            self._run_job_error(job_id, exc, exc.__traceback__)
        else:
            self._run_job_success(job_id, future.result())


def _run_job(job: SchedulerJob, run_times: list[datetime]) -> list[JobExecutionEvent]:
    events: list[JobExecutionEvent] = []
    store = job._jobstore_alias  # private, but it is what APScheduler's own pool executors pass along
    for run_time in run_times:
        late = datetime.now(UTC) - run_time
        if job.misfire_grace_time is not None and late > timedelta(seconds=job.misfire_grace_time):
            log.warning(
                "schedule_fire",
                job=job.id,
                task=job.name,
                scheduled_at=slot_iso(run_time),
                outcome="missed",
                late_s=round(late.total_seconds(), 3),
            )
            events.append(JobExecutionEvent(EVENT_JOB_MISSED, job.id, store, run_time))
            continue
        try:
            retval = job.func(*job.args, **{**job.kwargs, "scheduled_at": run_time})
        except Exception as exc:
            events.append(
                JobExecutionEvent(
                    EVENT_JOB_ERROR, job.id, store, run_time, exception=exc, traceback=traceback.format_exc()
                )
            )
            log.exception("schedule_fire_error", job=job.id, scheduled_at=slot_iso(run_time))
        else:
            events.append(JobExecutionEvent(EVENT_JOB_EXECUTED, job.id, store, run_time, retval=retval))
    return events


def new_scheduler(*, max_workers: int = 4) -> BackgroundScheduler:
    return BackgroundScheduler(executors={"default": FireTimeExecutor(max_workers)}, timezone=UTC)


def register(scheduler: BaseScheduler, jobs: Sequence[Job], fire: Callable[..., Any]) -> None:
    """Add every job; `FireTimeExecutor` then calls `fire(job_id, scheduled_at=...)` on each fire."""
    for job in jobs:
        # scheduled_at=None is a placeholder that the executor fills with the actual fire time
        scheduler.add_job(
            fire,
            trigger=job.trigger,
            args=(job.id,),
            kwargs={"scheduled_at": None},
            id=job.id,
            name=job.task_name,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=job.misfire_grace_s,
            replace_existing=True,
        )


class SchedulerRunner:
    """One scheduler instance: elects a leader every `ttl/3`, runs the jobs only while leading."""

    def __init__(
        self,
        publisher: TaskPublisher,
        jobs: Sequence[Job],
        *,
        leader_ttl_s: float,
        lock: LeaderLock | None = None,
    ):
        self.lock = lock or LeaderLock(publisher.redis, key=leader_key(publisher.queue), ttl_s=leader_ttl_s)
        self.instance_id = self.lock.instance_id
        self.queue = publisher.queue
        self.jobs = {job.id: job for job in jobs}
        if len(self.jobs) != len(jobs):
            raise ValueError("job ids must be unique")
        self.enqueuer = SlotEnqueuer(publisher, leader_key=self.lock.key, instance_id=self.instance_id)
        self.scheduler = new_scheduler()
        register(self.scheduler, jobs, self.fire)
        self.leading = False

    def fire(self, job_id: str, *, scheduled_at: datetime) -> Outcome:
        job = self.jobs[job_id]
        fields: dict[str, Any] = {
            "job": job.id,
            "task": job.task_name,
            "scheduled_at": slot_iso(scheduled_at),
            "instance_id": self.instance_id,
        }
        try:
            outcome = self.enqueuer.enqueue(job, scheduled_at)
        except redis.RedisError as exc:
            # the next slot runs as usual; every task is periodic and catches up on its own
            log.error("schedule_fire", **fields, outcome="failed", error=str(exc))
            return "failed"
        late_ms = round((datetime.now(UTC) - scheduled_at).total_seconds() * 1000, 1)
        log.info("schedule_fire", **fields, outcome=outcome, late_ms=late_ms)
        return outcome

    def elect(self) -> bool:
        """One election round; pauses or resumes the scheduler when leadership changed."""
        try:
            leading = self.lock.tick()
        except redis.RedisError as exc:
            leading = self.lock.is_leader
            log.warning("scheduler_redis_error", instance_id=self.instance_id, error=str(exc), leader=leading)
        if leading != self.leading:
            if leading:
                self.scheduler.resume()
            else:
                self.scheduler.pause()
            self.leading = leading
            log.info(
                "scheduler_leadership",
                instance_id=self.instance_id,
                pid=os.getpid(),
                leader=leading,
                key=self.lock.key,
            )
        return leading

    def run(self, stop: threading.Event) -> None:
        """Run until `stop` is set, then stop firing and release the leader key."""
        self.scheduler.start(paused=True)
        log.info(
            "scheduler_started",
            instance_id=self.instance_id,
            pid=os.getpid(),
            queue=self.queue,
            leader_key=self.lock.key,
            leader_ttl_s=self.lock.ttl_s,
            jobs=[{"id": j.id, "task": j.task_name, "trigger": str(j.trigger)} for j in self.jobs.values()],
        )
        try:
            while True:
                self.elect()
                if stop.wait(self.lock.renew_interval_s):
                    break
        finally:
            self.scheduler.shutdown(wait=True)
            released = False
            try:
                released = self.lock.release()
            except redis.RedisError as exc:
                log.warning("scheduler_release_failed", instance_id=self.instance_id, error=str(exc))
            log.info("scheduler_stopped", instance_id=self.instance_id, released_leadership=released)
