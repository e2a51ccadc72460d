"""`memctl up` (what `make run` runs) owns the embedded servers of its data folder: an embedded redis-server
already running there (left by a killed run, or started by a CLI command) is announced, used and stopped
with the stack, never silently reused and left behind; a second `memctl up` on the same folder is refused."""

from __future__ import annotations

import os

import psutil
import pytest

from memctl.stack import start_services, stop_stack
from shared.embedded import start_redis
from shared.errors import EmbeddedStackError
from shared.settings import load_settings
from tests.services import wait_for

pytestmark = pytest.mark.integration


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_an_embedded_redis_server_left_running_is_announced_used_and_stopped_with_the_stack(tmp_path, capsys):
    data_dir = tmp_path / "memdata"
    # REDIS_URL=None overrides the test session's own REDIS_URL: the stack must start the embedded one
    settings = load_settings(
        data_dir=data_dir, redis_url=None, database_url="postgresql://nobody@127.0.0.1:1/unused"
    )
    leftover = start_redis(data_dir)  # what a killed `make run` or a `memctl emit` leaves behind
    assert leftover.started_here and leftover.pid is not None
    try:
        stack = start_services(settings)
        try:
            assert stack.redis is not None and stack.redis.pid == leftover.pid
            said = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
            assert "already running" in said and f"pid {leftover.pid}" in said, said
            assert "stopping it with the stack" in said
            # a second `memctl up` on the same data folder would share, then stop, this one's servers
            with pytest.raises(EmbeddedStackError, match=rf"another `memctl up` \(pid {os.getpid()}\)"):
                start_services(settings)
        finally:
            stop_stack(stack)
        wait_for(lambda: not _alive(leftover.pid), timeout_s=15, what="the adopted redis-server to stop")

        # stopped, the folder is free again; a server this stack starts itself is stopped with it as before
        stack = start_services(settings)
        try:
            assert stack.redis is not None and stack.redis.started_here and stack.redis.pid is not None
            started = stack.redis.pid
        finally:
            stop_stack(stack)
        wait_for(lambda: not _alive(started), timeout_s=15, what="the stack's redis-server to stop")
    finally:
        if _alive(leftover.pid):
            leftover.stop()
