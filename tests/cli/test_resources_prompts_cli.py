"""`devall resources ...` and `devall prompts ...` over stdio and HTTP, on a workflow or ad hoc."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.mcp_targets import RESOURCES_SERVER, local_command
from tests.helpers import cli
from tests.servers.resources_server import LOGO, NOTES
from tests.servers.serve import ServerProcess


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    with ServerProcess(RESOURCES_SERVER, args=["--marker=-http"]) as server:
        yield server


def two_servers(tmp_path: Path, url: str) -> Path:
    """Node `web` sees the HTTP server, node `loc` a local one: both serve memo://notes."""
    text = f"""
    graph:
      start: [web]
      nodes:
        - id: web
          type: agent
          config:
            provider: openai
            base_url: ${{BASE_URL}}
            api_key: ${{API_KEY}}
            name: m
            tooling:
              - type: mcp_remote
                config: {{server: "{url}"}}
        - id: loc
          type: agent
          config:
            provider: scripted
            name: s
            script: [{{content: done}}]
            tooling:
              - type: mcp_local
                config:
                  command: "{sys.executable}"
                  args: ["{RESOURCES_SERVER}", "--marker=-loc"]
    """
    path = tmp_path / "wf.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_resources_over_stdio_ad_hoc(tmp_path: Path, remote: ServerProcess) -> None:
    listed = cli("resources", "list", "--command", local_command(), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["server"], r["uri"], r["mimeType"]) for r in rows] == [
        ("resources_server", "memo://notes", "text/plain"),
        ("resources_server", "memo://logo.png", "image/png"),
    ]
    # Text, and a resource the server does not have, on the module's HTTP server.
    text = cli("resources", "read", "--url", remote.url, "memo://notes")
    assert text.returncode == 0 and text.stdout == NOTES + "-http\n", text.stderr
    binary = cli(
        "resources", "read", "--command", local_command(), "memo://logo.png", "--json", cwd=tmp_path
    )
    assert binary.returncode == 0, binary.stderr
    document = json.loads(binary.stdout)
    (block,) = document["contents"]
    assert block["type"] == "attachment" and block["mime_type"] == "image/png"
    assert (tmp_path / document["run_dir"] / block["path"]).read_bytes() == LOGO
    missing = cli("resources", "read", "--url", remote.url, "memo://nope")
    assert missing.returncode == 1 and "memo://nope" in missing.stderr


def test_a_server_without_resources_says_so_and_leaves_no_run_directory() -> None:
    command = local_command(RESOURCES_SERVER, "--no-resources")
    listed = cli("resources", "list", "--command", command)
    assert (listed.returncode, listed.stdout) == (0, ""), listed.stderr
    assert listed.stderr == (
        "devall: note: server 'resources_server' lists no resources (resource templates: 1; "
        f"see: devall resources templates --command '{command}')\n"
    )
    # A read that saves nothing leaves no run directory (its server log was all it held).
    read = cli("resources", "read", "--command", command, "memo://notes/a")
    assert (read.returncode, read.stdout) == (0, "note a\n"), read.stderr
    assert not Path("logs").exists()


def test_resources_of_a_workflow_by_node_over_http(tmp_path: Path, remote: ServerProcess) -> None:
    wf = str(two_servers(tmp_path, remote.url))
    drop = ("BASE_URL", "API_KEY")
    twice = cli("resources", "read", wf, "memo://notes", drop=drop)
    assert twice.returncode == 2 and "several servers" in twice.stderr, twice.stderr
    one = cli("resources", "read", wf, "memo://notes", "--node", "web", drop=drop)
    assert one.returncode == 0 and one.stdout == NOTES + "-http\n", one.stderr
    templates = cli("resources", "templates", wf, "--node", "loc", drop=drop)
    assert templates.returncode == 0, templates.stderr
    assert "memo://notes/{name}" in templates.stdout and "loc" not in templates.stderr


def test_prompts_list_and_get(tmp_path: Path, remote: ServerProcess) -> None:
    listed = cli("prompts", "list", "--url", remote.url)
    assert listed.returncode == 0, listed.stderr
    assert "greet" in listed.stdout and "name*, tone" in listed.stdout
    got = cli("prompts", "get", "--url", remote.url, "greet", "--args", '{"name": "Bo"}')
    assert got.returncode == 0 and got.stdout == "user: Greet Bo in a warm tone.-http\n"
    image = cli(
        "prompts", "get", "--command", local_command(), "show_logo", "--json", cwd=tmp_path
    )
    assert image.returncode == 0, image.stderr
    document = json.loads(image.stdout)
    roles = [(m["role"], m["content"]["type"]) for m in document["messages"]]
    assert roles == [("user", "text"), ("user", "attachment")]
    saved = tmp_path / document["run_dir"] / document["messages"][1]["content"]["path"]
    assert saved.read_bytes() == LOGO
    unknown = cli("prompts", "get", "--url", remote.url, "nope")
    assert unknown.returncode == 2 and "prompts: greet, show_logo" in unknown.stderr
