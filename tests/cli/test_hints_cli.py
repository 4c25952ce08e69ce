"""Cache hints and icons of a server's listing (tests/servers/hints_server.py), with devall's
own client and with fastmcp's: `ttlMs` keeps a listing unless `cache_ttl` is set, and a tool's
icons reach `tools list --json` and the report."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.flows import invoke, scripted, write_flow
from tests.cli.test_report_cli import page
from tests.conftest import SERVERS_DIR
from tests.servers.hints_server import ICONS, PNG

SERVER = str(SERVERS_DIR / "hints_server.py")
CLIENTS = {"direct": {}, "fastmcp": {"DEVALL_MCP_CLIENT": "fastmcp"}}


def hinted_server(prefix: str, log: Path, **config: Any) -> dict[str, Any]:
    """A tooling entry of a hints server whose listing says `ttlMs: 60000`."""
    args = [SERVER, "--ttl-ms", "60000", "--log", str(log)]
    server = {"command": sys.executable, "args": args, **config}
    return {"type": "mcp_local", "prefix": prefix, "config": server}


def lists(log: Path) -> int:
    """The tools/list requests the server got."""
    return log.read_text().splitlines().count("tools/list")


@pytest.mark.parametrize("client", CLIENTS)
def test_a_cache_hint_keeps_the_listing_unless_cache_ttl_is_set(
    tmp_path: Path, client: str
) -> None:
    hinted, pinned = tmp_path / "hinted.log", tmp_path / "pinned.log"
    tooling = [hinted_server("h", hinted), hinted_server("p", pinned, cache_ttl=0)]
    first = scripted("a", "done")
    first["config"]["script"] = [
        {"tool_calls": [{"name": "h_pinged", "arguments": {}}]},
        {"content": "done"},
    ]
    second = scripted("b", "done")
    for agent in (first, second):  # two visits: each asks for the node's tools
        agent["config"]["tooling"] = tooling
    flow = write_flow(tmp_path, [first, second], [{"from": "a", "to": "b"}], start=["a"])
    run_dir = tmp_path / "run"
    args = ("run", str(flow), "--out", str(run_dir), "--task", "go", "--report")
    code, _, err = invoke(*args, env=CLIENTS[client])
    assert code == 0, err
    # Listed when the server started, and reused by both nodes as `ttlMs` allows ...
    assert lists(hinted) == 1
    # ... but under an explicit `cache_ttl: 0`, asked again for each node.
    assert lists(pinned) == 3
    html = page(run_dir / "report.html")
    call = html.split('<details class="step tool', 1)[1].split("</details>", 1)[0]
    assert f'<img class="tool-icon" src="{PNG}" alt=""> <b>h_pinged</b>' in call
    assert "icons.example" not in html  # an https icon is never loaded by the page


def test_tools_list_json_shows_icons_alike_with_both_clients(tmp_path: Path) -> None:
    documents = []
    for env in CLIENTS.values():
        code, out, err = invoke(
            "tools", "list", "--command", f"{sys.executable} {SERVER}", "--json", env=env
        )
        assert code == 0, err
        documents.append(json.loads(out))
    assert documents[0] == documents[1]
    [tool] = documents[0]
    assert tool["icons"] == ICONS
    assert re.match(r"data:image/png;base64,", tool["icons"][0]["src"])
