"""Benchmarks, run by `make bench` (`python -m bench.run`).

Each benchmark module exposes `run(budget_s, quick) -> dict`.

The registry of modules lives in `bench.run.BENCHMARKS`; shared helpers (services, worker processes,
percentiles, machine facts) in `bench.common`. Results go to `bench/results/<name>.json` and `BENCHMARKS.md`.
"""
