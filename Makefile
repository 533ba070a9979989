# Two commands: `make demo` and `make test`. Everything else is a building block.
# Both need only a clone: the demo and the tests use ../shared/data where it sits beside the repository,
# else the demo set shipped in data/demo.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DB := data/demo.duckdb
HOST ?= 127.0.0.1
PORT ?= 8501
LINTED := core dashboard tests bench data/demo
# Compiled bytecode (and pytest's rewritten test modules) kept under .cache/pycache, even where the
# environment says not to write it (this machine's image sets PYTHONDONTWRITEBYTECODE): without it every
# run, every xdist worker and every served app compiled everything again (collection 18 s -> 5 s warm).
export PYTHONPYCACHEPREFIX := $(CURDIR)/.cache/pycache
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test check lint deps pytest coverage bench serve clean-demo clean-cache

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Only what pyproject.toml declares (with the dev extra); reinstalled when the project definition changes.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Builds the database once (saying which data it used), then serves it; `make clean-demo` to rebuild.
demo: $(STAMP)
	@echo "trajreview dashboard: http://$(HOST):$(PORT)"
	$(BIN)/trajreview --db $(DEMO_DB) demo --host $(HOST) --port $(PORT)

lint: $(STAMP) deps
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/vulture

# Every import declared and every declaration imported ([tool.deptry]; tests is a second root because its
# helpers are imported by bare name), then: core and dashboard import nothing that only the dev extra brings.
deps: $(STAMP)
	$(BIN)/deptry . tests
	$(BIN)/deptry core dashboard --known-first-party core --known-first-party dashboard \
		--optional-dependencies-dev-groups dev

# The suite on both cores (pytest-xdist). A test file runs whole on one worker (--dist loadfile), so a
# database a module serves is served once and its browser tests share one chromium; expensive databases
# come from .cache/test-builds when neither the code nor their inputs changed (docs/testing.md).
PYTEST_ARGS ?= -n 2 --dist loadfile --no-loadscope-reorder
# The quick tier: no whole run, no browser, no page run, no server, nothing slow (docs/testing.md).
QUICK := not whole_run and not browser and not pages and not server and not slow and not embeddings and not llm_server

pytest: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

# Before every commit: lint and the quick tier (about two minutes at most).
check: lint
	$(BIN)/pytest $(PYTEST_ARGS) -m "$(QUICK)"

test: lint pytest

# Line coverage of core/ and dashboard/ over the whole suite, as docs/testing.md reports it.
coverage: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS) --cov=core --cov=dashboard --cov-report=term:skip-covered

clean-cache:
	rm -rf .cache/test-builds .cache/pycache

bench: $(STAMP)
	$(BIN)/python -m bench

clean-demo:
	rm -f $(DEMO_DB) $(DEMO_DB).wal
	rm -rf $(DEMO_DB).thumbnails
