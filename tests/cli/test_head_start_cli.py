"""Commands that start local servers spawn them before importing the MCP client stack.

`tools list`, `tools call`, `probe` and `run` never import it: devall's own client (mcp_direct.py)
speaks to local servers there, unless DEVALL_MCP_CLIENT=fastmcp.

Each command runs in a fresh interpreter (the order of imports is the point) where
`asyncio.create_subprocess_exec` is wrapped to note which heavy modules are already imported
when a server is spawned.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from devall_cli.cli.app import app
from devall_cli.errors import ExitCode
from tests.conftest import REPO_ROOT, SERVERS_DIR

HEAVY = ("fastmcp", "mcp", "mcp_types", "httpx", "httpx2")
TRICKY = SERVERS_DIR / "tricky_server.py"
EXIT_AT_ONCE = SERVERS_DIR / "exit_at_once_server.py"

# Runs `devall ARGS...` in this interpreter, through the entry point named by argv[2] (the
# console script's, `early`, or the CLI's own, `app`); prints which of the modules in argv[1]
# were imported at each server spawn, when devall began to wait for each server's readiness,
# and at the end, and the pids of the processes spawned.
SPY = """
import asyncio, json, sys
heavy = json.loads(sys.argv[1])
spawns, pids = [], []
real = asyncio.create_subprocess_exec

async def spy(*args, **kwargs):
    spawns.append(sorted(m for m in heavy if m in sys.modules))
    process = await real(*args, **kwargs)
    pids.append(process.pid)
    return process

asyncio.create_subprocess_exec = spy
from devall_cli.tools.stdio_process import StdioProcess
ready, real_wait = [], StdioProcess.wait_ready

async def wait_ready(self, *args, **kwargs):
    ready.append(sorted(m for m in heavy if m in sys.modules))
    return await real_wait(self, *args, **kwargs)

StdioProcess.wait_ready = wait_ready
entry = sys.argv[2]
sys.argv = ["devall", *sys.argv[3:]]
code = 0
try:
    if entry == "early":
        from devall_cli.cli.early import main
    else:
        from devall_cli.cli.app import main
    main()
except SystemExit as exc:
    code = exc.code or 0
