"""The sandbox setting and bwrap's command line: what a child sees, is given and may write."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from devall_cli.cli.early import read_command_line
from devall_cli.errors import UsageError
from devall_cli.procs.sandbox import (
    SANDBOX_OFF,
    Sandbox,
    SandboxConfig,
    default_sandbox,
    effective_sandbox,
    set_default_sandbox,
)
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.workflow.json_schema import workflow_schema
from devall_cli.workflow.loader import validate_workflow


@pytest.fixture
def cli_default() -> Iterator[None]:
    """The CLI default is process-wide: put it back after the test."""
    before = default_sandbox()
    yield
    set_default_sandbox(before)


def test_the_cli_default_applies_only_where_no_sandbox_is_set(cli_default: None) -> None:
    assert effective_sandbox(None) is None  # off unless asked
    set_default_sandbox("require")
    assert effective_sandbox(None) == SandboxConfig(mode="require")
    assert effective_sandbox(SANDBOX_OFF) is None  # `sandbox: false` stays off
    own = SandboxConfig(mode="prefer", network=True)
    assert effective_sandbox(own) is own
    set_default_sandbox(None)
    assert effective_sandbox(None) is None
    with pytest.raises(UsageError, match="off, prefer or require"):
        set_default_sandbox("strict")


def test_early_start_reads_sandbox_as_the_command_would() -> None:
    invocation = read_command_line(["probe", "w.yaml", "--sandbox", "require"])
    assert invocation is not None and invocation.sandbox == "require"
    invocation = read_command_line(["tools", "list", "--sandbox=prefer", "w.yaml"])
    assert invocation is not None and invocation.sandbox == "prefer"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder holding a virtualenv, a server script and a workflow."""
    folder = tmp_path / "home"
    for name in ("venv/bin", "servers", "flows/work", ".ssh"):
        (folder / name).mkdir(parents=True)
    for name in ("venv/bin/python", "servers/server.py", ".ssh/id_rsa"):
        (folder / name).write_text("")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def binds(args: list[str]) -> dict[str, str]:
    """Each bound path and how: `ro` or `rw`; hidden folders as `tmpfs`."""
    found: dict[str, str] = {}
    for index, arg in enumerate(args):
        if arg in ("--ro-bind-try", "--bind-try"):
            found[args[index + 1]] = "ro" if arg == "--ro-bind-try" else "rw"
        elif arg == "--tmpfs":
            found[args[index + 1]] = "tmpfs"
    return found


def test_home_is_hidden_and_only_what_the_child_needs_comes_back(home: Path) -> None:
    box = Sandbox(
        SandboxConfig(read=(str(home / ".ssh" / "id_rsa"),), write=("/srv/out",)),
        workdir=str(home / "flows" / "work"),
        program=str(home / "venv" / "bin" / "python"),
        script=str(home / "servers" / "server.py"),
        workflow_dir=str(home / "flows"),
    )
    args = box.arguments()
    assert args[:8] == ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs"]
    shown = binds(args)
    assert shown["/tmp"] == "tmpfs" and shown["/root"] == "tmpfs"  # the test's home is in /tmp
    assert shown[str(home / "venv")] == "ro"  # the program's prefix, not only bin/
    assert shown[str(home / "servers")] == "ro"
    assert shown[str(home / "flows")] == "ro"
    assert shown[str(home / "flows" / "work")] == "rw"
    assert shown[str(home / ".ssh" / "id_rsa")] == "ro"  # named in `read:`
    assert shown["/srv/out"] == "rw"
    assert str(home / ".ssh") not in shown
    # A path inside another is bound after it, so that it keeps its own mode.
    assert args.index(str(home / "flows" / "work")) > args.index(str(home / "flows"))
    assert args[-5:-3] == ["--unshare-all", "--die-with-parent"]
    assert args[-3:] == ["--chdir", str(home / "flows" / "work"), "--"]
    assert "--share-net" not in args and "--new-session" not in args


