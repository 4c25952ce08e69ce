"""devall's own MCP client and fastmcp's agree on the protocol with a server, and list it alike.

Against a server of the 2026-07-28 protocol only (tests/servers/modern_server.py, which refuses
the `initialize` handshake and every request without the revision's `_meta`), over stdio and
HTTP, and against the reference server-everything (handshake era), `tools list --json` prints
the same with either client, and `probe` names the same protocol version.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import cli
from tests.integration.test_server_everything import INDEX, NODE
from tests.servers.serve import ServerProcess

MODERN = Path(__file__).parents[1] / "servers" / "modern_server.py"
FASTMCP = {"DEVALL_MCP_CLIENT": "fastmcp"}
DIRECT = ("DEVALL_MCP_CLIENT",)
EVERYTHING = pytest.mark.skipif(
    NODE is None or not INDEX.is_file(),
    reason="server-everything is not installed (`make test` installs it with npm)",
)


@pytest.fixture
def modern_url() -> Iterator[str]:
    server = ServerProcess(MODERN)
    try:
        yield server.start()
    finally:
        server.stop()


def listed(*target: str, fastmcp: bool) -> str:
    """`tools list --json` of `target` with one client or the other (exit 0 asserted)."""
    env, drop = (FASTMCP, ()) if fastmcp else ({}, DIRECT)
    result = cli("tools", "list", *target, "--json", "--schema", env=env, drop=drop)
    assert result.returncode == 0, result.stderr
    return result.stdout


def probed(*target: str, fastmcp: bool) -> tuple[str, str, str]:
    """The protocol version, client and server name `probe --json` reports for `target`."""
    env, drop = (FASTMCP, ()) if fastmcp else ({}, DIRECT)
    result = cli("probe", *target, "--json", env=env, drop=drop)
    (row,) = json.loads(result.stdout)["servers"]
    assert row["ok"], row
    return row["protocol_version"], row["client"], row["server_name"]


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(shlex.join([sys.executable, str(MODERN)]), id="modern"),
        pytest.param(f"{NODE} {INDEX} stdio", id="everything", marks=EVERYTHING),
    ],
)
def test_both_clients_agree_with_a_local_server(command: str) -> None:
    target = ("--command", command)
    light = listed(*target, fastmcp=False)
    assert light == listed(*target, fastmcp=True)
    assert json.loads(light)  # some tools, with their schemas
    version, client, name = probed(*target, fastmcp=False)
    assert client == "light"
    assert (version, "fastmcp", name) == probed(*target, fastmcp=True)
    if "modern" in command:
        assert (version, name) == ("2026-07-28", "modern server")


def test_the_light_client_speaks_2026_07_28_over_http(modern_url: str) -> None:
    # What the server got from one `tools call` of the light client: the probe, the listing
    # and the call, each with the revision's `_meta` and a header that says the same; no
    # `initialize`, no notifications, no `ping`.
    called = cli("tools", "call", "--url", modern_url, "seen", drop=DIRECT)
    assert called.returncode == 0, called.stderr
    seen = json.loads(called.stdout)
    assert seen["methods"] == ["server/discover", "tools/list", "tools/call"]
    assert seen["versions"] == seen["headers"] == ["2026-07-28"] * 3
    arguments = ("--args", '{"a": 2, "b": 3}')
    added = cli("tools", "call", "--url", modern_url, "add", *arguments, drop=DIRECT)
    assert added.returncode == 0 and '{"sum": 5}' in added.stdout, added.stderr
    target = ("--url", modern_url)
    assert listed(*target, fastmcp=False) == listed(*target, fastmcp=True)
    assert probed(*target, fastmcp=False)[::2] == ("2026-07-28", "modern server")
