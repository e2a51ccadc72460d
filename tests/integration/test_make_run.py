"""`make run` with nothing configured (no DATABASE_URL, no REDIS_URL) brings up the embedded stack and the API
answers /healthz with 200; SIGTERM stops everything, and a second start reuses the data."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import psutil
import pytest

from shared.settings import default_embedder
from tests.services import REPO, free_port, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _start(env: dict[str, str], log) -> subprocess.Popen[bytes]:  # type: ignore[no-untyped-def]
    return subprocess.Popen(
        ["make", "run"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _stop(proc: subprocess.Popen[bytes]) -> int:
    os.killpg(proc.pid, signal.SIGTERM)
    return proc.wait(timeout=60)


def _servers_for(data_dir: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if data_dir in cmd and ("postgres" in cmd or "redis-server" in cmd):
            found.append(p)
    return found


def test_make_run_on_an_unconfigured_machine_reaches_healthz_and_stops_cleanly(tmp_path):
    data_dir = str(tmp_path / "memdata")
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "OPENAI_API_KEY") and not k.startswith("MEMORY_")
    }
    env.update(MEMORY_DATA_DIR=data_dir, MEMORY_API_PORT=str(port), MEMORY_LOG_FORMAT="json")
    log_path = tmp_path / "run.log"
    with open(log_path, "ab") as log:
        for attempt in range(2):  # the second start reuses the data folder
            proc = _start(env, log)
            try:
                wait_for(
                    lambda p=proc: p.poll() is None and _healthy(f"http://127.0.0.1:{port}/healthz"),
                    timeout_s=180,
                    interval_s=0.5,
                    what=f"healthz (start {attempt + 1})",
                )
            except AssertionError:
                _stop(proc)
                raise AssertionError(log_path.read_text(errors="replace")[-4000:]) from None
            if attempt == 0:
                _consumer_metrics_reach_the_api(data_dir, port)
                # what ships: `auto` picks onnx-minilm where its extra is installed (`make install` does)
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
                assert health["embedder"] == default_embedder() == "onnx-minilm", health
            assert _stop(proc) in (0, 2, -signal.SIGTERM, 143)
            wait_for(lambda: not _servers_for(data_dir), timeout_s=30, what="embedded servers to stop")
    assert "stopped." in log_path.read_text(errors="replace")


def _consumer_metrics_reach_the_api(data_dir: str, port: int) -> None:
    """An event through the embedded broker is stored by the ingest consumer `make run` started, and the
    consumer's counter shows in /metrics."""
    from shared.client import MemoryClient
    from shared.embedded import _redis_socket_path

    socket = _redis_socket_path(Path(data_dir).resolve() / "redis")
    client = MemoryClient(
        "t-run",
        broker_url=f"redis+socket://{socket}",
        spool_path=Path(data_dir) / "s.jsonl",
        flush_at_exit=False,
    )
    client.emit(user_id="u", session_id="s", content="hello from make run")
    client.close()

    def counted() -> bool:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        return 'memory_ingest_events_total{outcome="inserted"} 1.0' in text

    wait_for(counted, timeout_s=60, interval_s=1, what="the ingest consumer's counter in /metrics")
