"""The scheduler: jobs as data (`jobs`), leader election over Redis (`leader`), the APScheduler shell
(`runner`) and its process entry point (`python -m schedules.run`). Jobs only enqueue Celery tasks by name."""

from schedules.jobs import Job, jobs
from schedules.leader import LeaderLock, leader_key
from schedules.runner import SchedulerRunner, SlotEnqueuer

__all__ = ["Job", "LeaderLock", "SchedulerRunner", "SlotEnqueuer", "jobs", "leader_key"]
