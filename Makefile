# devall — developer tasks. `make demo` and `make test` create or refresh .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench venv clean npm-servers

# MCP servers from npm that the tests run against, installed into a folder of the project.
NPM_SERVERS := .npm-servers
EVERYTHING_VERSION := 2026.8.31
EVERYTHING := $(NPM_SERVERS)/node_modules/@modelcontextprotocol/server-everything/package.json

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

test: $(STAMP) npm-servers
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

npm-servers: $(EVERYTHING)

# Reinstalled only when the pinned version changes (the stamp is the package's own file).
$(EVERYTHING): Makefile
	npm install --prefix $(NPM_SERVERS) --no-audit --no-fund --no-save --loglevel=error \
		@modelcontextprotocol/server-everything@$(EVERYTHING_VERSION)
	test -f $@ && grep -q '"version": "$(EVERYTHING_VERSION)"' $@ && touch $@

lint: $(STAMP)
	$(BIN)/ruff check devall_cli tests mcp_example benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) $(NPM_SERVERS) logs .pytest_cache .mypy_cache .ruff_cache
