"""The `python` node: which code runs, where, with what, and what comes out (ChatDev's rules)."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from devall_cli import limits
from devall_cli.config.model import NodeConfig
from devall_cli.events import CodeFinishedEvent, CodeStartedEvent, EventBus
from devall_cli.messages import Message
from devall_cli.nodes.base import NodeRun
from devall_cli.nodes.python import PythonConfig, extract_code, failure_text, run_python
from devall_cli.procs.process_groups import live_child_pids
from tests.servers.serve import pid_gone
from tests.unit.engine.builders import Collector, FakeTools

FENCE = "```"


def node(node_id: str = "run", **settings: Any) -> NodeConfig:
    return NodeConfig(id=node_id, type="python", config=PythonConfig(**settings))


def visit(
    tmp_path: Path,
    config: NodeConfig,
    *texts: str,
    number: int = 1,
    extras: dict[str, Any] | None = None,
    bus: EventBus | None = None,
    path: str = "",
) -> NodeRun:
    return NodeRun(
        node=config,
        inputs=[Message(role="user", text=text, source="coder") for text in texts],
        visit=number,
        path=path or config.id,
        run_id="r1",
        emit=(bus or EventBus()).emit,
        tools=FakeTools(),
        make_provider=lambda *a: None,  # type: ignore[arg-type,return-value]
        state={},
        run_dir=tmp_path / "run",
        workflow_dir=tmp_path,
        extras=extras if extras is not None else {},
    )


async def output(tmp_path: Path, config: NodeConfig, *texts: str, **kwargs: Any) -> str:
    (message,) = await run_python(visit(tmp_path, config, *texts, **kwargs))
    assert message.role == "assistant"
    return message.text


def fenced(code: str, lang: str = "python") -> str:
    return f"Here you go:\n{FENCE}{lang}\n{code}\n{FENCE}\nThat is all."


# --- the code ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (fenced("    print(1)\n    print(2)"), "print(1)\nprint(2)"),
        (f"{FENCE}\nprint('bare fence')\n{FENCE}", "print('bare fence')"),
        (fenced("print('first')") + fenced("print('second')", "py"), "print('first')"),
        ("  print('no fence')\n", "print('no fence')"),
        ("   \n\t", ""),
    ],
    ids=["fenced_dedented", "fence_without_language", "first_block_wins", "bare", "blank"],
)
def test_the_code_is_the_first_fenced_block_else_the_whole_text(text: str, code: str) -> None:
    assert extract_code(text) == code


def test_the_failure_text_is_chatdevs() -> None:
    assert failure_text("Script execution failed", 2, "boom\n") == (
        "==CODE EXECUTION FAILED==\nScript execution failed\nexit_code=2\nstderr:\nboom\n"
    )
    assert failure_text("No executable code segment found") == (
        "==CODE EXECUTION FAILED==\nNo executable code segment found"
    )


# --- running it ----------------------------------------------------------------------------


async def test_stdout_of_the_latest_input_is_the_output(tmp_path: Path) -> None:
    text = await output(tmp_path, node(), "print('old')", fenced("print(6 * 7)"))
    assert text == "42\n"


async def test_bare_code_runs_in_the_workspace_with_chatdevs_variables(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import os
        print(os.getcwd())
        print(os.environ["MAC_CODE_WORKSPACE"], os.environ["MAC_NODE_ID"])
        print(os.path.basename(os.environ["MAC_CODE_SCRIPT"]))
        """
    )
    lines = (await output(tmp_path, node("calc"), code)).splitlines()
    workspace = str((tmp_path / "run" / "code_workspace").resolve())
    assert lines == [workspace, f"{workspace} calc", "calc.py"]
    assert (tmp_path / "run" / "code_workspace").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "run" / "code_workspace" / "calc.py").stat().st_mode & 0o777 == 0o600


