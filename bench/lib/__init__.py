"""What the benchmarks share; every module is one concept:

- `paths`: the repository, the results folder, the data outside the repository;
- `progress`: what a benchmark is doing now (routed to `bench.run`'s progress bar);
- `services`: a migrated PostgreSQL and a Redis for a run, unique names, the worker environment;
- `processes`: real Celery workers for a measurement, RSS and CPU sampling;
- `stats`: percentiles and latency summaries; `machine`: the machine and commit of a result;
- `corpus`: the synthetic memory corpus (sentences, users, queries, rows of a load);
- `db`: loading a store fast, index tooling, sizes and index usage;
- `capture`: statements captured and timed, EXPLAIN plans, cProfile's top;
- `report`: a benchmark's targets and section declared as data, rendered as markdown;
- `project`: the project's functions the benchmarks drive, imported in one place;
- `locomo_data` and `scorer`: the LoCoMo conversations and the retrieval metrics;
- `quality`: the extraction-quality corpus (`tests/data/extraction_quality/`) and how a case is scored.
"""
