"""The plain entry of `devall validate` / `--version`, and what validating a workflow imports.

Each check runs the console-script entry in a fresh interpreter, which notes at exit the modules
it imported in a file of its own (stdout and stderr stay the command's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / "workflows"
DEMO = WORKFLOWS / "demo_offline.yaml"
INVALID = REPO / "tests" / "data" / "invalid" / "duplicate_key.yaml"
# Runs `devall ARGV` as the console script does; at exit writes the modules it imported.
_ENTRY = """
import atexit, json, sys
noted, sys.argv = sys.argv[1], ["devall", *sys.argv[2:]]
atexit.register(lambda: open(noted, "w").write(json.dumps(sorted(sys.modules))))
from devall_cli.cli.early import main
main()
"""
# What runs a workflow, never what reads one: none may be imported to validate.
RUNTIME = (
    "asyncio",
    "typer",
    "rich",
    "pydantic",
    "fastmcp",
    "mcp",
    "httpx",
    "httpx2",
    "devall_cli.events",
    "devall_cli.cassette",
    "devall_cli.engine.graph",
    "devall_cli.engine.runner",
    "devall_cli.engine.session",
    "devall_cli.nodes.agent",
    "devall_cli.nodes.agent_calls",
    "devall_cli.nodes.python_run",
    "devall_cli.nodes.code_process",
    "devall_cli.nodes.human_input",
    "devall_cli.providers.http_client",
    "devall_cli.providers.openai",
    "devall_cli.providers.anthropic_client",
    "devall_cli.providers.gemini_client",
    "devall_cli.procs.process_groups",
    "devall_cli.procs.parent_death",
    "devall_cli.memory.bank",
    "devall_cli.skills.tools",
    "devall_cli.tools.manager",
    "devall_cli.tools.mcp_session",
    "devall_cli.tools.mcp_direct",
    "devall_cli.tools.stdio_process",
)


def run_entry(
    tmp_path: Path, *args: str, plain: bool = True, cwd: Path = REPO
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`devall ARGS` through the console-script entry; the result and the modules imported."""
    noted = tmp_path / f"modules-{plain}.json"
    env = {**os.environ, "NO_COLOR": "1", "DEVALL_EARLY_START": "1" if plain else "0"}
    for name in ("API_KEY", "BASE_URL"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", _ENTRY, str(noted), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )
    return done, json.loads(noted.read_text())


def builtin(kinds: Mapping[str, Any]) -> set[str]:
    """The names of devall's own kinds (not those a test registered for itself)."""
    own = {n: getattr(kind.parse, "__module__", "") or "" for n, kind in kinds.items()}
    return {name for name, module in own.items() if module.startswith("devall_cli.")}


def test_validating_every_kind_imports_no_runtime(tmp_path: Path) -> None:
    from devall_cli.nodes import NODE_TYPES
    from devall_cli.tools.kinds.registry import TOOLING_TYPES

    files = sorted(WORKFLOWS.glob("*.yaml")) + sorted(WORKFLOWS.glob("examples/*.yaml"))
    files.append(REPO / "tests/data/chatdev_checkout/yaml_instance/files_flow.yaml")
    done, modules = run_entry(tmp_path, "validate", "--allow-unset", "--json", *map(str, files))
    assert done.returncode == 0, done.stderr
    nodes = [n for d in json.loads(done.stdout) for n in d["summary"]["nodes"]]
    assert {n["type"] for n in nodes} == builtin(NODE_TYPES.all())
    tooling = {t["type"] for n in nodes for t in n["tooling"]}
    assert tooling == builtin(TOOLING_TYPES.all())  # an mcp_config entry keeps its type
    imported = [m for m in modules if any(m == r or m.startswith(r + ".") for r in RUNTIME)]
    assert imported == []


def test_plain_validate_prints_what_the_typer_command_prints(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("graph:\n  start: [a]\n  nodes: [{id: a, type: x}]\n")
    cases = [
        ("validate", str(DEMO)),
        ("--no-color", "validate", "--json", str(DEMO), "--var", "NAME=x"),
        ("validate", str(INVALID), str(DEMO)),
        ("validate", "--json", str(broken)),
    ]
    for args in cases:
        plain, plain_modules = run_entry(tmp_path, *args)
        typer, typer_modules = run_entry(tmp_path, *args, plain=False)
        assert (plain.returncode, plain.stdout, plain.stderr) == (
            typer.returncode,
            typer.stdout,
            typer.stderr,
        ), args
        assert "typer" not in plain_modules and "typer" in typer_modules, args
    assert plain.returncode == 3
    invalid, _ = run_entry(tmp_path, "validate", str(INVALID))
    assert invalid.returncode == 3
    assert invalid.stderr.startswith(f"devall: error: {INVALID}:7:7: duplicate key")


def test_what_the_plain_entry_does_not_read_is_left_to_typer(tmp_path: Path) -> None:
    version, modules = run_entry(tmp_path, "--version")
    assert (version.returncode, version.stdout) == (0, "devall 0.1.0\n")
    assert "typer" not in modules
    for args in (("validate", str(DEMO), "--var", "broken"), ("validate", "--help")):
        done, modules = run_entry(tmp_path, *args)
        assert "typer" in modules, args
    assert done.returncode == 0 and "--allow-unset" in done.stdout
