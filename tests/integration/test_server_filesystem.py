"""Roots never widen what a filesystem server may touch: against the reference server,
@modelcontextprotocol/server-filesystem, which takes the roots a client offers in place of the
folders on its command line.

`make test` installs the server with npm into `.npm-servers/` (pinned in the Makefile); without
it (or without Node) these tests are skipped, saying why.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.helpers import cli, events

PACKAGE = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
INDEX = Path(os.environ.get("DEVALL_NPM_SERVERS", REPO_ROOT / ".npm-servers")) / PACKAGE
NODE = shutil.which("node")
# What the server logs when the client offers no roots: it keeps its command line's folders.
NO_ROOTS = "Client does not support MCP Roots, using allowed directories set from server args"

pytestmark = pytest.mark.skipif(
    NODE is None or not INDEX.is_file(),
    reason="server-filesystem is not installed (`make test` installs it with npm)",
)


def folder_with_files(top: Path) -> Path:
    """`top/fs/inside.txt` and `top/outside.txt`; the folder `top/fs`."""
    inside = top / "fs"
    inside.mkdir()
    (inside / "inside.txt").write_text("inside\n")
    (top / "outside.txt").write_text("outside\n")
    return inside


def server_log(run_dir: Path) -> str:
    return "\n".join(log.read_text() for log in sorted((run_dir / "servers").glob("*.log")))


def test_an_ad_hoc_server_keeps_to_the_folder_on_its_command_line(tmp_path: Path) -> None:
    assert NODE is not None
    inside = folder_with_files(tmp_path)
    command = shlex.join([NODE, str(INDEX), str(inside)])

    def read(path: Path, run: str) -> tuple[int, str, str, str]:
        args = ["--args", json.dumps({"path": str(path)}), "--out", str(tmp_path / run)]
        done = cli("tools", "call", "--command", command, "read_text_file", *args, cwd=tmp_path)
        return done.returncode, done.stdout, done.stderr, server_log(tmp_path / run)

    # Run from the folder above: it is never offered as a root, so the server keeps `fs`.
    code, out, err, log = read(tmp_path / "outside.txt", "outside")
    assert code == 1, out + err
    assert "Access denied - path outside allowed directories" in err
    assert "outside" not in out
    # The server says it got no roots, before it served the call: no race let this pass.
    assert NO_ROOTS in log, log
    code, out, err, _ = read(inside / "inside.txt", "inside")
    assert code == 0 and out.startswith("inside\n"), err


def test_mcp_config_servers_are_offered_exactly_the_roots_the_entry_declares(
    tmp_path: Path,
) -> None:
    """A Claude Desktop file starting the server on `fs`: without `roots` it writes there; with
    `roots: [../fs]` on the entry that one root is offered, and probe and tools list show it."""
    assert NODE is not None
    inside = folder_with_files(tmp_path)
    servers = {"mcpServers": {"files": {"command": NODE, "args": [str(INDEX), str(inside)]}}}
    (tmp_path / "claude_desktop_config.json").write_text(json.dumps(servers))
    flows = tmp_path / "flows"
    flows.mkdir()
    flow = flows / "files.yaml"
    flow.write_text(
        textwrap.dedent(
            """\
            graph:
              id: files
              start: [plain]
              nodes:
                - id: plain
                  type: agent
                  config:
                    provider: scripted
                    script: [done]
                    tooling:
                      - {type: mcp_config, config: {path: ../claude_desktop_config.json}}
                - id: rooted
                  type: agent
                  config:
                    provider: scripted
                    script: [done]
                    tooling:
                      - type: mcp_config
                        config: {path: ../claude_desktop_config.json, roots: [../fs]}
              edges:
                - {from: plain, to: rooted}
            """
        )
    )
    probe = cli("probe", str(flow), "--json", cwd=flows)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    roots = {row["id"]: row["roots"] for row in json.loads(probe.stdout)["servers"]}
    assert roots == {"files": [], "files-2": [inside.as_uri()]}
    table = cli("probe", str(flow), cwd=flows)
    assert f"roots offered to files-2: {inside.as_uri()}" in table.stdout, table.stdout
    assert "roots offered to files:" not in table.stdout
    listed = cli("tools", "list", str(flow), "--json", cwd=flows)
    assert listed.returncode == 0, listed.stderr
    by_node = {(row["nodes"][0], row["name"]): row["roots"] for row in json.loads(listed.stdout)}
    assert by_node[("plain", "write_file")] == []
    assert by_node[("rooted", "write_file")] == [inside.as_uri()]

    def call(node: str, tool: str, arguments: dict[str, str]) -> tuple[int, str, str, Path]:
        run = tmp_path / node
        args = ["--node", node, "--args", json.dumps(arguments), "--out", str(run)]
        done = cli("tools", "call", str(flow), tool, *args, cwd=flows)
        return done.returncode, done.stdout, done.stderr, run

    # Without roots the server keeps its own folder: a write there is not refused.
    written = inside / "new.txt"
    code, _, err, run = call("plain", "write_file", {"path": str(written), "content": "written"})
    assert code == 0, err
    assert written.read_text() == "written" and NO_ROOTS in server_log(run)
    # With roots: the server asks, and is given exactly the declared one.
    code, out, err, run = call("rooted", "read_text_file", {"path": str(inside / "inside.txt")})
    assert code == 0 and out.startswith("inside\n"), err
    offered = [(e["roots"], e["reason"]) for e in events(run, "server.roots")]
    assert offered == [([inside.as_uri()], "listed")]
