"""`sandbox:` through the real CLI: what a confined local server and python node cannot do.

The same probe server runs confined and unconfined in one run, so each denial is shown to be the
sandbox's: unconfined, every attempt succeeds. The home file lies under a HOME the test gives
devall, the port is one the test listens on. Where bubblewrap cannot run, the tests that need it
are skipped; those of a missing bwrap run everywhere (PATH without it).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devall_cli.procs.sandbox import bwrap_problem, sandbox_available
from tests.helpers import cli, events
from tests.servers.serve import SERVERS_DIR

PROBE = SERVERS_DIR / "sandbox_probe_server.py"
needs_bwrap = pytest.mark.skipif(
    not sandbox_available(), reason=f"bubblewrap cannot sandbox here: {bwrap_problem()}"
)


def server(prefix: str, **settings: Any) -> dict[str, Any]:
    config = {
        "command": sys.executable,
        "args": [str(PROBE)],
        "wait_for_log": "ready",
        **settings,
    }
    return {"type": "mcp_local", "prefix": prefix, "config": config}


def write_workflow(folder: Path, nodes: list[dict[str, Any]], edges: Any = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    graph = {"id": "box", "start": [nodes[0]["id"]], "nodes": nodes, "edges": list(edges)}
    path = folder / "flow.yaml"
    path.write_text(json.dumps({"graph": graph}, indent=1))  # JSON is YAML
    return path


def agent(calls: list[dict[str, Any]], *tooling: dict[str, Any]) -> dict[str, Any]:
    script = [*([{"tool_calls": calls}] if calls else []), {"content": "done"}]
    config = {"provider": "scripted", "script": script, "tooling": list(tooling)}
    return {"id": "a", "type": "agent", "config": config}


def results(run_dir: Path) -> dict[str, str]:
    """Each tool's answer in the run, by final tool name."""
    return {e["tool"]: e["blocks"][0]["text"] for e in events(run_dir, "tool.result")}


@pytest.fixture
def listener() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


@needs_bwrap
def test_a_sandboxed_server_cannot_write_read_home_or_connect_but_works(
    tmp_path: Path, listener: int
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("the home secret")
    flow = tmp_path / "flow"
    (flow / "work").mkdir(parents=True)
    escaped = flow / "escaped-{}.txt"
    calls = [{"name": "boxed_echo", "arguments": {"text": "still answers"}}]
    for who in ("boxed", "free"):
        calls += [
            {"name": f"{who}_write_outside", "arguments": {"path": str(escaped).format(who)}},
            {"name": f"{who}_read_file", "arguments": {"path": str(home / "secret.txt")}},
            {"name": f"{who}_connect", "arguments": {"port": listener}},
        ]
    boxed = server("boxed", cwd="work", sandbox=True)
    wf = write_workflow(flow, [agent(calls, boxed, server("free"))])
    done = cli("run", str(wf), "--out", str(tmp_path / "run"), env={"HOME": str(home)})
    assert done.returncode == 0, done.stderr
    said = results(tmp_path / "run")
    assert said["boxed_echo"] == "still answers"
    assert said["boxed_write_outside"] == "denied: Read-only file system"
    assert said["boxed_read_file"] == "denied: No such file or directory"
    assert said["boxed_connect"] == "denied: Connection refused"
    assert not (flow / "escaped-boxed.txt").exists()
    # Unconfined, the same server does all three: the denials above are the sandbox's.
    assert said["free_write_outside"] == "ok wrote"
    assert said["free_read_file"] == "ok read the home secret"
    assert said["free_connect"] == "ok connected"
    ready = {e["server_id"]: e["sandbox"] for e in events(tmp_path / "run", "server.ready")}
    assert ready["boxed"] is not None and ready["free"] is None
    assert ready["boxed"]["active"] is True and ready["boxed"]["network"] is False
    assert ready["boxed"]["writable"] == [str(flow / "work")]
    assert "HOME" in ready["boxed"]["env"] and str(flow) in ready["boxed"]["readable"]


@needs_bwrap
def test_a_sandboxed_python_node_writes_only_in_its_workspace(tmp_path: Path) -> None:
    flow = tmp_path / "flow"
    outside = flow / "outside.txt"
    code = (
        "open('inside.txt', 'w').write('in')\n"
        "try:\n"
        f"    open({str(outside)!r}, 'w').write('out')\n"
        "    print('wrote outside')\n"
        "except OSError as exc:\n"
        "    print('denied:', exc.strerror)\n"
    )
    nodes = [
        {"id": "code", "type": "literal", "config": {"content": code}},
        {"id": "run", "type": "python", "config": {"sandbox": True}},
    ]
    wf = write_workflow(flow, nodes, [{"from": "code", "to": "run"}])
    run_dir = tmp_path / "run"
    done = cli("run", str(wf), "--out", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "denied: Read-only file system\n"
    assert not outside.exists()
    assert (run_dir / "code_workspace" / "inside.txt").read_text() == "in"
    (started,) = events(run_dir, "code.started")
    assert started["sandbox"]["active"] is True
    assert started["sandbox"]["writable"] == [str((run_dir / "code_workspace").resolve())]


def test_a_required_sandbox_without_bwrap_fails_and_says_how_to_fix_it(tmp_path: Path) -> None:
    no_bwrap = {"PATH": str(tmp_path / "empty")}
    wf = write_workflow(tmp_path / "flow", [agent([], server("boxed", sandbox=True))])
    done = cli("tools", "call", str(wf), "boxed_echo", "--args", '{"text": "x"}', env=no_bwrap)
    assert done.returncode == 4, done.stderr
    assert "server 'boxed' must run sandboxed, but bwrap not found on PATH" in done.stderr
    assert "apt-get install bubblewrap" in done.stderr and "sandbox: prefer" in done.stderr
    assert "Traceback" not in done.stderr
    nodes = [
        {"id": "code", "type": "literal", "config": {"content": "print('ran')"}},
        {"id": "run", "type": "python", "config": {"sandbox": "require"}},
    ]
    wf = write_workflow(tmp_path / "py", nodes, [{"from": "code", "to": "run"}])
    done = cli("run", str(wf), "--out", str(tmp_path / "run"), env=no_bwrap)
    assert done.returncode == 4, done.stderr
    assert "node 'run' must run sandboxed, but bwrap not found on PATH" in done.stderr
    assert "ran" not in done.stdout


def test_prefer_without_bwrap_runs_unconfined_and_says_so(tmp_path: Path) -> None:
    tooling = server("boxed", sandbox={"mode": "prefer"})
    wf = write_workflow(tmp_path / "flow", [agent([], tooling)])
    run_dir = tmp_path / "run"
    args = ("tools", "call", str(wf), "boxed_echo", "--args", '{"text": "hi"}', "--json")
    done = cli(*args, "--out", str(run_dir), env={"PATH": str(tmp_path / "empty")})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["blocks"][0]["text"] == "hi"
    (ready,) = events(run_dir, "server.ready")
    reason = "bwrap not found on PATH"
    assert ready["sandbox"] == {"active": False, "mode": "prefer", "reason": reason}
    log = (run_dir / "servers" / "boxed.log").read_text()
    assert f"server 'boxed' runs unconfined: {reason} (sandbox: prefer)" in log
