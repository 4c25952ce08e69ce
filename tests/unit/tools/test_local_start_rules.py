"""Local servers run by a package fetcher (`npx -y`, `uvx`) get longer to start; Node servers
under `node_modules` are named after their package."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devall_cli.config.schema import Checker
from devall_cli.config.yaml_source import SourceDocument
from devall_cli.tools.kinds.mcp_local import McpLocalConfig, local_name, parse_mcp_local


def parsed(raw: dict[str, Any]) -> McpLocalConfig:
    ck = Checker(SourceDocument(data=raw, file="wf.yaml"), workflow_dir=Path.cwd())
    settings = parse_mcp_local(ck, raw, ())
    assert settings is not None and not ck.issues
    return settings


@pytest.mark.parametrize(
    ("command", "args", "timeout"),
    [
        ("npx", ["-y", "@modelcontextprotocol/server-everything"], 60),
        ("/usr/local/bin/uvx", ["mcp-server-time"], 60),
        ("bunx", ["some-server"], 60),
        ("pnpm", ["dlx", "some-server"], 60),
        ("pnpm", ["run", "serve"], 10),
        ("node", ["dist/index.js"], 10),
        ("python", ["-m", "mcp_server_time"], 10),
    ],
)
def test_a_package_fetcher_gets_a_longer_default_startup_timeout(
    command: str, args: list[str], timeout: float
) -> None:
    assert parsed({"command": command, "args": args}).startup_timeout == timeout


def test_a_startup_timeout_the_user_set_is_kept_for_a_fetcher_too() -> None:
    settings = parsed({"command": "npx", "args": ["-y", "pkg"], "startup_timeout": 5})
    assert settings.startup_timeout == 5


def test_a_node_server_under_node_modules_is_named_after_its_package() -> None:
    script = "/home/u/app/node_modules/@scope/server-x/dist/index.js"
    assert local_name(McpLocalConfig(command="node", args=(script, "/tmp"))) == "server-x"
    assert local_name(McpLocalConfig(command="node", args=("server.js",))) == "server"


@pytest.mark.parametrize(
    ("command", "args", "name"),
    [
        ("npx", ("-y", "@acme/pdf-server@1.2", "--pages", "2"), "pdf-server"),
        ("npx", ("-y", "@modelcontextprotocol/server-filesystem", "/srv"), "server-filesystem"),
        ("uvx", ("mcp-server-time", "--local-timezone", "UTC"), "mcp-server-time"),
        ("node", ("server.js", "/srv/docs"), "server"),
        ("python", ("/opt/app/server.py", "--port", "3"), "server"),
        ("python", ("-m", "mcp_server_fetch"), "mcp_server_fetch"),
        ("uv", ("run", "server.py"), "server"),
        ("pnpm", ("dlx", "server-x"), "server-x"),
        ("mytool", ("--port", "3"), "mytool"),
    ],
)
def test_a_server_is_named_by_what_it_runs_not_by_a_value_given_to_it(
    command: str, args: tuple[str, ...], name: str
) -> None:
    assert local_name(McpLocalConfig(command=command, args=args)) == name
