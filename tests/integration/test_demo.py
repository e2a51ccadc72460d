"""`make demo` (`python -m bench.demo`) as a person runs it: a subprocess on the test database and Redis, whose
output shows every step of the walk-through, and which leaves no process behind, also when interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.services import REPO, wait_for

pytestmark = pytest.mark.integration


def _env(database_url: str, redis_url: str, queue: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        MEMORY_QUEUE=queue,
        MEMORY_DATA_DIR=str(tmp_path / "data"),
        PYTHONUNBUFFERED="1",
    )
    return env


def _processes_of(queue: str) -> list[str]:
    """Processes still running with this test's queue in their environment (the demo's children inherit it)."""
    left = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.environ().get("MEMORY_QUEUE") == queue:
                left.append(f"{proc.pid}: {' '.join(proc.info['cmdline'] or [])[:120]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return left


def test_the_demo_shows_memories_a_superseded_value_the_context_block_and_a_forgotten_memory(
    database_url: str, redis_url: str, queue_name: str, tenant: str, tmp_path: Path
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.demo", "--tenant", tenant],
        cwd=REPO,
        env=_env(database_url, redis_url, queue_name, tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    flat = " ".join(out.split())  # sentences as they read, whatever the wrapping
    # the memories of the first session
    assert "semantic/fact  project.package_manager = npm" in out
    assert "The user lives in Berlin." in out
    # the update supersedes the old value, which stays as history
    assert "superseded  project.package_manager = npm " in out
    assert "active      project.package_manager = pnpm" in out
    # the context block an agent injects carries the current value
    assert "# What you remember about this user" in out
    assert "- The user's project uses pnpm." in out
    # the forgotten memory is gone from the active ones
    assert "forgot: The user lives in Berlin." in out
    assert "the forgotten one is gone from them its row: status 'deleted', history: add, forget" in flat
    assert "stopped." in out
    assert max(len(line) for line in out.splitlines()) <= 100, "readable in a 100-column terminal"
    assert not _processes_of(queue_name)


def test_an_interrupted_demo_stops_everything_it_started(
    database_url: str, redis_url: str, queue_name: str, tenant: str, tmp_path: Path
) -> None:
    log = tmp_path / "demo.out"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            # paused between steps, so the interrupt lands mid-walk-through however fast the machine is
            [sys.executable, "-m", "bench.demo", "--tenant", tenant, "--pause-s", "60"],
            cwd=REPO,
            env=_env(database_url, redis_url, queue_name, tmp_path),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        # the worker and the API are up once the conversation starts
        wait_for(
            lambda: b"[2/7]" in log.read_bytes() or proc.poll() is not None, timeout_s=120, what="step 2"
        )
        assert proc.poll() is None, log.read_text()
        assert len(_processes_of(queue_name)) >= 2  # the worker and the API (and their children)
        proc.send_signal(signal.SIGINT)  # what Ctrl-C in a terminal sends to the demo
        assert proc.wait(timeout=60) == 130, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "stopping everything this demo started" in log.read_text()
    assert not _processes_of(queue_name)
