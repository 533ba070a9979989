# Two commands: `make demo` and `make test`. Everything else is a building block.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DB := data/demo.duckdb
HOST ?= 127.0.0.1
PORT ?= 8501

.PHONY: demo test lint pytest bench serve clean-demo

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Reinstall only when the project definition changes.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(DEMO_DB): | $(STAMP)
	$(BIN)/trajreview --db $(DEMO_DB) demo --build-only

demo: $(STAMP) $(DEMO_DB)
	@echo "trajreview dashboard: http://$(HOST):$(PORT)"
	$(BIN)/trajreview --db $(DEMO_DB) serve --host $(HOST) --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check core dashboard tests bench
	$(BIN)/ruff format --check core dashboard tests bench
	$(BIN)/vulture

pytest: $(STAMP)
	$(BIN)/pytest

test: lint pytest

bench: $(STAMP)
	$(BIN)/python -m bench

clean-demo:
	rm -f $(DEMO_DB) $(DEMO_DB).wal