async def test_later_scripts_of_a_node_are_named_run_n_and_the_workspace_is_shared(
    tmp_path: Path,
) -> None:
    extras: dict[str, Any] = {}
    write = "open('shared.txt', 'a').write('x'); print(open('shared.txt').read())"
    for number in (1, 2, 3):
        text = await output(tmp_path, node("w/x"), write, number=number, extras=extras)
        assert text == "x" * number + "\n"
    names = sorted(p.name for p in (tmp_path / "run" / "code_workspace").iterdir())
    assert names == ["shared.txt", "w_x.py", "w_x_run-2.py", "w_x_run-3.py"]


async def test_env_args_and_interpreter_are_used(tmp_path: Path) -> None:
    config = node(
        interpreter=sys.executable,
        args=("-X", "utf8"),
        env={"GREETING": "hello", "PATH": os.environ.get("PATH", "")},
    )
    code = "import os, sys; print(os.environ['GREETING'], sys.flags.utf8_mode)"
    assert await output(tmp_path, config, code) == "hello 1\n"


async def test_a_relative_interpreter_path_is_taken_from_the_workflow_folder(
    tmp_path: Path,
) -> None:
    (tmp_path / "bin").mkdir()
    wrapper = tmp_path / "bin" / "py"
    wrapper.write_text(f"#!/bin/sh\necho wrapped\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    assert await output(tmp_path, node(interpreter="bin/py"), "print('ran')") == "wrapped\nran\n"


async def test_a_failing_script_gives_chatdevs_message_with_exit_status_and_stderr(
    tmp_path: Path,
) -> None:
    bus = EventBus()
    events = Collector(bus)
    code = "import sys\nprint('partial')\nsys.exit('it broke')"
    text = await output(tmp_path, node(), code, bus=bus)
    assert text == (
        "==CODE EXECUTION FAILED==\nScript execution failed\nexit_code=1\nstderr:\nit broke\n"
    )
    (started,) = events.of(CodeStartedEvent)
    assert started.script == "code_workspace/run.py" and started.command[0] == sys.executable
    (finished,) = events.of(CodeFinishedEvent)
    assert (finished.status, finished.exit_code, finished.stderr) == ("failed", 1, "it broke\n")


async def test_no_code_and_a_missing_interpreter_are_failure_messages(tmp_path: Path) -> None:
    assert await output(tmp_path, node(), "  \n") == (
        "==CODE EXECUTION FAILED==\nNo executable code segment found"
    )
    assert await output(tmp_path, node(), fenced("")) == (
        "==CODE EXECUTION FAILED==\nNo executable code segment found"
    )
    missing = node(interpreter="no-such-python-here")
    assert await output(tmp_path, missing, "print(1)") == (
        "==CODE EXECUTION FAILED==\nInterpreter no-such-python-here not found"
    )
    assert not (tmp_path / "run" / "code_workspace" / "run_run-2.py").exists()


async def test_output_is_decoded_with_the_encoding_and_bad_bytes_are_replaced(
    tmp_path: Path,
) -> None:
    code = "import sys; sys.stdout.buffer.write('café'.encode('latin-1') + b'\\xff')"
    assert await output(tmp_path, node(encoding="latin-1"), code) == "caféÿ"
    assert await output(tmp_path, node(), code) == "caf\ufffd\ufffd"


async def test_output_past_the_limit_is_cut_with_a_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "CODE_OUTPUT_CHARS", 10)
    text = await output(tmp_path, node(), "print('x' * 100)")
    assert text == "x" * 10 + "…[truncated: 10 of 101 characters]"


# --- timeouts, cancellation, leftovers -----------------------------------------------------

