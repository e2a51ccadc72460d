"""A test run needs nothing but Python and the clone, and leaves nothing running.

Each test here runs pytest in a subprocess, with `REDIS_URL` unset and its own data folder, on a tiny test
module that starts what real tests start (the session's redis-server, the embedded PostgreSQL, a Celery
worker, the API, a forgotten child process), records their pids, and then fails, is interrupted (SIGTERM),
or is killed outright (SIGKILL). Afterwards none of those processes may be alive.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.services import REPO, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

INNER = """
import json, os, subprocess, sys, time
from pathlib import Path

import psutil
import redis

MODE = os.environ["INNER_MODE"]
RECORD = Path(os.environ["INNER_RECORD"])


def _record(**extra):
    from tests.conftest import _Session

    data = {"redis_url": os.environ["REDIS_URL"], "redis_server": _Session.redis.proc.pid, **extra}
    pidfile = Path(os.environ["MEMORY_TEST_DATA_DIR"]) / "pg" / "postmaster.pid"
    if pidfile.exists():
        data["postmaster"] = int(pidfile.read_text().split()[0])
    RECORD.write_text(json.dumps(data))


def test_everything_started(redis_url, database_url, worker_env, start_worker, api_server):
    worker = start_worker(concurrency=1)
    pool = [c.pid for c in psutil.Process(worker.proc.pid).children(recursive=True)]
    forgotten = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    _record(
        worker=worker.proc.pid, pool=pool, forgotten=forgotten.pid, worker_redis=worker_env["REDIS_URL"]
    )
    if MODE == "fail":
        assert False, "a failing test: the session still stops everything"
    time.sleep(600)  # SIGTERM or SIGKILL comes from outside


def test_a_quick_one(database_url, redis_url):
    redis.Redis.from_url(redis_url).ping()
    _record()


def test_touches_the_default_port():
    try:
        redis.Redis(host="127.0.0.1", port=6379, socket_timeout=1).ping()
    except redis.RedisError:
        pass
    _record()
"""


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _inner(tmp_path: Path, mode: str, test: str) -> tuple[list[str], dict[str, str]]:
    module = tmp_path / "test_inner.py"
    module.write_text(textwrap.dedent(INNER))
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "PYTEST_ADDOPTS")}
    env.update(
        INNER_MODE=mode,
        INNER_RECORD=str(tmp_path / "record.json"),
        MEMORY_TEST_DATA_DIR=str(tmp_path / "data"),
        PYTHONUNBUFFERED="1",
    )
    (tmp_path / "record.json").unlink(missing_ok=True)
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "tests.conftest",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tmp_path),
        "-c",
        os.devnull,
        "--basetemp",
        str(tmp_path / "basetemp"),
        f"{module}::{test}",
    ]
    return args, env


def _run(tmp_path: Path, mode: str, test: str) -> subprocess.CompletedProcess[str]:
    args, env = _inner(tmp_path, mode, test)
    return subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)


def _start(tmp_path: Path, mode: str, test: str) -> subprocess.Popen[str]:
    args, env = _inner(tmp_path, mode, test)
    log = open(tmp_path / f"inner-{mode}.log", "w")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    log.close()
    return proc


def _record(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "record.json").read_text())


def _started_pids(record: dict[str, Any]) -> dict[str, int]:
    pids = {"redis-server": record["redis_server"]}
    for key in ("worker", "forgotten", "postmaster"):
        if key in record:
            pids[key] = record[key]
    pids.update({f"pool child {n}": pid for n, pid in enumerate(record.get("pool", []))})
    return pids


def _assert_own_redis(record: dict[str, Any]) -> None:
    assert record["redis_url"].startswith("redis://127.0.0.1:")
    assert not record["redis_url"].startswith("redis://127.0.0.1:6379/"), record
    assert record.get("worker_redis", record["redis_url"]) == record["redis_url"]


def test_a_failing_test_leaves_nothing_running(tmp_path):
    done = _run(tmp_path, "fail", "test_everything_started")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "a failing test: the session still stops everything" in output
    record = _record(tmp_path)
    _assert_own_redis(record)
    assert "postmaster" in record or os.environ.get("DATABASE_URL"), record
    for what, pid in _started_pids(record).items():
        assert not _alive(pid), f"{what} (pid {pid}) is still running:\n{output}"
    # the child process the test forgot is named in the output, not stopped silently
    assert f"left running by the tests, now stopped: pid {record['forgotten']}" in output


def test_an_interrupted_run_leaves_nothing_running(tmp_path):
    proc = _start(tmp_path, "sigterm", "test_everything_started")
    try:
        wait_for(lambda: (tmp_path / "record.json").exists(), timeout_s=180, what="the inner run's record")
        record = _record(tmp_path)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = (tmp_path / "inner-sigterm.log").read_text()
    assert code == pytest.ExitCode.INTERRUPTED, output
    _assert_own_redis(record)
    for what, pid in _started_pids(record).items():
        assert not _alive(pid), f"{what} (pid {pid}) is still running:\n{output}"


def test_a_killed_run_takes_its_children_along_and_the_next_run_stops_the_database(tmp_path):
    proc = _start(tmp_path, "sigkill", "test_everything_started")
    try:
        wait_for(lambda: (tmp_path / "record.json").exists(), timeout_s=180, what="the inner run's record")
        record = _record(tmp_path)
        proc.kill()  # SIGKILL: no teardown, no atexit
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    pids = _started_pids(record)
    postmaster = pids.pop("postmaster", None)
    pids.pop("forgotten")  # a bare child of a killed process: only the outer session's sweep can stop it
    for what, pid in pids.items():  # the redis-server and the worker die with the process that started them
        wait_for(lambda pid=pid: not _alive(pid), timeout_s=30, what=f"{what} (pid {pid}) to exit")
    psutil.Process(record["forgotten"]).kill()
    if postmaster is None:
        return  # DATABASE_URL is set: there is no embedded server to leave behind
    assert _alive(postmaster), "PostgreSQL detaches from the run; the next run must stop it"

    done = _run(tmp_path, "pass", "test_a_quick_one")
    assert done.returncode == 0, done.stdout + done.stderr
    again = _record(tmp_path)
    assert again["postmaster"] == postmaster  # the next run reused the server left behind ...
    wait_for(lambda: not _alive(postmaster), timeout_s=30, what="the left-behind PostgreSQL to stop")
    assert not _alive(again["redis_server"])  # ... and stopped it with its own redis-server


def test_with_redis_url_unset_the_run_never_uses_port_6379(tmp_path):
    done = _run(tmp_path, "pass", "test_touches_the_default_port")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "REDIS_URL is unset, yet the run tried Redis on port 6379: 127.0.0.1:6379" in output
    assert not _alive(_record(tmp_path)["redis_server"])
