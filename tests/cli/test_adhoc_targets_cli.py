"""Ad-hoc targets: `--url`, `--command` and their options on tools list/call and probe."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest

from tests.cli.mcp_targets import RESOURCES_SERVER, local_command
from tests.helpers import cli
from tests.servers.serve import SERVERS_DIR, ServerProcess

RAW = SERVERS_DIR / "raw_server.py"


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    with ServerProcess(RESOURCES_SERVER) as server:
        yield server


def test_tools_list_and_call_on_a_command_name_the_server_by_its_script() -> None:
    listed = cli("tools", "list", "--command", local_command(), "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["name"] == "ping" and row["nodes"] == ["resources_server"]
    assert row["source"] == "mcp_local"
    assert "fastmcp" in row["_meta"] and row["execution"] is None  # as the server lists it
    called = cli(
        "tools", "call", "--command", local_command(), "ping", "--env", "RES_MARKER=-from-env"
    )
    assert called.returncode == 0 and called.stdout == "pong-from-env\n", called.stderr


def test_cwd_and_wait_for_log_go_with_command() -> None:
    command = f"{sys.executable} {RESOURCES_SERVER.name}"
    cwd = str(RESOURCES_SERVER.parent)
    probe = cli(
        "probe", "--command", command, "--cwd", cwd, "--wait-for-log", "server ready", "--json"
    )
    assert probe.returncode == 0, probe.stdout + probe.stderr
    (row,) = json.loads(probe.stdout)["servers"]
    assert row["id"] == "resources_server" and row["status"] == "ok"
    never = cli(
        "tools",
        "list",
        "--command",
        local_command(),
        "--wait-for-log",
        "never printed",
        "--startup-timeout",
        "1",
    )
    assert never.returncode == 4 and "never printed" in never.stderr, never.stderr


def test_tools_on_a_url_with_headers(remote: ServerProcess) -> None:
    called = cli(
        "tools", "call", "--url", remote.url, "--header", "Authorization: Bearer t0ps3cret", "ping"
    )
    assert called.returncode == 0 and called.stdout == "pong\n", called.stderr
    listed = cli("tools", "list", "--url", remote.url, "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)[0]["nodes"] == [f"127.0.0.1:{remote.port}"]


def test_errors_of_an_ad_hoc_target_speak_of_its_server_not_of_a_workflow() -> None:
    command = f"{sys.executable} {RAW} --fixture --task-only"
    missing = cli("tools", "call", "--command", command, "nope")
    assert missing.returncode == 2
    assert "devall: error: no tool 'nope' on server 'raw_server' (tools: add," in missing.stderr
    assert "hint: 'devall tools list' with the same --command shows every tool" in missing.stderr
    node = cli("resources", "list", "--command", command, "--node", "zz")
    assert node.returncode == 2
    assert "no server 'zz' on the command line (servers: raw_server)" in node.stderr
    assert "workflow" not in missing.stderr + node.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tools", "list", "--url", "http://127.0.0.1:9/mcp", "--env", "A=1"], "--env goes with"),
        (["tools", "list", "--command", "x", "--url", "http://127.0.0.1:9/mcp"], "exactly one"),
        (["probe", "--command", "x y", "--wait-for-log", "("], "--wait-for-log:"),
        (["tools", "list", "--url", "ftp://example.org"], "--url: server must be"),
        (["tools", "call", "--command", "x"], "missing argument TOOL"),
    ],
)
def test_bad_ad_hoc_options_are_usage_errors(args: list[str], message: str) -> None:
    result = cli(*args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
