"""`devall probe` says what `run` and `tools list` would: the tools offered, the names they
refuse, which client spoke; and a slow first `npx` start gets a hint."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from tests.cli.flows import scripted, write_flow
from tests.helpers import cli
from tests.servers.serve import SERVERS_DIR

RAW = SERVERS_DIR / "raw_server.py"


def write(tmp_path: Path, *servers: dict[str, Any]) -> Path:
    """A workflow of one scripted node with a local server per `mcp_local` config given."""
    tooling = [{"type": "mcp_local", "config": config} for config in servers]
    agent = scripted("a", "done")
    agent["config"]["tooling"] = tooling
    return write_flow(tmp_path, [agent], [], start=["a"])


def raw(*flags: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(RAW), *flags]}


def test_probe_fails_on_a_tool_name_two_servers_offer_one_node(tmp_path: Path) -> None:
    # Both servers list `tool_0`: run and tools list refuse the workflow (exit 3), so does probe.
    wf = write(tmp_path, raw("--fixture"), raw("--pages=1"))
    listed = cli("tools", "list", str(wf))
    assert listed.returncode == 3
    assert "'raw_server' and 'raw_server-2' both offer it" in listed.stderr
    junit = tmp_path / "probe.xml"
    probed = cli("probe", str(wf), "--json", "--junit", str(junit))
    assert probed.returncode == 1, probed.stderr
    doc = json.loads(probed.stdout)
    assert doc["ok"] is False and all(s["ok"] for s in doc["servers"])
    (conflict,) = doc["conflicts"]
    assert conflict["node"] == "a" and conflict["tool"] == "tool_0"
    assert conflict["servers"] == ["raw_server", "raw_server-2"]
    failures = ElementTree.parse(junit).getroot().findall("testcase/failure")
    assert [f.get("type") for f in failures] == ["duplicate_tool_name"]
    text = cli("probe", str(wf))
    assert text.returncode == 1
    assert "node a: duplicate_tool_name: " in text.stdout
    assert "Duplicate tool name 'tool_0'" in text.stdout


def test_probe_counts_the_tools_offered_and_names_the_client(tmp_path: Path) -> None:
    wf = write(tmp_path, raw("--fixture", "--task-only"))
    offered = json.loads(cli("tools", "list", str(wf), "--json").stdout)
    probed = cli("probe", str(wf), "--json")
    assert probed.returncode == 0, probed.stderr
    (row,) = json.loads(probed.stdout)["servers"]
    assert row["tools"] == len(offered) and row["task_only"] == 1
    assert row["client"] == "light"
    text = cli("probe", str(wf)).stdout
    assert f"raw_server: {len(offered)} tools (1 task-only, called as an MCP task)" in text
    assert "(light client)" in text
    fastmcp = cli("probe", str(wf), "--json", env={"DEVALL_MCP_CLIENT": "fastmcp"})
    (row,) = json.loads(fastmcp.stdout)["servers"]
    assert row["client"] == "fastmcp" and row["tools"] == len(offered)


def test_a_slow_npx_start_gets_a_hint_that_it_may_be_downloading(tmp_path: Path) -> None:
    # No download: `npx` here is a script that runs a server that never answers the handshake.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npx = bin_dir / "npx"
    npx.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{RAW}" --silent-handshake\n')
    npx.chmod(0o755)
    path = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    command = ("--command", "npx -y @scope/slow-server", "--startup-timeout", "0.5")
    listed = cli("tools", "list", *command, env=path)
    assert listed.returncode == 4
    assert "`npx` may still be downloading the package" in listed.stderr
    assert "--startup-timeout SECONDS" in listed.stderr
    assert "servers/slow-server.log" in listed.stderr
    wf = write(tmp_path, {"command": "npx", "args": ["-y"], "startup_timeout": 0.5})
    probed = cli("probe", str(wf), "--json", env=path)
    (row,) = json.loads(probed.stdout)["servers"]
    assert row["status"] == "handshake_timeout"
    assert "`startup_timeout:` in graph.nodes[0].config.tooling[0].config" in row["hint"]
