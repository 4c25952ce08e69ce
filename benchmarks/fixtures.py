"""Workflows and servers the scenarios run on: the test suite's fixture server, stdio or HTTP."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.core import REPO_ROOT
from devall_cli.config.model import Workflow
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.providers.scripted import ScriptedToolCall, ScriptedTurn
from devall_cli.workflow.loader import load_workflow
from tests.servers.serve import FIXTURE_SERVER, ServerProcess

LIGHT_SERVER = REPO_ROOT / "benchmarks" / "light_server.py"
RAW_SERVER = REPO_ROOT / "tests" / "servers" / "raw_server.py"
READY_LINE = "fixture server ready"
QUIET = {"FASTMCP_SHOW_SERVER_BANNER": "false", "FASTMCP_CHECK_FOR_UPDATES": "off"}


@dataclasses.dataclass(frozen=True)
class ServerScript:
    """A server script the scenarios run: its path, its arguments and its ready line."""

    path: Path
    args: tuple[str, ...]
    ready: str
    sleep_tool: str  # the tool that sleeps `seconds` and answers with `tag` first


# The FastMCP fixture server of the tests (what figures are measured on), and the hand-written
# standard-library server with the same fixture tools that `--quick` uses: it starts in a few
# tens of milliseconds of CPU instead of a second, which keeps the smoke run cheap.
FASTMCP_FIXTURE = ServerScript(FIXTURE_SERVER, (), READY_LINE, "sleep_and_tag")
RAW_FIXTURE = ServerScript(RAW_SERVER, ("--fixture",), "raw server ready", "sleep")


def fixture_script(quick: bool) -> ServerScript:
    """The server a scenario measures on: the FastMCP fixture, or the raw one when quick."""
    return RAW_FIXTURE if quick else FASTMCP_FIXTURE


def q(value: object) -> str:
    """A YAML scalar (JSON is valid YAML flow syntax)."""
    return json.dumps(str(value))


def local_tooling(
    *,
    script: Path = FIXTURE_SERVER,
    ready: str | None = READY_LINE,
    prefix: str | None = None,
    env: dict[str, str] | None = None,
    max_concurrency: int = 1,
    server: ServerScript | None = None,
) -> str:
    """A `tooling` entry (YAML flow mapping) for an mcp_local server run by this interpreter
    (`server` overrides `script` and `ready`)."""
    args: tuple[str, ...] = ()
    if server is not None:
        script, args, ready = server.path, server.args, server.ready
    parts = [
        f"command: {q(sys.executable)}",
        f"args: [{', '.join(q(a) for a in (script, *args))}]",
        "startup_timeout: 60",
        f"max_concurrency: {max_concurrency}",
    ]
    if ready:
        parts.append(f"wait_for_log: {q(ready)}")
    if env:
        parts.append("env: {" + ", ".join(f"{k}: {q(v)}" for k, v in env.items()) + "}")
    head = f"type: mcp_local, prefix: {prefix}, " if prefix else "type: mcp_local, "
    return "{" + head + "config: {" + ", ".join(parts) + "}}"


def remote_tooling(url: str, *, prefix: str | None = None) -> str:
    """A `tooling` entry (YAML flow mapping) for an mcp_remote server."""
    head = f"type: mcp_remote, prefix: {prefix}, " if prefix else "type: mcp_remote, "
    return "{" + head + f"config: {{server: {q(url)}, timeout: 30}}}}"


def agent_node(node_id: str, tooling: Sequence[str], script: str = "[{content: done}]") -> str:
    """One scripted agent node (YAML block), indented for `graph.nodes`."""
    lines = [
        f"    - id: {node_id}",
        "      type: agent",
        "      config:",
        "        provider: scripted",
        f"        name: bench-{node_id}",
        "        params: {tool_loop_limit: 100000}",
        f"        script: {script}",
    ]
    if tooling:
        lines.append("        tooling:")
        lines += [f"          - {entry}" for entry in tooling]
    return "\n".join(lines)


def write_workflow(directory: Path, name: str, nodes: Sequence[str], start: Sequence[str]) -> Path:
    """Write a workflow of these node blocks; returns its path."""
    text = "\n".join(
        [
            "version: 0.4.0",
            "graph:",
            f"  id: {name}",
            f"  start: [{', '.join(start)}]",
            "  nodes:",
            *nodes,
            "",
        ]
    )
    path = directory / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def single_node_workflow(directory: Path, name: str, tooling: Sequence[str]) -> Workflow:
    """A loaded workflow whose only node `a` uses `tooling`."""
    path = write_workflow(directory, name, [agent_node("a", tooling)], ["a"])
    return load_workflow(path)


def with_script(workflow: Workflow, node_id: str, calls: int, tool: str = "echo") -> Workflow:
    """The workflow with node `node_id` scripted to make `calls` sequential tool calls, then answer.

    Built in Python rather than YAML: the loader caps a document at 50,000 values, and loading
    thousands of turns would measure the loader, not the run loop.
    """
    turns = [
        ScriptedTurn(tool_calls=(ScriptedToolCall(tool, {"text": f"ping {i}"}),))
        for i in range(calls)
    ]
    turns.append(ScriptedTurn(content="done: {tool_result}"))
    nodes = []
    for node in workflow.graph.nodes:
        if node.id == node_id and isinstance(node.config, AgentConfig):
            config = dataclasses.replace(
                node.config, provider_config=tuple(turns), tool_loop_limit=calls + 10
            )
            node = dataclasses.replace(node, config=config)
        nodes.append(node)
    graph = dataclasses.replace(workflow.graph, nodes=tuple(nodes))
    return dataclasses.replace(workflow, graph=graph)


@contextlib.contextmanager
def http_server(
    script: Path | ServerScript = FIXTURE_SERVER, args: Sequence[str] = ()
) -> Iterator[str]:
    """A server script over streamable HTTP on a free loopback port; yields the URL."""
    if isinstance(script, ServerScript):
        script, args = script.path, script.args
    server = ServerProcess(script, "http", args=args, env=QUIET)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temporary directory for workflows and run directories, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=f"devall-bench-{prefix}-") as name:
        yield Path(name)


def raw_stdio_client(log_dir: Path, script: Path | ServerScript = FIXTURE_SERVER) -> Any:
    """A plain fastmcp Client spawning the fixture server over stdio (stderr to a log file)."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    args = [str(script)]
    if isinstance(script, ServerScript):
        args = [str(script.path), *script.args]
    transport = StdioTransport(
        sys.executable, args, env=dict(QUIET), log_file=log_dir / "raw-server.log"
    )
    return Client(transport, timeout=30, init_timeout=60)


def raw_http_client(url: str) -> Any:
    """A plain fastmcp Client on a streamable HTTP URL."""
    from fastmcp import Client

    return Client(url, timeout=30, init_timeout=30)