def test_a_working_directory_that_would_show_home_whole_is_not_bound(home: Path) -> None:
    box = Sandbox(SandboxConfig(network=True), workdir=str(home), program="/usr/bin/python3")
    args = box.arguments()
    assert str(home) not in binds(args) and box.writable == []
    assert "--share-net" in args


def test_the_child_gets_an_allow_list_of_the_environment_and_a_private_home(home: Path) -> None:
    box = Sandbox(SandboxConfig(env=("WANTED",)), workdir="/", program="/usr/bin/python3")
    env = {"PATH": "/usr/bin", "API_KEY": "sk-x", "WANTED": "1", "OWN": "2", "HOME": str(home)}
    assert box.environment(env, own=["OWN"]) == {
        "PATH": "/usr/bin",
        "WANTED": "1",
        "OWN": "2",
        "HOME": str(home),  # the path of the (hidden, empty) home
    }


def write_flow(folder: Path, tooling: Sequence[object], python: object = None) -> Path:
    agent = {"provider": "scripted", "script": ["ok"], "tooling": list(tooling)}
    nodes: list[dict[str, object]] = [{"id": "a", "type": "agent", "config": agent}]
    if python is not None:
        nodes.append({"id": "p", "type": "python", "config": {"sandbox": python}})
    path = folder / "flow.yaml"
    path.write_text(json.dumps({"graph": {"start": ["a"], "nodes": nodes}}, indent=1))
    return path


SERVER = {"command": "python3", "args": ["s.py"]}


def test_a_sandbox_mapping_parses_with_paths_from_the_workflows_folder(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    setting = {"network": True, "env": ["TOKEN"], "read": ["data"], "write": ["~"]}
    tooling = [{"type": "mcp_local", "config": {**SERVER, "sandbox": setting}}]
    workflow, issues = validate_workflow(write_flow(tmp_path, tooling, "prefer"), environ={})
    assert workflow is not None, issues
    assert workflow.graph.nodes[0].config.tooling[0].config.sandbox == SandboxConfig(
        mode="require",
        network=True,
        env=("TOKEN",),
        read=(str(tmp_path / "data"),),
        write=(os.path.expanduser("~"),),
    )
    assert workflow.graph.nodes[1].config.sandbox == SandboxConfig(mode="prefer")


def test_bad_sandbox_settings_are_located(tmp_path: Path) -> None:
    bad = {"mode": "never", "env": ["NOT A NAME"], "writes": []}
    tooling = [
        {"type": "mcp_local", "config": {**SERVER, "sandbox": bad}},
        {"type": "mcp_local", "config": {**SERVER, "sandbox": 3}},
    ]
    _, issues = validate_workflow(write_flow(tmp_path, tooling, [True]), environ={})
    errors = {i.path: i for i in issues if i.severity == "error"}
    where = "graph.nodes[0].config.tooling"
    assert set(errors) == {
        f"{where}[0].config.sandbox.mode",
        f"{where}[0].config.sandbox.env[0]",
        f"{where}[0].config.sandbox.writes",
        f"{where}[1].config.sandbox",
        "graph.nodes[1].config.sandbox",
    }
    mode = errors[f"{where}[0].config.sandbox.mode"]
    assert mode.message == "mode must be require or prefer, got 'never' (text)"
    assert all(issue.line for issue in errors.values())  # each points at its spot in the file


def test_a_sandbox_setting_is_part_of_a_local_servers_identity() -> None:
    plain = McpLocalConfig(command="python3")
    boxed = McpLocalConfig(command="python3", sandbox=SandboxConfig())
    assert plain.identity() != boxed.identity()


def test_the_schema_offers_sandbox_on_local_servers_and_python_nodes() -> None:
    schema = workflow_schema()
    text = json.dumps(schema)
    assert text.count('"network"') >= 2
    node_types = schema["$defs"]["node"]["allOf"]
    python = next(b for b in node_types if b["if"]["properties"]["type"]["const"] == "python")
    sandbox = python["then"]["properties"]["config"]["properties"]["sandbox"]
    assert sandbox["anyOf"][1]["properties"]["mode"] == {"enum": ["require", "prefer"]}
