"""Reading the worker and API processes' Prometheus samples (multiprocess mode) without tripping on a file that
another process is still creating.

`prometheus_client` creates a process's sample file empty and then sizes it; a reader that lists the directory in
between finds a zero-length file and fails on it (`struct.error`), so `/metrics` (and anything else that merges the
files) would fail now and then while a worker process starts a new metric. A file shorter than its 8-byte header
holds no sample yet: it is left out of this read and counted by the next one.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable

from prometheus_client import multiprocess
from prometheus_client.metrics_core import Metric

_HEADER_BYTES = 8


def _started(path: str) -> bool:
    try:
        return os.path.getsize(path) >= _HEADER_BYTES
    except FileNotFoundError:  # a dead process's file removed between the listing and now
        return False


class MultiProcessCollector(multiprocess.MultiProcessCollector):
    """`prometheus_client`'s collector, over the files that are past their creation."""

    def collect(self) -> Iterable[Metric]:
        files = [f for f in glob.glob(os.path.join(self._path, "*.db")) if _started(f)]
        return self.merge(files, accumulate=True)
