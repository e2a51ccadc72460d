# Two commands matter: `make run` (start everything) and `make test` (run the whole suite).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench bench-quick bench-locomo demo chaos install clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstall when the project's dependencies change. torch is pinned to the CPU build first: an unpinned
# torch (pulled in by sentence-transformers) would download a multi-GB CUDA build. The client package
# (clients/python) comes before the server, which depends on it by name and version.
$(STAMP): pyproject.toml clients/python/pyproject.toml | $(PY)
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e "./clients/python[all]"
	$(PY) -m pip install --quiet -e ".[dev,local-embeddings,onnx-embeddings,e5-embeddings]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/memctl up

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy shared core store worker schedules api memctl clients/python/memory_client
	$(VENV)/bin/lint-imports

# Every benchmark, rewriting its section of BENCHMARKS.md. Quick mode (smaller workloads, a first look):
# `make bench-quick`, or `make bench BENCH_ARGS=--quick`; BENCH_ARGS goes to `python -m bench.run`
# (`--only NAME`, `--budget-s S`, `--quick`).
bench: $(STAMP)
	$(PY) -m bench.run $(BENCH_ARGS)

bench-quick: $(STAMP)
	$(PY) -m bench.run --quick $(BENCH_ARGS)

# LoCoMo evidence recall only (~6 minutes): reads ../shared/bench-data/locomo-dev.json and skips, with a
# message, when it is absent.
bench-locomo: $(STAMP)
	$(PY) -m bench.run --only locomo $(BENCH_ARGS)

# A scripted walk-through of the product on the embedded (or configured) stack, in under a minute.
demo: $(STAMP)
	$(PY) -m bench.demo

# The fault run (~3 minutes, not part of `make test`): the worker, Redis, PostgreSQL and the LLM killed and
# restarted in turn while events stream in; exits non-zero on any lost event or a slot with two current
# values. CHAOS_ARGS goes to `python -m bench.chaos` (`--events N`, `--rate R`, `--fault-every S`, `--down S`).
chaos: $(STAMP)
	$(PY) -m bench.chaos $(CHAOS_ARGS)

clean:
	rm -rf $(VENV) .memdata .pytest_cache .mypy_cache .ruff_cache
