"""`tools list`, `probe` and `run` spawn a workflow's local servers before the CLI is imported.

The command line is read by devall_cli/cli/early.py only as far as the workflow goes; every
other form is left to Typer. The spawned processes are adopted by the command, or torn down.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from devall_cli.cli.app import app
from devall_cli.cli.early import COMMANDS, GLOBAL_FLAGS, Invocation, read_command_line
from devall_cli.errors import ExitCode
from devall_cli.tools.head_start import HeadStart, close_kept, keep_for_later
from devall_cli.tools.plan import SourceContext, plan_sources
from devall_cli.workflow.loader import load_workflow
from tests.cli.test_head_start_cli import TRICKY, spied, tooling, write
from tests.conftest import REPO_ROOT
from tests.servers.serve import pid_gone


def entry(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`devall ARGS` through the console-script entry; `typer_before`: whether the CLI (Typer)
    was imported at each server spawn."""
    report = spied(tmp_path, *args, env=env, watch=("typer",), entry="early")
    report["typer_before"] = [bool(modules) for modules in report["spawns"]]
    return report


def workflow(tmp_path: Path) -> str:
    return str(write(tmp_path, tooling(TRICKY, "tricky server ready", "t")))


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["tools", "list"], "t_echo"),
        (["probe"], "tricky"),
        (["--no-color", "tools", "list"], "t_echo"),
        (["probe", "--json"], '"ok": true'),
        (["run", "--quiet", "--task", "hi"], "done"),
        (["tools", "call", "--args", '{"text": "hi"}', "WF", "t_echo"], "hi"),
    ],
    ids=["tools-list", "probe", "global-flag", "probe-json", "run", "tools-call"],
)
def test_the_server_is_spawned_before_the_cli_is_imported(
    tmp_path: Path, command: list[str], shown: str
) -> None:
    wf = workflow(tmp_path)
    args = [wf if arg == "WF" else arg for arg in command] if "WF" in command else [*command, wf]
    report = entry(tmp_path, *args)
    assert report["code"] == 0, report["stderr"]
    assert report["typer_before"] == [False]  # one spawn, and it came first
    assert shown in report["stdout"]
    assert all(pid_gone(pid) for pid in report["pids"])


