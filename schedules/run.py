"""`python -m schedules.run`: the scheduler process (`memctl up` starts it). Runs until SIGTERM / SIGINT,
then releases leadership and exits 0; exits 2 on invalid configuration.

Any number of these may run; one leads (see `schedules.leader`), the others wait to take over.

Test-only environment variables, read here and nowhere else (production leaves them unset):
- `MEMORY_SCHEDULE_SPEEDUP` (float > 0, default 1): divides every job period; cron jobs become interval
  jobs of period / speedup, so an accelerated test sees every job fire.
- `MEMORY_SCHEDULER_LEADER_TTL_S` (float > 0, default 15): the leader lock ttl; a dead leader is replaced
  within ttl + ttl/3.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import FrameType

from schedules.jobs import jobs
from schedules.leader import DEFAULT_TTL_S
from schedules.runner import SchedulerRunner
from shared.db.engine import resolve_redis_url
from shared.errors import SettingsError
from shared.logging import configure_logging, get_logger
from shared.publisher import TaskPublisher
from shared.settings import get_settings

SPEEDUP_ENV = "MEMORY_SCHEDULE_SPEEDUP"
LEADER_TTL_ENV = "MEMORY_SCHEDULER_LEADER_TTL_S"

# Redis round trips of the scheduler are rare and not in anyone's hot path: wait for a slow server.
REDIS_TIMEOUT_S = 2.0


def positive_float_env(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected a number") from None
    if not value > 0:
        raise SettingsError(f"{name}={raw!r}: must be > 0")
    return value


def main() -> int:
    log = get_logger("schedules")
    try:
        settings = get_settings()
        configure_logging(level=settings.log_level, fmt=settings.log_format)
        # one `schedule_fire` line per fire is ours; APScheduler's own INFO chatter would double it
        logging.getLogger("apscheduler").setLevel(logging.WARNING)
        speedup = positive_float_env(SPEEDUP_ENV, 1.0)
        leader_ttl_s = positive_float_env(LEADER_TTL_ENV, DEFAULT_TTL_S)
        schedule = jobs(settings, speedup=speedup)
    except SettingsError as exc:
        configure_logging()
        log.error("scheduler_config_invalid", error=str(exc))
        return 2

    stop = threading.Event()

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        stop.set()  # no logging here: a signal handler may interrupt a log call holding the handler's lock

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    publisher = TaskPublisher(resolve_redis_url(settings), queue=settings.queue, timeout_s=REDIS_TIMEOUT_S)
    if speedup != 1:
        log.warning("scheduler_speedup", speedup=speedup, note="test-only: every period is divided")
    try:
        SchedulerRunner(publisher, schedule, leader_ttl_s=leader_ttl_s).run(stop)
    finally:
        publisher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
