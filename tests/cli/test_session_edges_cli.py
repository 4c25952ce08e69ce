"""The protocol edges of tests/servers/raw_server.py through the CLI, with both local clients."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from devall_cli.cli.app import app

SERVERS = Path(__file__).resolve().parents[1] / "servers"
CLIENTS = pytest.mark.parametrize("client", ["direct", "fastmcp"])


def invoke(client: str, *args: str) -> tuple[int, str, str]:
    env = {"NO_COLOR": "1", "COLUMNS": "200"}
    if client == "fastmcp":
        env["DEVALL_MCP_CLIENT"] = "fastmcp"
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@CLIENTS
def test_tools_list_of_a_server_echoing_string_ids(client: str) -> None:
    command = f"{sys.executable} {SERVERS / 'strid_server.py'}"
    code, out, err = invoke(client, "tools", "list", "--command", command, "--json")
    assert code == 0, err
    assert [tool["name"] for tool in json.loads(out)] == ["tool_0", "shaped"]


def probe_exiting_on_list(client: str) -> dict[str, object]:
    command = f"{sys.executable} {SERVERS / 'raw_server.py'} --exit-on-list"
    code, out, err = invoke(client, "probe", "--command", command, "--json")
    assert code == 1, err
    (row,) = json.loads(out)["servers"]
    assert isinstance(row, dict)
    return row


@CLIENTS
def test_probe_of_a_server_exiting_while_it_lists_says_exited(client: str) -> None:
    row = probe_exiting_on_list(client)
    assert row["ok"] is False and row["status"] == "exited"


def test_a_server_exiting_while_it_lists_is_worded_alike_by_both_clients() -> None:
    direct, fastmcp = probe_exiting_on_list("direct"), probe_exiting_on_list("fastmcp")
    assert direct["status"] == fastmcp["status"] == "exited"
    assert direct["error"] == fastmcp["error"]
