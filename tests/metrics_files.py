"""Reading the worker processes' Prometheus samples (multiprocess files) in the tests, through the project's own
collector (`shared.prometheus`), which skips a file another process is still creating."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric

from shared.prometheus import MultiProcessCollector


def families(metrics_dir: Path) -> list[Metric]:
    """Every metric family in the processes' sample files under `metrics_dir`."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(metrics_dir))
    return list(registry.collect())


def counter(metrics_dir: Path, name: str, **labels: str) -> float:
    """The sum over the worker processes of a counter's samples matching `labels`."""
    return sum(
        sample.value
        for family in families(metrics_dir)
        for sample in family.samples
        if sample.name == f"{name}_total" and all(sample.labels.get(k) == v for k, v in labels.items())
    )