def test_run_adopts_the_early_server_and_keeps_its_log(tmp_path: Path) -> None:
    report = entry(tmp_path, "run", "--quiet", "--task", "hi", workflow(tmp_path))
    assert report["code"] == 0, report["stderr"]
    assert report["typer_before"] == [False]  # spawned once, before the CLI: adopted
    [run_dir] = (tmp_path / "logs").iterdir()
    # The lines the server wrote before the run took it over are in its log and the trace.
    assert "tricky server ready" in (run_dir / "servers" / "t.log").read_text()
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    logged = [e["line"] for e in map(json.loads, lines) if e["kind"] == "server.log"]
    assert "tricky server ready" in logged


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["tools", "list", "WF", "--node", "a"], {}),
        (["tools", "call", "WF", "t_echo", "--node", "a", "--args", '{"text": "hi"}'], {}),
        (["tools", "list", "WF"], {"DEVALL_EARLY_START": "0"}),
    ],
    ids=["with-node", "tools-call-node", "turned-off"],
)
def test_other_forms_are_left_to_the_command(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    wf = workflow(tmp_path)
    report = entry(tmp_path, *(wf if a == "WF" else a for a in args), env=env)
    assert report["code"] == 0, report["stderr"]
    assert report["typer_before"] == [True]  # spawned by the command, as before


def test_a_usage_error_after_the_early_spawn_leaves_no_process(tmp_path: Path) -> None:
    report = entry(tmp_path, "probe", workflow(tmp_path), "--timeout", "soon")
    assert report["code"] == ExitCode.USAGE
    assert report["typer_before"] == [False]  # it was spawned early...
    assert report["pids"] and all(pid_gone(pid) for pid in report["pids"])  # ...and torn down
    assert "--timeout" in report["stderr"]


def test_a_workflow_that_does_not_load_is_reported_by_the_command(tmp_path: Path) -> None:
    report = entry(tmp_path, "tools", "list", workflow(tmp_path), "--env-file", "missing.env")
    assert report["code"] == ExitCode.CONFIG
    assert report["pids"] == []
    assert "missing.env" in report["stderr"]


async def test_a_process_kept_for_another_config_is_not_adopted_and_is_torn_down(
    tmp_path: Path,
) -> None:
    loaded = load_workflow(Path(workflow(tmp_path)), tools_only=True)
    plans = plan_sources(loaded).sources
    ctx = SourceContext(workflow_dir=loaded.directory, stop_at_once=True)
    ahead = HeadStart()
    assert await ahead.spawn(plans, ctx, import_client=False) == ["t"]
    kept = ahead.take("t")
    assert kept is not None and kept.pid is not None
    # Kept for the same source id but another config (the workflow changed in between).
    other = dataclasses.replace(plans[0].tooling.config, startup_timeout=31.0)
    keep_for_later("t", other, kept, 0.0)
    command = HeadStart()
    try:
        assert await command.spawn(plans, ctx, import_client=False) == ["t"]
        own = command.take("t")
        assert own is not None and own is not kept  # spawned anew, not adopted
        await own.close(graceful=False)
    finally:
        await command.close()
        await close_kept()
    assert pid_gone(kept.pid)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["tools", "list", "w.yaml"], Invocation(Path("w.yaml"), {}, None)),
        (
            ["--debug", "probe", "--var", "a=1", "--var=b=2", "w.yaml", "--env-file", "x.env"],
            Invocation(Path("w.yaml"), {"a": "1", "b": "2"}, Path("x.env")),
        ),
        (
            ["probe", "w.yaml", "--timeout=5", "--junit", "r.xml", "--json"],
            Invocation(Path("w.yaml"), {}, None),
        ),
        (["tools", "list", "--schema", "w.yaml"], Invocation(Path("w.yaml"), {}, None)),
        (
            ["tools", "call", "w.yaml", "t", "--args", "{}", "--json"],
            Invocation(Path("w.yaml"), {}, None),
        ),
        (
            ["run", "-q", "w.yaml", "--task", "hi", "--var", "a=1", "--sandbox=prefer"],
            Invocation(Path("w.yaml"), {"a": "1"}, None, "prefer"),
        ),
    ],
)
def test_plain_forms_are_read(argv: list[str], expected: Invocation) -> None:
    assert read_command_line(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["tools", "call", "w.yaml"],
        ["tools", "call", "w.yaml", "t", "--node", "a"],
        ["tools", "list", "w.yaml", "--node", "a"],
        ["tools", "list", "--url", "http://127.0.0.1:1/mcp"],
        ["probe", "--command", "python s.py"],
        ["probe", "--mcp-config", "m.json"],
        ["probe", "w.yaml", "--help"],
        ["probe", "-h", "w.yaml"],
        ["probe", "a.yaml", "b.yaml"],
        ["probe"],
        ["probe", "w.yaml", "--var", "novalue"],
        ["probe", "w.yaml", "--timeout"],
        ["--version", "probe", "w.yaml"],
        ["run", "w.yaml", "--replay", "c.jsonl"],
        ["run", "w.yaml", "--locked"],
        ["probe", "--", "w.yaml"],
    ],
)
def test_every_other_form_is_not_read(argv: list[str]) -> None:
    assert read_command_line(argv) is None


def test_the_options_read_are_those_the_commands_declare() -> None:
    group: Any = typer.main.get_command(app)
    declared_globals = {
        name: param.is_flag
        for param in group.params
        for name in param.opts
        if name.startswith("--")
    }
    assert all(declared_globals[name] for name in GLOBAL_FLAGS)
    for words, (valued, flags) in COMMANDS.items():
        command = group
        for word in words:
            command = command.commands[word]
        declared = {
            name: getattr(param, "is_flag", False)
            for param in command.params
            for name in getattr(param, "opts", ())
        }
        assert {name for name in valued if declared.get(name) is False} == set(valued)
        assert {name for name in flags if declared.get(name) is True} == set(flags)


# SIGTERM right after the early spawn, before the CLI is even imported; prints the pids spawned.
SIGTERM_EARLY = """
import asyncio, json, os, signal, sys
pids, real = [], asyncio.create_subprocess_exec

async def spy(*args, **kwargs):
    process = await real(*args, **kwargs)
    pids.append(process.pid)
    return process

asyncio.create_subprocess_exec = spy
sys.argv = ["devall", *sys.argv[1:]]
from devall_cli.cli import early
start = early.early_start

def start_then_sigterm(argv):
    start(argv)
    os.kill(os.getpid(), signal.SIGTERM)

early.early_start = start_then_sigterm
code = 0
try:
    early.main()
except SystemExit as exc:
    code = exc.code
print("@@" + json.dumps({"code": code, "pids": pids}), file=sys.stderr)
"""


def test_sigterm_before_the_command_takes_over_ends_devall_as_the_command_would(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SIGTERM_EARLY, "tools", "list", workflow(tmp_path)],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    shown, report = done.stderr.rsplit("@@", 1)
    outcome = json.loads(report)
    assert outcome["code"] == ExitCode.TERMINATED, done.stderr
    assert "devall: error: terminated (SIGTERM)" in shown
    assert "Traceback" not in shown
    assert outcome["pids"] and all(pid_gone(pid) for pid in outcome["pids"])
