"""`/metrics` merges the processes' sample files; a file another process has only just created (still empty) must
not make the read fail."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.mmap_dict import MmapedDict

from shared.prometheus import MultiProcessCollector


def test_a_file_still_being_created_is_left_for_the_next_read(tmp_path: Path) -> None:
    written = MmapedDict(str(tmp_path / "counter_101.db"))
    written.write_value(json.dumps(["memory_x", "memory_x_total", {}, "x"]), 3.0, 0.0)
    written.close()
    (tmp_path / "counter_102.db").write_bytes(b"")  # created, not yet sized: what a starting process leaves
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(tmp_path))
    samples = [s for family in registry.collect() for s in family.samples if s.name == "memory_x_total"]
    assert [s.value for s in samples] == [3.0]
