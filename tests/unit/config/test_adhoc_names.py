"""Readable server ids for ad-hoc commands: the package or script a command runs."""

from __future__ import annotations

import pytest

from devall_cli.workflow.adhoc import command_name


@pytest.mark.parametrize(
    ("command", "args", "name"),
    [
        ("npx", ["-y", "@modelcontextprotocol/server-everything"], "server-everything"),
        (
            "npx",
            ["-y", "@modelcontextprotocol/server-filesystem@1.2.0", "/tmp"],
            "server-filesystem",
        ),
        ("uvx", ["mcp-server-git", "--repository", "."], "mcp-server-git"),
        ("/usr/bin/python3.11", ["-m", "mcp_server_time"], "mcp_server_time"),
        ("python", ["tests/servers/fixture_server.py", "--mode", "slow"], "fixture_server"),
        ("node", ["/srv/server-memory/dist/index.js"], "server-memory"),
        ("node", ["/home/u/app/node_modules/@scope/server-x/dist/index.js"], "server-x"),
        ("uv", ["run", "weather.py"], "weather"),
        ("docker", ["run", "-i", "--rm", "mcp/git"], "git"),
        ("/opt/tools/my-mcp", [], "my-mcp"),
    ],
)
def test_command_name(command: str, args: list[str], name: str) -> None:
    assert command_name(command, args) == name
