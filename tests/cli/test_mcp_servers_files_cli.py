"""mcpServers files of each desktop client, ad hoc (`--mcp-config`) and as `type: mcp_config`."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.mcp_targets import RESOURCES_SERVER, ROOT, write_json
from tests.helpers import cli
from tests.servers.serve import ServerProcess

EXAMPLES = ROOT / "workflows" / "examples"


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    with ServerProcess(RESOURCES_SERVER, args=["--marker=-http"]) as server:
        yield server


@pytest.fixture(scope="module")
def sse() -> Iterator[ServerProcess]:
    with ServerProcess(RESOURCES_SERVER, "sse", args=["--marker=-sse"]) as server:
        yield server


def stdio(**extra: object) -> dict[str, object]:
    return {"command": sys.executable, "args": [str(RESOURCES_SERVER)], **extra}


def test_claude_desktop_file_with_env_placeholders_and_a_disabled_server(tmp_path: Path) -> None:
    env = {"RES_MARKER": "${env:MARK}${SUFFIX:-!}", "API_TOKEN": "${TOKEN}"}
    config = {
        "mcpServers": {"notes": stdio(env=env), "off": {"command": "none", "disabled": True}},
        "globalShortcut": "Ctrl+Space",
    }
    path = write_json(tmp_path / "claude_desktop_config.json", config)
    extra = {"MARK": "-claude", "TOKEN": "tok-very-secret-1"}
    probe = cli("probe", "--mcp-config", str(path), "--json", env=extra)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert [row["id"] for row in json.loads(probe.stdout)["servers"]] == ["notes"]
    called = cli("tools", "call", "--mcp-config", str(path), "ping", env=extra)
    assert called.returncode == 0 and called.stdout == "pong-claude!\n", called.stderr


def test_cursor_file_with_a_remote_server_and_secret_headers(
    tmp_path: Path, remote: ServerProcess
) -> None:
    headers = {"Authorization": "Bearer ${env:API_TOKEN}"}
    config = {"mcpServers": {"web": {"url": remote.url, "headers": headers}, "loc": stdio()}}
    path = write_json(tmp_path / "mcp.json", config)
    env = {"API_TOKEN": "cursor-secret-token-42"}
    listed = cli("tools", "list", "--mcp-config", str(path), "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert {row["nodes"][0] for row in json.loads(listed.stdout)} == {"web", "loc"}
    called = cli("tools", "call", "--mcp-config", str(path), "--server", "web", "ping", env=env)
    assert called.returncode == 0 and called.stdout == "pong-http\n", called.stderr
    assert "cursor-secret-token-42" not in listed.stdout + listed.stderr


def test_vscode_jsonc_file_with_inputs_and_workspace_folder(tmp_path: Path) -> None:
    folder = tmp_path / ".vscode"
    folder.mkdir()
    (tmp_path / "res.py").write_text(RESOURCES_SERVER.read_text())
    # the server script imports its entry point from the fixture server next to it
    fixture = RESOURCES_SERVER.with_name("fixture_server.py")
    (tmp_path / "fixture_server.py").write_text(fixture.read_text())
    text = f"""\
    // VS Code keeps comments and trailing commas
    {{
      "inputs": [{{"type": "promptString", "id": "mark", "description": "A marker"}}],
      "servers": {{
        /* a local server */
        "res": {{
          "type": "stdio",
          "command": {json.dumps(sys.executable)},
          "args": ["${{workspaceFolder}}/res.py"],
          "env": {{"RES_MARKER": "${{input:mark}}"}},
        }},
      }},
    }}
    """
    path = folder / "mcp.json"
    path.write_text(textwrap.dedent(text))
    called = cli("tools", "call", "--mcp-config", str(path), "ping", "--var", "mark=-vscode")
    assert called.returncode == 0 and called.stdout == "pong-vscode\n", called.stderr
    unset = cli("tools", "list", "--mcp-config", str(path))
    assert unset.returncode == 3
    assert f"{path}:10:" in unset.stderr and "${input:mark}" in unset.stderr


def test_windsurf_file_with_server_url_over_sse(tmp_path: Path, sse: ServerProcess) -> None:
    config = {"mcpServers": {"events": {"serverUrl": sse.url, "type": "sse"}}}
    path = write_json(tmp_path / "mcp_config.json", config)
    called = cli("tools", "call", "--mcp-config", str(path), "ping")
    assert called.returncode == 0 and called.stdout == "pong-sse\n", called.stderr


def test_bad_file_reports_every_problem_located_exit_3(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "a": {"type": "websocket", "url": "ws://x"},
            "b": {"args": ["x"]},
            "c": {"command": 5},
            "d": {"url": "http://h/mcp", "headers": {"X": "${NOPE_UNSET}"}},
            "e": {"type": "sse", "url": "http://h/mcp"},
            "f": {"url": "ftp://h/mcp"},
        }
    }
    path = write_json(tmp_path / "bad.json", config)
    result = cli("probe", "--mcp-config", str(path), drop=("NOPE_UNSET",))
    assert result.returncode == 3 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("devall: error:")]
    expected = [
        (4, "type must be stdio, http or sse"),
        (7, "needs a 'command' (local) or a 'url' (remote)"),
        (13, "command must be text"),
        (18, "unresolved placeholder ${NOPE_UNSET}"),
        (22, "does not end in /sse"),
        (26, "server must be an http:// or https:// URL"),
    ]
    assert len(errors) == len(expected), result.stderr
    for line, (number, message) in zip(errors, expected, strict=True):
        assert line.startswith(f"devall: error: {path}:{number}:") and message in line


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"mcpServers": {', "invalid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"mcp": {}}', "no 'mcpServers'"),
        ('{"servers": {"a": "npx x"}}', "server 'a' must be a mapping"),
    ],
)
def test_unusable_files_are_config_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(text)
    result = cli("tools", "list", "--mcp-config", str(path))
    assert result.returncode == 3 and message in result.stderr, result.stderr
    assert result.stderr.count("\n") <= 3


def test_unknown_server_names_are_listed(tmp_path: Path) -> None:
    path = write_json(tmp_path / "mcp.json", {"mcpServers": {"a": stdio(), "b": stdio()}})
    result = cli("probe", "--mcp-config", str(path), "--server", "c")
    assert result.returncode == 2 and "no server 'c'" in result.stderr
    assert "servers: a, b" in result.stderr
    # A key that is not a safe id (`${NAME}`) is shown as its id, and may be named by it.
    odd = {"command": "no-such-command-for-devall"}
    path = write_json(tmp_path / "odd.json", {"mcpServers": {"${NAME}": odd, "b": odd}})
    result = cli("probe", "--mcp-config", str(path), "--server", "NAME", "--json")
    assert result.returncode == 1, result.stderr
    assert [s["id"] for s in json.loads(result.stdout)["servers"]] == ["NAME"]


def test_mcp_config_example_validates_and_runs(tmp_path: Path) -> None:
    example = str(EXAMPLES / "mcp_config_servers.yaml")
    python = f"PYTHON={sys.executable}"
    checked = cli("validate", example, "--var", python)
    assert checked.returncode == 0, checked.stderr
    ran = cli("run", example, "--var", python, "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("The die shows ")
    events = (tmp_path / "run" / "events.jsonl").read_text().splitlines()
    starting = [json.loads(e) for e in events if '"server.starting"' in e]
    assert [e["server_id"] for e in starting] == ["example"]


def test_mcp_config_problems_are_located_in_the_workflow_and_the_file(tmp_path: Path) -> None:
    write_json(tmp_path / "servers.json", {"mcpServers": {"a": stdio(), "b": {"command": 1}}})
    flow = tmp_path / "flow.yaml"
    flow.write_text(
        textwrap.dedent(
            """\
            graph:
              start: [n]
              nodes:
                - id: n
                  type: agent
                  config:
                    provider: scripted
                    name: s
                    script: [{content: done}]
                    tooling:
                      - type: mcp_config
                        config: {path: servers.json, servers: [a, zz]}
                      - type: mcp_config
                        config: {path: servers.json, servers: [b]}
            """
        )
    )
    result = cli("validate", str(flow))
    assert result.returncode == 3, result.stderr
    assert "flow.yaml:12:" in result.stderr and "no server 'zz'" in result.stderr
    assert "servers.json:10:" in result.stderr and "command must be text" in result.stderr
