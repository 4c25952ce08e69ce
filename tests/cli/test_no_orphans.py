"""No process devall started outlives it: not on `kill -9` of devall, not after a setsid.

A real `devall run` subprocess runs the spawner server, which starts one grandchild in its own
process group and (with `--detached`) one that calls `setsid` and so leaves that group.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_reliability_cli import invoke
from tests.cli.test_signals import DEVALL, SPAWNER, _ppid, alive, events, wait_for


def spawner_workflow(tmp_path: Path, script: str) -> Path:
    """One scripted agent using the spawner server with a detached grandchild."""
    path = tmp_path / "wf.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            graph:
              id: orphans
              start: [a]
              nodes:
                - id: a
                  type: agent
                  config:
                    provider: scripted
                    script: {script}
                    tooling:
                      - type: mcp_local
                        config:
                          command: "{sys.executable}"
                          args: ["{SPAWNER}", "--detached"]
                          wait_for_log: spawner server ready
            """
        )
    )
    return path


def grandchildren(run_dir: Path) -> tuple[int, int]:
    """The pids of the spawner's grandchild in its group and of the detached one, from its log."""
    log = next((run_dir / "servers").glob("*.log")).read_text()
    in_group = re.search(r"^grandchild pid (\d+)", log, re.MULTILINE)
    detached = re.search(r"^detached grandchild pid (\d+)", log, re.MULTILINE)
    assert in_group and detached, log
    return int(in_group.group(1)), int(detached.group(1))


@pytest.fixture
def devall_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """`devall run` in a subprocess, waiting in a 60 s tool call of the spawner server."""
    workflow = spawner_workflow(
        tmp_path, "[{tool_calls: [{name: slow, arguments: {seconds: 60}}]}, never reached]"
    )
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [str(DEVALL), "run", str(workflow), "--out", str(run_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert wait_for(lambda: any(e["kind"] == "tool.call" for e in events(run_dir)), 30)
        yield proc, run_dir
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def server_pid(run_dir: Path) -> int:
    ready = next(e for e in events(run_dir) if e["kind"] == "server.ready")
    return int(ready["pid"])  # type: ignore[call-overload]


def test_kill_9_of_devall_takes_the_server_and_every_grandchild_along(
    devall_run: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, run_dir = devall_run
    server = server_pid(run_dir)
    in_group, detached = grandchildren(run_dir)
    assert all(alive(pid) for pid in (server, in_group, detached))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert wait_for(lambda: not any(alive(p) for p in (server, in_group, detached)), 30), [
        (pid, alive(pid)) for pid in (server, in_group, detached)
    ]


def test_a_server_ignoring_eof_and_sigterm_dies_with_devall_even_without_the_watcher(
    tmp_path: Path,
) -> None:
    # The stubborn server says it is ready but never answers the handshake, ignores the end of
    # its stdin and SIGTERM: only the kernel (PR_SET_PDEATHSIG) can take it along.
    workflow = tmp_path / "wf.yaml"
    tooling = {
        "command": sys.executable,
        "args": [str(SPAWNER.parent / "stubborn_server.py")],
        "wait_for_log": "stubborn server ready",
        "startup_timeout": 60,
    }
    node = {
        "provider": "scripted",
        "script": ["x"],
        "tooling": [{"type": "mcp_local", "config": tooling}],
    }
    document = {"graph": {"start": ["a"], "nodes": [{"id": "a", "type": "agent", "config": node}]}}
    workflow.write_text(json.dumps(document))
    proc = subprocess.Popen(
        [str(DEVALL), "tools", "list", str(workflow)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    servers: list[int] = []

    def started() -> bool:
        servers[:] = children_of(proc.pid, "stubborn_server.py")
        return bool(servers)

    try:
        assert wait_for(started, 20)
        (server,) = servers
        for pid in children_of(proc.pid):  # devall's watcher goes first: only the kernel is left
            if pid != server:
                os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
        assert wait_for(lambda: not alive(server), 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in servers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # does something only when the test failed


def children_of(parent: int, marker: str = "") -> list[int]:
    """The live children of `parent` whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _ppid(int(entry.name)) == parent and alive(int(entry.name)):
            with contextlib.suppress(OSError):
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
    return found


def test_a_grandchild_that_left_the_process_group_goes_when_the_run_ends(tmp_path: Path) -> None:
    code, _, err = invoke("run", str(spawner_workflow(tmp_path, "[done]")), "--out", "run")
    assert code == 0, err
    in_group, detached = grandchildren(Path("run"))
    assert wait_for(lambda: not alive(in_group) and not alive(detached), 30)
