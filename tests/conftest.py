"""Test-wide guards: loopback-only networking, isolated environment and working directory."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check_address(address: Any) -> None:
    if not isinstance(address, tuple) or not address:
        return  # AF_UNIX paths and the like
    host = str(address[0])
    if host in {"localhost", ""}:
        return
    try:
        if ipaddress.ip_address(host.split("%")[0]).is_loopback:
            return
    except ValueError:
        pass
    raise ConnectionRefusedError(f"test tried to reach a non-loopback address: {host}")


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    _check_address(address)
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    _check_address(address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse any connection that is not to 127.0.0.0/8 or ::1."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)


@pytest.fixture(autouse=True)
def _no_child_left() -> Iterator[None]:
    """Every server process devall starts in a test is gone by the end of that test.

    A leak fails its own test only: the processes are killed and forgotten, so the watcher
    process stops and the tests after it in the same worker start clean.
    """
    from devall_cli.procs.process_groups import live_child_pids, unregister

    before = set(live_child_pids())
    yield
    leaked = set(live_child_pids()) - before
    for pid in leaked:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        unregister(pid)
    assert not leaked, f"server processes left running: {leaked}"


@pytest.fixture
def no_process_left() -> Iterator[None]:
    """Every process a test started, by any means, is gone (and reaped) once it ends.

    Wider than the guard above, which knows only the servers devall registers: this one sees
    every child of the test process. Children that were there before the test (a server a module
    or session fixture shares) are not the test's. Leftovers are killed, then fail the test.
    """
    from tests.servers.serve import live_children

    before = set(live_children())
    yield
    deadline = time.monotonic() + 5  # a process being torn down may take a moment to be reaped
    while (left := set(live_children()) - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left behind: {left}"


# Where the providers look for keys and endpoints when a workflow names none.
_MODEL_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test runs in its own directory, without colour, and without the user's LLM settings."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("FASTMCP_SHOW_SERVER_BANNER", "false")
    monkeypatch.setenv("FASTMCP_CHECK_FOR_UPDATES", "off")
    for name in (
        *_MODEL_ENV,
        "DEVALL_FUNCTIONS_DIR",
        "MAC_FUNCTIONS_DIR",
        "MAC_EDGE_FUNCTIONS_DIR",
        "MAC_EDGE_PROCESSOR_FUNCTIONS_DIR",
        # Either would turn tracing on (docs/otel.md) and send every test's spans off.
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ):
        monkeypatch.delenv(name, raising=False)
    yield


REPO_ROOT = Path(__file__).resolve().parent.parent
SERVERS_DIR = REPO_ROOT / "tests" / "servers"
DATA_DIR = REPO_ROOT / "tests" / "data"


# The slowest test files, slowest first (measured with --durations). `make test` hands whole
# files to its two workers in collection order (`--dist loadfile`): started last, a 40 s file
# would keep one worker busy long after the other ran out of work. Every other file keeps its
# place; the tests inside a file keep their order.
SLOW_FILES_FIRST = (
    "tests/cli/test_batch_ray.py",
    "tests/cli/test_otel_phoenix.py",
    "tests/conformance/test_conformance.py",
    "tests/cli/test_head_start_cli.py",
    "tests/cli/test_resources_prompts_cli.py",
    "tests/integration/test_mcp_remote_faults.py",
    "tests/unit/config/test_loader_fuzz.py",
    "tests/cli/test_mcp_client_cli.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: n for n, name in enumerate(SLOW_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the conformance test's scenario table at the end of every run that ran it."""
    for outcome in ("passed", "failed"):
        for report in terminalreporter.getreports(outcome):
            for title, content in report.sections:
                if title.endswith("MCP conformance suite call"):  # run.SECTION, phase "call"
                    terminalreporter.write_sep("-", "MCP conformance suite")
                    terminalreporter.write_line(content)
