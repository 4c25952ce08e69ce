"""`devall resources ...` and `devall prompts ...` over stdio and HTTP, on a workflow or ad hoc."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.mcp_targets import RESOURCES_SERVER, local_command
from tests.helpers import cli, devall
from tests.servers.resources_server import LOGO, NOTES
from tests.servers.serve import ServerProcess

UPDATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z memo://counter")


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the HTTP server writes the subscriptions it sees."""
    return tmp_path_factory.mktemp("remote") / "record.txt"


@pytest.fixture(scope="module")
def remote(record: Path) -> Iterator[ServerProcess]:
    """The HTTP server, at the older protocol (resources/subscribe, not subscriptions/listen)."""
    args = ["--marker=-http", "--legacy", f"--record={record}"]
    with ServerProcess(RESOURCES_SERVER, args=args) as server:
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
        ("resources_server", "memo://counter", "text/plain"),
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
    command = local_command(RESOURCES_SERVER, "--no-resources", "--plain")
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
    # Without the capabilities: one line each, exit 1.
    watch = cli("resources", "watch", "--command", command, "memo://notes/a", "--timeout", "9")
    assert (watch.returncode, watch.stdout) == (1, ""), watch.stderr
    assert watch.stderr == (
        f"devall: error: MCP server 'resources_server' ({command}) does not offer resource "
        "subscriptions (its `resources` capability has no `subscribe`)\n"
    )
    template = ["resources", "read", "--command", command, "memo://notes/{name}"]
    values = cli(*template, "--complete", "name")
    assert values.returncode == 1 and "does not offer completions" in values.stderr


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


def test_completion_of_prompt_arguments_and_template_variables(remote: ServerProcess) -> None:
    tones = cli("prompts", "get", "--url", remote.url, "greet", "--complete", "tone=w")
    assert (tones.returncode, tones.stdout) == (0, "warm\nwry\n"), tones.stderr
    names = ["resources", "read", "--url", remote.url, "memo://notes/{name}"]
    listed = cli(*names, "--complete", "name=al", "--json")
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    assert (document["uriTemplate"], document["values"]) == ("memo://notes/{name}", ["alpha"])
    # A variable left out: the server's values in the error; given: the resource.
    missing = cli(*names)
    assert missing.returncode == 2, missing.stderr
    assert "give --arg name=VALUE (the server suggests: a, alpha, beta)" in missing.stderr
    filled = cli(*names, "--arg", "name=beta")
    assert (filled.returncode, filled.stdout) == (0, "note beta-http\n"), filled.stderr
    unnamed = cli("prompts", "get", "--url", remote.url, "greet", "--arg", "tone=wry")
    assert unnamed.returncode == 2 and "needs argument 'name'" in unnamed.stderr
    # The shell completes an argument's value from the server's suggestions.
    words = f"devall prompts get --url {remote.url} greet --arg name=Bo --arg tone=w"
    env = {"_DEVALL_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": "9"}
    shell = devall(env=env)
    assert shell.stdout.split() == ["tone=warm", "tone=wry"], shell.stderr


def test_watch_prints_updates_until_its_timeout_and_unsubscribes(
    tmp_path: Path, remote: ServerProcess, record: Path
) -> None:
    # 2026-07-28 over stdio: one subscriptions/listen stream, each update read again (--read).
    seen = tmp_path / "seen.txt"
    command = local_command(RESOURCES_SERVER, f"--record={seen}")
    watch = ["resources", "watch", "memo://counter", "--timeout", "3"]
    modern = cli(*watch, "--command", command, "--json", "--read")
    assert modern.returncode == 0, modern.stderr
    lines = [json.loads(line) for line in modern.stdout.splitlines()]
    assert lines and all(line["uri"] == "memo://counter" for line in lines), modern.stdout
    assert lines[0]["contents"][0]["text"].startswith("count ")
    assert seen.read_text() == "listen memo://counter\nlisten ended\n"
    # The older protocol over HTTP: resources/subscribe, and resources/unsubscribe at the end.
    older = cli(*watch, "--url", remote.url)
    assert older.returncode == 0, older.stderr
    printed = older.stdout.splitlines()
    assert printed and all(UPDATE.fullmatch(line) for line in printed), older.stdout
    assert record.read_text() == "subscribe memo://counter\nunsubscribe memo://counter\n"
