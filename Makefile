# devall — developer tasks. `make demo` and `make test` create or refresh .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RAY_STAMP := $(VENV)/.installed-ray

.PHONY: demo test lint bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The ray extra: the Ray executor's tests run where it is installed (make test installs it).
$(RAY_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[ray]'
	touch $(RAY_STAMP)

# The venv's bin/ goes first on PATH so that `python` in the workflow finds fastmcp.
demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/devall run workflows/demo_offline.yaml \
		--task "Tell me my fortune"

test: $(STAMP) $(RAY_STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check devall_cli tests mcp_example benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) logs .pytest_cache .mypy_cache .ruff_cache
