"""Helpers the test files share: the CLI in-process and as a command, run events, result text."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from devall_cli.cli.app import app
from devall_cli.tools.base import TextBlock
from devall_cli.tools.mcp_local import LocalSource
from tests.servers.serve import free_port as free_port  # re-exported

# The installed command, beside the tests' Python; its bin/ goes first on PATH, so that `python`
# in a workflow finds fastmcp (as `make demo` does).
BIN = Path(sys.executable).parent
DEVALL = BIN / "devall"
# The environment as it was before any test ran: an in-process command may leave variables
# behind in os.environ (CliRunner restores only those it was given), and a subprocess of a later
# test must not inherit them.
_START_ENV = dict(os.environ)


def invoke(
    *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    """Run `devall ARGS` in-process with Typer's CliRunner: exit code, stdout, stderr."""
    result = CliRunner().invoke(app, list(args), input=stdin, env=dict(env or {}))
    return result.exit_code, result.stdout, result.stderr


def cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    drop: tuple[str, ...] = (),
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`devall ARGS` in-process, answered as `devall()` answers: returncode, stdout, stderr.

    `env` is added to the environment and `drop` removed from it for the command only; `cwd`
    is where it runs. For every test where the process itself is not what is tested.
    """
    changes: dict[str, str | None] = {**dict(env or {}), **dict.fromkeys(drop)}
    with contextlib.chdir(cwd or Path.cwd()):
        result = CliRunner().invoke(app, list(args), env=changes)
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


def devall(
    *args: str,
    env: Mapping[str, str] | None = None,
    drop: tuple[str, ...] = (),
    cwd: Path | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """The installed command in a subprocess, with `env` added and `drop` removed.

    For what only a process shows: signals, early output, exit of a hung module, the entry point.
    """
    path = f"{BIN}{os.pathsep}{_START_ENV.get('PATH', '')}"
    environ = {**_START_ENV, "PATH": path, "NO_COLOR": "1", **(env or {})}
    for name in drop:
        environ.pop(name, None)
    return subprocess.run(
        [str(DEVALL), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environ,
        cwd=cwd,
    )


def events(run_dir: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """The events in a run's events.jsonl (of one `kind` when given); none if it has none yet."""
    path = run_dir / "events.jsonl"
    if not path.exists():
        return []
    found = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in found if kind is None or e["kind"] == kind]


def text_of(result: Any) -> str:
    """The text blocks of a tool result, one a line."""
    return "\n".join(block.text for block in result.blocks if isinstance(block, TextBlock))


def direct_local_source(**kwargs: Any) -> LocalSource:
    """A LocalSource whose session is devall's own client (mcp_direct.py), as `tools list`,
    `tools call` and `probe` build it; `LocalSource(...)` alone gets fastmcp's."""
    return LocalSource(client="direct", **kwargs)


# A workflow that runs offline with no server: a scripted agent calls two function tools, then
# answers with JSON that a passthrough node hands on (`devall test`'s tests check its run).
TOOL_FLOW = """\
graph:
  id: tool_flow
  start: [teller]
  end: [writer]
  nodes:
    - id: teller
      type: agent
      config:
        provider: scripted
        tooling: [{type: function, config: {tools: [{name: lookup}, {name: shout}]}}]
        script:
          - tool_calls: [{name: lookup, arguments: {city: Paris, days: 2}}]
          - tool_calls: [{name: shout, arguments: {text: hi}}]
          - content: '{"city": "Paris", "forecast": {"days": [1, 2]}, "ok": true}'
    - {id: writer, type: passthrough, config: {}}
  edges:
    - {from: teller, to: writer}
"""
TOOL_FUNCTIONS = '''\
def lookup(city: str, days: int = 1) -> str:
    """The weather of a city."""
    return f"sunny in {city} for {days} days"


def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()
'''


def write_tool_flow(folder: Path) -> Path:
    """`folder/flow.yaml` (TOOL_FLOW) and the functions it calls; the workflow's path."""
    functions = folder / "functions" / "function_calling"
    functions.mkdir(parents=True, exist_ok=True)
    (functions / "tools.py").write_text(TOOL_FUNCTIONS)
    path = folder / "flow.yaml"
    path.write_text(TOOL_FLOW)
    return path
