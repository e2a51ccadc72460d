"""Where the benchmarks read and write: the repository, the results folder, the data outside the repository."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO / "bench" / "results"  # gitignored: one JSON per benchmark run
# data sets with licences of their own (LoCoMo: CC BY-NC) stay outside the repository, read in place
BENCH_DATA = REPO.parent / "shared" / "bench-data"
