# Two commands matter: `make run` (start everything) and `make test` (run the whole suite).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench bench-locomo demo install clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstall when the project's dependencies change. torch is pinned to the CPU build first: an unpinned
# torch (pulled in by sentence-transformers) would download a multi-GB CUDA build.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[dev,local-embeddings]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/memctl up

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy shared core store worker schedules api memctl
	$(VENV)/bin/lint-imports

bench: $(STAMP)
	$(PY) -m bench.run

demo: $(STAMP)
	$(PY) -m bench.demo

clean:
	rm -rf $(VENV) .memdata .pytest_cache .mypy_cache .ruff_cache
