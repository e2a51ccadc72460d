"""Worker processes for a measurement, and what they (and the servers) cost: RSS and CPU time.

Contract:
- `BenchWorker` is a real `celery -A worker.app worker` (the tests' `WorkerProcess`) whose processes are
  sampled for RSS and CPU while it runs;
- `ProcessSampler` samples a process tree on a background thread; `postgres_cpu_s` / `redis_cpu_s` read the
  servers' CPU seconds so far (None when they cannot be read).
Nothing here asserts timings: benchmarks measure and report.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import redis

from bench.lib.services import redis_client


def vm_hwm_bytes(pid: int) -> int | None:
    """The kernel's peak resident set size of a live process (`VmHWM`), or None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system)


@dataclass
class ProcStats:
    pid: int
    role: str
    peak_rss: int = 0
    cpu_s: float = 0.0  # at the last sample (a process that exits keeps its last reading)
    cpu_s_start: float = 0.0  # at the first sample: start-up work is not the workload's
    vm_hwm: int | None = None


def cpu_since_start(stats: dict[int, ProcStats], role: str) -> float:
    """CPU seconds the processes of `role` used between their first and last sample."""
    return sum(s.cpu_s - s.cpu_s_start for s in stats.values() if s.role == role)


class ProcessSampler:
    """Samples RSS and CPU time of a root process and all its descendants on a background thread."""

    def __init__(
        self, root_pid: int, *, interval_s: float = 0.25, main_role: str = "main", child_role: str = "child"
    ):
        self.root_pid = root_pid
        self.interval_s = interval_s
        self.roles = (main_role, child_role)
        self.stats: dict[int, ProcStats] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-sampler", daemon=True)

    def start(self) -> ProcessSampler:
        self.sample()
        self._thread.start()
        return self

    def _procs(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.root_pid)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    def sample(self) -> None:
        for proc in self._procs():
            try:
                rss = int(proc.memory_info().rss)
                cpu = _cpu_s(proc)
            except psutil.Error:
                continue
            role = self.roles[0] if proc.pid == self.root_pid else self.roles[1]
            st = self.stats.setdefault(proc.pid, ProcStats(proc.pid, role, cpu_s_start=cpu))
            st.peak_rss = max(st.peak_rss, rss)
            st.cpu_s = cpu

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> dict[int, ProcStats]:
        """Stop sampling; take a last sample and the kernel's VmHWM of every process still alive."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.sample()
        for st in self.stats.values():
            st.vm_hwm = vm_hwm_bytes(st.pid)
        return self.stats

    def cpu_total(self, role: str | None = None) -> float:
        return sum(s.cpu_s for s in self.stats.values() if role is None or s.role == role)


@dataclass
class BenchWorker:
    """A real Celery worker on `queue`; `ready_at` is the monotonic time its ' ready.' line was seen."""

    env: dict[str, str]
    queue: str
    log_path: Path
    concurrency: int
    extra_args: list[str] = field(default_factory=list)  # appended to the celery command line
    ingest: bool = True  # an ingest consumer beside it, as `memctl up` runs them (not sampled)
    ready_at: float = 0.0
    sampler: ProcessSampler | None = None
    _proc: Any = field(default=None, repr=False)

    def start(self) -> BenchWorker:
        from tests.services import WorkerProcess

        self._proc = WorkerProcess(
            env=self.env,
            queue=self.queue,
            log_path=self.log_path,
            concurrency=self.concurrency,
            extra_args=self.extra_args,
            ingest=self.ingest,
        )
        self._proc.start(wait=True)  # polls the log every 0.1 s: `ready_at` is late by at most that
        self.ready_at = time.monotonic()
        self.sampler = ProcessSampler(self.pid).start()
        return self

    @property
    def pid(self) -> int:
        return int(self._proc.proc.pid)

    def alive(self) -> bool:
        return bool(self._proc and self._proc.proc and self._proc.proc.poll() is None)

    def log_tail(self, n: int = 30) -> str:
        return str(self._proc.log_tail(n)) if self._proc else ""

    def stop(self) -> dict[int, ProcStats]:
        stats = self.sampler.stop() if self.sampler else {}
        if self._proc is not None:
            self._proc.stop()
        return stats


@dataclass
class BenchConsumers:
    """`n` real ingest consumers (`python -m worker.ingest_consumer`, the tests' `ConsumerProcess`), sampled
    for RSS and CPU while they run; `ready_at` is the monotonic time the last one said it started."""

    env: dict[str, str]
    log_dir: Path
    n: int
    ready_at: float = 0.0
    samplers: list[ProcessSampler] = field(default_factory=list)
    _procs: list[Any] = field(default_factory=list, repr=False)

    def start(self) -> BenchConsumers:
        from tests.services import ConsumerProcess

        self._procs = [
            ConsumerProcess(env=self.env, log_path=self.log_dir / f"consumer-{i}.log").start(wait=False)
            for i in range(self.n)
        ]
        for proc in self._procs:  # started together, then waited for: their imports overlap
            _wait_ready(proc)
        self.ready_at = time.monotonic()
        self.samplers = [
            ProcessSampler(p.proc.pid, main_role="consumer", child_role="consumer").start()
            for p in self._procs
        ]
        return self

    def alive(self) -> bool:
        return all(p.alive() for p in self._procs)

    def log_tail(self, n: int = 30) -> str:
        return "\n".join(str(p.log_tail(n)) for p in self._procs)

    def stop(self) -> dict[int, ProcStats]:
        stats: dict[int, ProcStats] = {}
        for sampler in self.samplers:
            stats.update(sampler.stop())
        for p in self._procs:
            p.stop()
        return stats


def _wait_ready(proc: Any) -> None:
    from tests.services import wait_for

    wait_for(proc._ready, timeout_s=60, what="an ingest consumer to start")


def postgres_cpu_s(postmaster_pid: int | None) -> float | None:
    """CPU seconds used so far by the embedded server's backends (all children of the postmaster)."""
    if postmaster_pid is None:
        return None
    try:
        root = psutil.Process(postmaster_pid)
        total = _cpu_s(root)
        for child in root.children(recursive=True):
            try:
                total += _cpu_s(child)
            except psutil.Error:
                continue
        return total
    except psutil.Error:
        return None


def redis_cpu_s(url: str) -> float | None:
    """CPU seconds the Redis server reports having used (the machine's Redis is shared: a rough figure)."""
    try:
        info = redis_client(url).info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
    except (redis.RedisError, KeyError, ValueError):
        return None
