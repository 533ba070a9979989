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

.PHONY: demo test lint deps pytest bench serve clean-demo

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

pytest: $(STAMP)
	$(BIN)/pytest

test: lint pytest

bench: $(STAMP)
	$(BIN)/python -m bench

clean-demo:
	rm -f $(DEMO_DB) $(DEMO_DB).wal
