"""The 2026-07-28 request headers and multi-round-trip calls through `devall tools`, with both
clients alike: a tool with an invalid `x-mcp-header` is left out with one warning, designated
arguments travel as `Mcp-Param-*` headers, and a call answered `input_required` is answered by
the workflow's elicitation policy and sent again with the server's state."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import cli, events
from tests.servers.serve import SERVERS_DIR, ServerProcess

pytestmark = pytest.mark.usefixtures("no_process_left")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = ServerProcess(SERVERS_DIR / "headers_server.py")
    yield server.start()
    server.stop()


def write_workflow(folder: Path, url: str) -> Path:
    config = {"server": url, "timeout": 10, "elicitation": "accept_defaults"}
    agent = {
        "provider": "scripted",
        "name": "a",
        "tooling": [{"type": "mcp_remote", "config": config}],
        "script": ["done"],
    }
    graph = {"id": "g", "start": ["a"], "nodes": [{"id": "a", "type": "agent", "config": agent}]}
    path = folder / "wf.yaml"
    path.write_text(json.dumps({"version": "0.4.0", "graph": graph}))  # JSON is YAML
    return path


@pytest.mark.parametrize("client", ["direct", "fastmcp"])
def test_headers_and_input_required_alike(tmp_path: Path, url: str, client: str) -> None:
    wf = write_workflow(tmp_path, url)
    env = {"DEVALL_MCP_CLIENT": "fastmcp"} if client == "fastmcp" else {}
    drop = () if env else ("DEVALL_MCP_CLIENT",)

    said: list[str] = []

    def tools(*args: str) -> str:
        done = cli("tools", *args, env=env, drop=drop, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        said.append(done.stderr)
        return done.stdout

    listed = json.loads(tools("list", str(wf), "--json"))
    assert [row["name"] for row in listed] == ["echo_headers", "confirm"]
    (warning,) = said[0].splitlines()  # tools list keeps no trace: the warning is on stderr
    assert warning.startswith("devall: warning: server ") and "tool 'bad_header' is not" in warning
    echoed = tools("call", str(wf), "echo_headers", "--args", '{"region": "eu", "note": " hi"}')
    assert json.loads(echoed.splitlines()[0]) == {
        "mcp-method": "tools/call",
        "mcp-name": "echo_headers",
        "mcp-param-note": "=?base64?IGhp?=",  # leading whitespace: base64
        "mcp-param-region": "eu",
    }
    run = tmp_path / "run"
    assert tools("call", str(wf), "confirm", "--out", str(run)).startswith(
        "confirmed=true state=ok ids differ"  # the default accepted, the state echoed
    )
    warnings = [e["line"] for e in events(run, "server.log") if e.get("level") == "warning"]
    assert len(warnings) == 1
    assert "tool 'bad_header' is not offered: its x-mcp-header definition is invalid" in warnings[0]
