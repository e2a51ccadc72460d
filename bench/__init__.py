"""Benchmarks, run by `make bench` (`python -m bench.run`), and the product walk-through (`make demo`).

- one module per benchmark (`ingest`, `store`, `sleep`, `api_load`, `extraction`, `locomo`), each with
  `run(budget_s, quick) -> dict`; the registry is `bench.run.BENCHMARKS`. No benchmark imports another.
- `bench.lib`: what the benchmarks share (services and worker processes, the synthetic corpus, the loader,
  statement capture, statistics, the report renderer, the LoCoMo data and scorer).
- `bench.demo`: a scripted walk-through of the product on the embedded (or configured) stack.
Results go to `bench/results/<name>.json` and `BENCHMARKS.md`.
"""
