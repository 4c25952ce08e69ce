"""Ctrl-C and SIGTERM during `devall run`: servers (and their children) go, result.json says so."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers import events
from tests.servers.serve import SERVERS_DIR, pid_gone

SPAWNER = SERVERS_DIR / "spawner_server.py"
DEVALL = Path(sys.executable).parent / "devall"


def alive(pid: int) -> bool:
    return not pid_gone(pid)


def wait_for(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_a_tool_call_tears_everything_down(
    tmp_path: Path, signum: int, code: int
) -> None:
    workflow = tmp_path / "wf.yaml"
    workflow.write_text(
        textwrap.dedent(
            f"""
            graph:
              id: sig
              start: [a]
              nodes:
                - id: a
                  type: agent
                  config:
                    provider: scripted
                    script:
                      - tool_calls: [{{name: slow, arguments: {{seconds: 60}}}}]
                      - content: never reached
                    tooling:
                      - type: mcp_local
                        config:
                          command: "{sys.executable}"
                          args: ["{SPAWNER}"]
                          wait_for_log: spawner server ready
            """
        )
    )
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [str(DEVALL), "run", str(workflow), "--out", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: any(e["kind"] == "tool.call" for e in events(run_dir)), 30)
        ready = next(e for e in events(run_dir) if e["kind"] == "server.ready")
        server_pid = int(ready["pid"])  # type: ignore[call-overload]
        log = next((run_dir / "servers").glob("*.log")).read_text()
        match = re.search(r"grandchild pid (\d+)", log)
        assert match, log
        grandchild = int(match.group(1))
        assert alive(server_pid) and alive(grandchild)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)  # a hang guard: the tool call takes a minute
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert "Traceback" not in err and "devall: error: " in err
    assert out == ""
    assert wait_for(lambda: not alive(server_pid) and not alive(grandchild), 30)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "interrupted" and result["exit_code"] == code
    assert events(run_dir)[-1]["kind"] == "run.finished"


def test_sigterm_during_tools_list_leaves_no_server(tmp_path: Path) -> None:
    workflow = tmp_path / "wf.yaml"
    workflow.write_text(
        textwrap.dedent(
            f"""
            graph:
              start: [a]
              nodes:
                - id: a
                  type: agent
                  config:
                    provider: scripted
                    script: [done]
                    tooling:
                      - type: mcp_local
                        config:
                          command: "{sys.executable}"
                          args: ["{SPAWNER}"]
                          wait_for_log: this line never comes
                          startup_timeout: 60
            """
        )
    )
    proc = subprocess.Popen(
        [str(DEVALL), "tools", "list", str(workflow)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        children: list[int] = []

        def spawned() -> bool:
            children[:] = [
                int(p.name)
                for p in Path("/proc").iterdir()
                if p.name.isdigit() and _ppid(int(p.name)) == proc.pid
            ]
            return bool(children)

        assert wait_for(spawned, 20)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert wait_for(lambda: not any(alive(pid) for pid in children), 30)


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def test_sigterm_while_an_async_function_blocks_its_thread(tmp_path: Path) -> None:
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "stuck.py").write_text(
        textwrap.dedent(
            '''
            import time


            async def stuck(seconds: float) -> str:
                """Block the thread for a long time."""
                time.sleep(seconds)
                return "woke up"
            '''
        )
    )
    workflow = tmp_path / "wf.yaml"
    workflow.write_text(
        textwrap.dedent(
            """
            graph:
              id: sig
              start: [a]
              nodes:
                - id: a
                  type: agent
                  config:
                    provider: scripted
                    script:
                      - tool_calls: [{name: stuck, arguments: {seconds: 120}}]
                      - content: never reached
                    tooling:
                      - type: function
                        config: {tools: [{name: stuck}], timeout: 300}
            """
        )
    )
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [str(DEVALL), "run", str(workflow), "--out", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: any(e["kind"] == "tool.call" for e in events(run_dir)), 30)
        time.sleep(0.3)  # the function is now inside its blocking call
        proc.send_signal(signal.SIGTERM)
        # A hang guard, well short of the two minutes the function blocks for.
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert "Traceback" not in err and out == ""
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "interrupted" and result["exit_code"] == 143


def test_a_sigterm_swallowed_before_the_loop_took_over_still_ends_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SIGTERM raises Terminated into whatever runs; inside an import's module-lock callback
    # Python only prints it. The early handler's flag must end the command all the same.
    import asyncio

    from devall_cli.cli import early
    from devall_cli.cli.common import run_async
    from devall_cli.errors import InterruptedRunError

    monkeypatch.setattr(early, "_TERMINATED", False)
    with pytest.raises(early.Terminated):
        early._on_sigterm(signal.SIGTERM, None)  # raised, and (as if) ignored
    assert early.terminated_early()
    seen: list[str] = []

    async def work() -> None:
        try:
            await asyncio.sleep(60)
            seen.append("finished")
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    with pytest.raises(InterruptedRunError) as caught:
        run_async(work())
    assert int(caught.value.exit_code) == 143 and "SIGTERM" in caught.value.message
    assert seen == ["cancelled"]
