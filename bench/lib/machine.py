"""Facts about the machine and the code a benchmark ran on, recorded with every result."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from bench.lib.paths import REPO


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