SPAWNS = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open("pids.txt", "w").write(f"{child.pid}\\n")
print("started", flush=True)
print("working", file=sys.stderr, flush=True)
time.sleep(SECONDS)
"""


def pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "run" / "code_workspace" / "pids.txt"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def all_gone(numbers: list[int], within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(pid_gone(pid) for pid in numbers):
            return True
        time.sleep(0.05)
    return False


async def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    # The script would run a minute: the 1 s timeout ends it (30 s guards a hang).
    script = SPAWNS.replace("SECONDS", "60")
    text = await asyncio.wait_for(output(tmp_path, node(timeout_seconds=1), script), 30)
    assert text == "==CODE EXECUTION FAILED==\nScript did not finish within 1s\nstderr:\nworking\n"
    assert pids(tmp_path) and all_gone(pids(tmp_path))
    assert live_child_pids() == []


async def test_what_a_script_leaves_running_is_killed_when_it_ends(tmp_path: Path) -> None:
    assert await output(tmp_path, node(), SPAWNS.replace("SECONDS", "0")) == "started\n"
    assert pids(tmp_path) and all_gone(pids(tmp_path))


ESCAPES = """
import os, subprocess, sys
# A process in a session of its own, and a daemon that forks twice; the script exits at once.
away = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                        start_new_session=True)
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(write, f"{os.getpid()}\\n".encode())
        import time
        time.sleep(60)
    os._exit(0)
os.close(write)
daemon = int(os.read(read, 100).split()[0])
open("pids.txt", "w").write(f"{away.pid}\\n{daemon}\\n")
print("left behind", flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper is Linux's")
async def test_what_a_script_starts_outside_its_group_is_killed_too(tmp_path: Path) -> None:
    """A new session and a double-forked daemon: neither outlives the script's node."""
    assert await output(tmp_path, node(), ESCAPES) == "left behind\n"
    started = pids(tmp_path)
    assert len(started) == 2 and all_gone(started)
    assert live_child_pids() == []


async def test_a_script_slow_to_die_is_waited_for_and_then_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine a killed tree can outlast the output's drain: wait for it, then
    release the child, or the watcher process would run on for the rest of devall's life."""
    from devall_cli.procs import process_groups

    real = process_groups.tree_alive
    slow_until: list[float] = []

    def slow_tree_alive(pid: int) -> bool:
        if not slow_until:
            slow_until.append(time.monotonic() + 1.5)
        return time.monotonic() < slow_until[0] or real(pid)

    monkeypatch.setattr(process_groups, "tree_alive", slow_tree_alive)
    assert await output(tmp_path, node(), SPAWNS.replace("SECONDS", "0")) == "started\n"
    assert slow_until and time.monotonic() >= slow_until[0]
    assert live_child_pids() == []


async def test_cancelling_the_visit_kills_the_script(tmp_path: Path) -> None:
    code = SPAWNS.replace("SECONDS", "60")
    task = asyncio.ensure_future(run_python(visit(tmp_path, node(), code)))
    deadline = time.monotonic() + 10
    while not pids(tmp_path) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert pids(tmp_path)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all_gone(pids(tmp_path))
    assert live_child_pids() == []


# --- config --------------------------------------------------------------------------------


def test_config_defaults_and_chatdevs_lenient_forms(tmp_path: Path) -> None:
    from devall_cli.nodes import NODE_TYPES
    from devall_cli.workflow.loader import load_workflow

    (tmp_path / "flow.yaml").write_text(
        textwrap.dedent(
            """
            graph:
              start: [a]
              nodes:
                - {id: a, type: python}
                - id: b
                  type: python
                  config: {args: -u, env: {API_TOKEN: tok-python-node-1, LEVEL: 3}, encoding: ''}
              edges: [{from: a, to: b}]
            """
        )
    )
    flow = load_workflow(tmp_path / "flow.yaml", environ={})
    first, second = flow.graph.nodes[0].config, flow.graph.nodes[1].config
    assert first == PythonConfig(interpreter=sys.executable)
    assert (first.timeout_seconds, first.encoding, first.args) == (60, "utf-8", ())
    assert second.args == ("-u",) and second.encoding == "utf-8"
    assert dict(second.env) == {"API_TOKEN": "tok-python-node-1", "LEVEL": "3"}
    assert flow.redactor.text("tok-python-node-1 3") == "*** 3"
    python_type = NODE_TYPES.get("python")
    assert python_type is not None and python_type.serial
