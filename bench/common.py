"""Helpers shared by the benchmarks: services, worker processes, process sampling, statistics, machine facts.

Contract:
- `services()` yields a migrated PostgreSQL (`DATABASE_URL` when set, else a fresh embedded PostgreSQL in a
  temp folder, stopped and deleted on exit) and a reachable Redis (`REDIS_URL`, else 127.0.0.1:6379);
- every benchmark run uses its own queue and tenant (`unique_name`), so it never meets other users of the
  machine's Redis, and `drop_queue` removes what it left there;
- `BenchWorker` is a real `celery -A worker.app worker` (the tests' `WorkerProcess`) whose processes are
  sampled for RSS and CPU while it runs;
- `progress()` reports what a benchmark is doing; `bench.run` routes it to its progress bar.
Nothing here asserts timings: benchmarks measure and report.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import redis

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "bench" / "results"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"

# --- progress -------------------------------------------------------------------------------------------

ProgressSink = Callable[[str, float | None, float | None], None]
_sink: ProgressSink | None = None


def set_progress_sink(sink: ProgressSink | None) -> None:
    global _sink
    _sink = sink


def progress(description: str, completed: float | None = None, total: float | None = None) -> None:
    """Tell the runner what is happening now (and, optionally, how far along it is)."""
    if _sink is not None:
        _sink(description, completed, total)
    else:
        print(f"[bench] {description}", file=sys.stderr, flush=True)


# --- services -------------------------------------------------------------------------------------------


@dataclass
class Services:
    database_url: str
    redis_url: str
    tmp: Path
    postmaster_pid: int | None  # the embedded server's, to account its CPU; None for DATABASE_URL
    embedded: bool


@contextmanager
def services() -> Iterator[Services]:
    from shared.db.engine import _engines, sqlalchemy_url
    from shared.db.migrate import migrate
    from shared.embedded import redis_py_url, start_postgres

    tmp = Path(tempfile.mkdtemp(prefix="membench-"))
    pg = None
    try:
        redis_url = os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL
        redis.Redis.from_url(redis_py_url(redis_url), socket_timeout=2).ping()  # fail before PG starts
        if os.environ.get("DATABASE_URL"):
            database_url = sqlalchemy_url(os.environ["DATABASE_URL"])
        else:
            progress("starting an embedded PostgreSQL")
            pg = start_postgres(tmp)
            database_url = pg.url
        migrate(database_url)
        pid = pg.server.get_pid() if pg is not None else None  # type: ignore[attr-defined]
        yield Services(database_url, redis_url, tmp, pid, embedded=pg is not None)
    finally:
        for engine in list(_engines.values()):
            engine.dispose()
        if pg is not None:
            pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def redis_client(url: str) -> redis.Redis:
    from shared.embedded import redis_py_url

    return redis.Redis.from_url(redis_py_url(url), socket_timeout=10)


def drop_queue(redis_url: str, queue: str, *, tenant: str | None = None) -> None:
    """Delete a benchmark queue, kombu's binding keys for it and the tenant's debounce timers (keys of other
    queues and tenants on the server are left alone)."""
    r = redis_client(redis_url)
    r.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    if tenant:
        keys = list(r.scan_iter(match=f"memory:debounce:{tenant}:*", count=1000))
        for start in range(0, len(keys), 500):
            r.delete(*keys[start : start + 500])


def worker_env(svc: Services, queue: str, **extra: str) -> dict[str, str]:
    # the developer's MEMORY_* / OPENAI_* settings must not leak into a measurement
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    env.update(
        DATABASE_URL=svc.database_url,
        REDIS_URL=svc.redis_url,
        MEMORY_QUEUE=queue,
        MEMORY_DATA_DIR=str(svc.tmp / "data"),
        MEMORY_LOG_FORMAT="json",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


# --- processes ------------------------------------------------------------------------------------------


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


# --- statistics -----------------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of an already sorted, non-empty sequence."""
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


def latency_summary_ms(durations_ns: Sequence[int]) -> dict[str, float]:
    values = sorted(d / 1e6 for d in durations_ns)
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 50), 4),
        "p90_ms": round(percentile(values, 90), 4),
        "p99_ms": round(percentile(values, 99), 4),
        "max_ms": round(values[-1], 4),
        "mean_ms": round(sum(values) / len(values), 4),
    }


def mib(n_bytes: float | None) -> float | None:
    return None if n_bytes is None else round(n_bytes / (1024 * 1024), 1)


# --- machine and code facts -----------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    mem_total = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_total = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": cpu,
        "cores": os.cpu_count(),
        "ram_gib": round(mem_total / 2**30, 1) if mem_total else None,
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }


def git_commit() -> str:
    """`git rev-parse --short HEAD`, plus '+dirty' when the working tree has changes."""

    def git(*args: str) -> str:
        # --no-optional-locks: never take index.lock while others may be using the repository
        out = subprocess.run(
            ["git", "--no-optional-locks", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return out.stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = bool(git("status", "--porcelain"))
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


# --- the report every benchmark module returns ---------------------------------------------------------


def target(name: str, measured: float | None, op: str, goal: float, unit: str, note: str = "") -> dict[str, Any]:
    """One target row: `op` is "<=" or ">="; not met when nothing was measured."""
    met = measured is not None and (measured <= goal if op == "<=" else measured >= goal)
    return {"name": name, "measured": measured, "target": f"{op} {goal:g} {unit}".strip(), "unit": unit,
            "met": met, "note": note}


def targets_table(targets: Sequence[dict[str, Any]]) -> list[str]:
    """The markdown table of target rows; a row noted "reference" has no goal of its own (met: -)."""
    lines = ["| target | measured | goal | met |", "| --- | --- | --- | --- |"]
    for t in targets:
        measured = "n/a" if t["measured"] is None else f"{t['measured']:g} {t['unit']}"
        note = f" ({t['note']})" if t["note"] else ""
        met = "yes" if t["met"] else "**no**"
        if t["note"] == "reference":
            met, note = "-", ""
        lines.append(f"| {t['name']}{note} | {measured} | {t['target']} | {met} |")
    return lines


def paragraph(text: str) -> str:
    """A paragraph written across source lines, as one markdown line."""
    return " ".join(text.split())


def fmt(v: Any, spec: str = "") -> str:
    return "n/a" if v is None else format(v, spec)


def report(
    name: str,
    quick: bool,
    figures: dict[str, Any],
    skipped: list[str],
    *,
    started: float,
    targets: Callable[[dict[str, Any]], list[dict[str, Any]]],
    render: Callable[[dict[str, Any]], str],
) -> dict[str, Any]:
    """The `{"name", "quick", "figures", "targets", "skipped", "markdown"}` dict of a finished run."""
    figures["duration_s"] = round(time.monotonic() - started, 1)
    figures["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    out: dict[str, Any] = {
        "name": name,
        "quick": quick,
        "figures": figures,
        "targets": targets(figures),
        "skipped": skipped,
    }
    out["markdown"] = render(out)
    return out