after = sorted(m for m in heavy if m in sys.modules)
report = {"code": code, "spawns": spawns, "ready": ready, "after": after, "pids": pids}
print("@@" + json.dumps(report), file=sys.stderr)
"""


def tooling(script: Path, ready: str, prefix: str) -> str:
    return f"""
              - type: mcp_local
                prefix: {prefix}
                config:
                  command: "{sys.executable}"
                  args: ["{script}"]
                  wait_for_log: "{ready}"
                  startup_timeout: 30"""


def write(tmp_path: Path, entries: str) -> Path:
    text = f"""
    graph:
      start: [a]
      nodes:
        - id: a
          type: agent
          config:
            provider: scripted
            name: s
            script: [{{content: done}}]
            tooling:{entries}
    """
    path = tmp_path / "wf.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def spied(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    watch: tuple[str, ...] = HEAVY,
    entry: str = "app",
) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", SPY, json.dumps(watch), entry, *args],
        cwd=tmp_path,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(REPO_ROOT),
            "NO_COLOR": "1",
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    marker = done.stderr.rsplit("@@", 1)
    assert len(marker) == 2, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(marker[1])
    report["stdout"], report["stderr"] = done.stdout, marker[0]
    return report


LIST_AND_CALL = [
    ["tools", "list", "WF"],
    ["tools", "call", "WF", "t_echo", "--args", '{"text": "hi"}'],
    ["probe", "WF"],
]


@pytest.mark.parametrize(
    "command",
    [*LIST_AND_CALL, ["run", "WF", "--task", "hello"]],
    ids=["tools-list", "tools-call", "probe", "run"],
)
def test_local_server_is_spawned_before_the_mcp_client_is_imported(
    tmp_path: Path, command: list[str]
) -> None:
    workflow = str(write(tmp_path, tooling(TRICKY, "tricky server ready", "t")))
    report = spied(tmp_path, *(workflow if arg == "WF" else arg for arg in command))
    assert report["code"] == 0
    assert report["spawns"] == [[]]  # one server, spawned with none of the heavy modules loaded
    assert report["after"] == []  # devall's own client spoke to it: no client stack at all


@pytest.mark.parametrize(
    "command",
    [*LIST_AND_CALL, ["run", "WF", "--task", "hello"]],
    ids=["tools-list", "tools-call", "probe", "run"],
)
def test_devall_mcp_client_fastmcp_lists_and_calls_with_fastmcp(
    tmp_path: Path, command: list[str]
) -> None:
    workflow = str(write(tmp_path, tooling(TRICKY, "tricky server ready", "t")))
    args = (workflow if arg == "WF" else arg for arg in command)
    report = spied(tmp_path, *args, env={"DEVALL_MCP_CLIENT": "fastmcp"})
    assert report["code"] == 0
    assert report["spawns"] == [[]]
    assert "fastmcp" in report["after"]


def test_every_local_server_is_spawned_before_the_client_stack(tmp_path: Path) -> None:
    entries = tooling(TRICKY, "tricky server ready", "one") + tooling(
        TRICKY, "tricky server ready", "two"
    ).replace("startup_timeout: 30", "startup_timeout: 31")  # a distinct server
    report = spied(tmp_path, "run", str(write(tmp_path, entries)), "--task", "hi")
    assert report["code"] == 0
    assert report["spawns"] == [[], []]
    assert report["after"] == []


def test_a_server_spawned_ahead_that_exits_is_reported_as_before(tmp_path: Path) -> None:
    entries = tooling(TRICKY, "tricky server ready", "ok") + tooling(
        EXIT_AT_ONCE, "never printed", "gone"
    )
    result = CliRunner().invoke(app, ["probe", str(write(tmp_path, entries)), "--json"])
    assert result.exit_code == ExitCode.FAILED, result.output
    rows = {row["id"]: row for row in json.loads(result.stdout)["servers"]}
    assert rows["ok"]["ok"] is True
    assert rows["gone"]["status"] == "exited"
    result = CliRunner().invoke(app, ["tools", "list", str(write(tmp_path, entries))])
    assert result.exit_code != 0
    assert "gone" in result.stderr and "exited" in result.stderr


@pytest.mark.parametrize(
    ("command", "graceful"),
    [
        (["tools", "list", "WF"], False),
        (["probe", "WF"], False),
        (["tools", "call", "WF", "t_echo", "--args", '{"text": "hi"}'], True),
    ],
    ids=["tools-list", "probe", "tools-call"],
)
def test_only_listing_commands_skip_the_wait_on_stdin_at_teardown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], graceful: bool
) -> None:
    from devall_cli.tools.stdio_process import StdioProcess

    closes: list[bool] = []
    real_close = StdioProcess.close

    async def close(self: StdioProcess, *, graceful: bool = True) -> None:
        closes.append(graceful)
        await real_close(self, graceful=graceful)

    monkeypatch.setattr(StdioProcess, "close", close)
    workflow = str(write(tmp_path, tooling(TRICKY, "tricky server ready", "t")))
    result = CliRunner().invoke(app, [workflow if arg == "WF" else arg for arg in command])
    assert result.exit_code == 0, result.output
    assert closes and set(closes) == {graceful}


@pytest.mark.parametrize(
    "command",
    [["tools", "list", "WF"], ["tools", "call", "WF", "t_echo", "--args", '{"text": "hi"}']],
    ids=["tools-list", "tools-call"],
)
def test_commands_that_list_once_list_each_server_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    from devall_cli.tools.mcp_local import LocalSource

    listings: list[str] = []
    real_list = LocalSource.list_tools

    async def list_tools(self: LocalSource) -> Any:
        listings.append(self.id)
        return await real_list(self)

    monkeypatch.setattr(LocalSource, "list_tools", list_tools)
    workflow = str(write(tmp_path, tooling(TRICKY, "tricky server ready", "t")))
    result = CliRunner().invoke(app, [workflow if arg == "WF" else arg for arg in command])
    assert result.exit_code == 0, result.output
    assert listings == ["t"]  # the listing made at the start answers the command
