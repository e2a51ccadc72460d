"""The scheduler against real Redis: the leader lock, the once-per-slot enqueue, and two real
`python -m schedules.run` processes (accelerated 60x, no worker) whose queue we read directly."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from schedules.jobs import Job, every
from schedules.leader import LeaderLock, leader_key, pid_of
from schedules.runner import FIRED_KEY_PREFIX, SlotEnqueuer
from shared import tasknames
from shared.embedded import redis_py_url
from shared.publisher import TaskPublisher
from tests.services import REPO, wait_for

pytestmark = pytest.mark.integration

SPEEDUP = 60  # close-idle-sessions every 1 s, sweep every 5 s, prune every 60 s
LEADER_TTL_S = 3.0
HANDOVER_S = LEADER_TTL_S + LEADER_TTL_S / 3  # the key expires, then a follower's next election round


@dataclass(frozen=True)
class Enqueued:
    task: str
    args: list[str]
    origin_pid: int

    @property
    def slot(self) -> datetime:
        return datetime.fromisoformat(self.args[-1])


def _read_queue(client: redis.Redis, queue: str) -> list[Enqueued]:
    """Every message on the list, oldest first, decoded from the envelope Celery wrote (origin: gen<pid>@host)."""
    found = []
    for raw in reversed(client.lrange(queue, 0, -1)):
        envelope = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(envelope["body"]))
        origin = envelope["headers"]["origin"]
        found.append(Enqueued(envelope["headers"]["task"], args, int(origin.split("@")[0].removeprefix("gen"))))
    return found


def _assert_each_slot_once(messages: list[Enqueued]) -> None:
    counts = Counter((m.task, m.args[-1]) for m in messages)
    duplicates = {slot: n for slot, n in counts.items() if n > 1}
    assert not duplicates, f"slots enqueued more than once: {duplicates}"


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(redis_py_url(redis_url))
    yield r
    r.close()


@pytest.fixture
def cleanup(client: redis.Redis, queue_name: str) -> Iterator[None]:
    yield
    client.delete(queue_name, leader_key(queue_name), f"{leader_key(queue_name)}:test")
    for key in client.scan_iter(f"{FIRED_KEY_PREFIX}:{queue_name}:*"):
        client.delete(key)


def test_the_leader_lock_is_exclusive_and_only_its_holder_can_renew_or_release_it(
    client: redis.Redis, queue_name: str, cleanup: None
) -> None:
    key = f"{leader_key(queue_name)}:test"
    first = LeaderLock(client, key=key, ttl_s=5)
    second = LeaderLock(client, key=key, ttl_s=5)
    assert first.tick() and first.is_leader
    assert not second.tick() and not second.is_leader
    assert not second.renew()
    assert not second.release()
    assert first.holder() == first.instance_id
    assert pid_of(first.instance_id) == os.getpid()
    assert 0 < client.pttl(key) <= 5000
    assert first.tick(), "the holder renews"
    assert first.release()
    assert client.get(key) is None
    assert second.tick() and second.holder() == second.instance_id


def test_a_leader_that_stops_renewing_is_replaced_once_its_ttl_runs_out(
    client: redis.Redis, queue_name: str, cleanup: None
) -> None:
    key = f"{leader_key(queue_name)}:test"
    stale = LeaderLock(client, key=key, ttl_s=0.5)
    follower = LeaderLock(client, key=key, ttl_s=0.5)
    assert stale.tick()
    assert not follower.tick()
    time.sleep(0.6)
    assert not stale.is_leader, "the local view lapses with the ttl, even without asking Redis"
    assert follower.tick()
    assert not stale.tick(), "the old leader cannot renew a key that is no longer its own"


def test_a_slot_is_enqueued_once_even_when_two_instances_fire_it_across_a_handover(
    redis_url: str, client: redis.Redis, queue_name: str, cleanup: None
) -> None:
    publisher = TaskPublisher(redis_url, queue=queue_name, timeout_s=2)
    key = leader_key(queue_name)
    old, new = LeaderLock(client, key=key, ttl_s=5), LeaderLock(client, key=key, ttl_s=5)
    old_enqueuer = SlotEnqueuer(publisher, leader_key=key, instance_id=old.instance_id)
    new_enqueuer = SlotEnqueuer(publisher, leader_key=key, instance_id=new.instance_id)
    job = Job("sweep", every(300), tasknames.SWEEP, "Sweep stuck events every five minutes.")
    slot = datetime(2025, 7, 1, 12, 5, tzinfo=UTC)

    assert old.tick()
    assert new_enqueuer.enqueue(job, slot) == "skipped_not_leader"
    assert old_enqueuer.enqueue(job, slot) == "enqueued"
    assert old_enqueuer.enqueue(job, slot) == "skipped_duplicate"
    old.release()
    assert new.tick()
    assert old_enqueuer.enqueue(job, slot + timedelta(minutes=5)) == "skipped_not_leader"
    assert new_enqueuer.enqueue(job, slot) == "skipped_duplicate", "the new leader re-fires the same slot"
    assert new_enqueuer.enqueue(job, slot + timedelta(minutes=5)) == "enqueued"

    messages = _read_queue(client, queue_name)
    assert [(m.task, m.args) for m in messages] == [
        (tasknames.SWEEP, ["2025-07-01T12:05:00+00:00"]),
        (tasknames.SWEEP, ["2025-07-01T12:10:00+00:00"]),
    ]
    assert client.pttl(new_enqueuer.slot_key(job.id, slot)) > 0, "slot keys expire on their own"
    publisher.close()


def _start_scheduler(env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "schedules.run"],
            env=env,
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _log_events(path: Path, event: str) -> list[dict[str, object]]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    return [r for r in records if r.get("event") == event]


def test_two_scheduler_processes_enqueue_each_slot_once_and_a_follower_takes_over_a_killed_leader(
    redis_url: str, client: redis.Redis, queue_name: str, tmp_path: Path, cleanup: None
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    env.update(
        REDIS_URL=redis_url,
        MEMORY_QUEUE=queue_name,
        MEMORY_DATA_DIR=str(tmp_path / "data"),
        MEMORY_LOG_FORMAT="json",
        MEMORY_SCHEDULE_SPEEDUP=str(SPEEDUP),
        MEMORY_SCHEDULER_LEADER_TTL_S=str(LEADER_TTL_S),
        PYTHONUNBUFFERED="1",
    )
    logs = [tmp_path / "scheduler-0.log", tmp_path / "scheduler-1.log"]
    procs = [_start_scheduler(env, path) for path in logs]
    key = leader_key(queue_name)
    try:
        holder = wait_for(lambda: client.get(key), timeout_s=20, what="a scheduler to win the leader key")
        by_pid = {proc.pid: i for i, proc in enumerate(procs)}
        leader_index = by_pid[pid_of(holder.decode())]
        leader, follower = procs[leader_index], procs[1 - leader_index]

        # phase 1: both running, one leading, for ~20 fires of the every-second job
        wait_for(
            lambda: (
                sum(m.task == tasknames.CLOSE_IDLE_SESSIONS for m in _read_queue(client, queue_name)) >= 20
            ),
            timeout_s=30,
            what="20 close-idle fires",
        )
        before_kill = _read_queue(client, queue_name)
        _assert_each_slot_once(before_kill)
        assert {m.origin_pid for m in before_kill} == {leader.pid}, "only the leader enqueues"
        assert sum(m.task == tasknames.SWEEP for m in before_kill) >= 3
        for message in before_kill:
            assert message.slot.tzinfo is not None and message.slot.microsecond == 0
        assert all(p.poll() is None for p in procs)
        enqueued_lines = _log_events(logs[leader_index], "schedule_fire")
        assert sum(r["outcome"] == "enqueued" for r in enqueued_lines) >= len(before_kill)

        # phase 2: the leader dies without releasing; the follower takes over within the ttl
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
        killed_at = time.time()
        wait_for(
            lambda: client.get(key) not in (None, holder),
            timeout_s=HANDOVER_S + 3,
            what="the follower to take the leader key",
        )
        new_holder = client.get(key)
        assert isinstance(new_holder, bytes) and pid_of(new_holder.decode()) == follower.pid

        def survivor_fires() -> list[Enqueued]:
            return [
                m
                for m in _read_queue(client, queue_name)
                if m.origin_pid == follower.pid and m.task == tasknames.CLOSE_IDLE_SESSIONS
            ]

        first = wait_for(survivor_fires, timeout_s=HANDOVER_S + 3, what="the new leader to fire")[0]
        assert first.slot.timestamp() - killed_at <= HANDOVER_S + 2
        wait_for(lambda: len(survivor_fires()) >= 4, timeout_s=10, what="the new leader to keep firing")

        everything = _read_queue(client, queue_name)
        _assert_each_slot_once(everything)
        assert {m.origin_pid for m in everything} == {leader.pid, follower.pid}

        # a clean stop releases the key at once instead of leaving it to expire
        follower.send_signal(signal.SIGTERM)
        assert follower.wait(timeout=15) == 0
        assert client.get(key) is None
        assert _log_events(logs[1 - leader_index], "scheduler_stopped")[0]["released_leadership"] is True
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
