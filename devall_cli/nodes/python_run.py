"""A visit of a `python` node: write the script into the run's workspace, run it, output what
it printed (the descriptor and config are `python.py`'s; see its docstring)."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from devall_cli.errors import RunFailedError
from devall_cli.events import CodeFinishedEvent, CodeStartedEvent
from devall_cli.messages import ASSISTANT, Message
from devall_cli.nodes.base import NodeRun
from devall_cli.nodes.code_process import ScriptOutcome, run_script
from devall_cli.nodes.python import PythonConfig, extract_code, failure_text
from devall_cli.procs.sandbox import Sandbox, effective_sandbox
from devall_cli.run_files import CODE_WORKSPACE, open_run_file, write_failure

WORKSPACE = CODE_WORKSPACE
_SCRIPTS = "python_scripts"  # NodeRun.extras: scripts written so far, by node path
_UNSAFE = re.compile(r"[^0-9A-Za-z_\-]")


async def run_python(run: NodeRun) -> list[Message]:
    """Write the code of the latest input to the workspace, run it, output stdout or the failure."""
    config: PythonConfig = run.node.config
    workspace = _workspace(run)
    code = extract_code(run.inputs[-1].text) if run.inputs else ""
    meta: dict[str, Any] = {"workspace": str(workspace)}
    if not code:
        _finished(run, "", ScriptOutcome("no_code"), 0.0)
        text = failure_text("No executable code segment found")
        return [Message(role=ASSISTANT, text=text, meta=meta)]
    script = _write_script(run, workspace, code)
    shown = _shown(run, script)
    command = [_interpreter(run, config), *config.args, str(script)]
    env = _environment(run, config, workspace, script)
    prefix, env, sandbox = _confined(run, config, command, env, workspace)
    run.emit(
        CodeStartedEvent(
            run_id=run.run_id,
            node_id=run.path,
            visit=run.visit,
            script=shown,
            command=command,
            sandbox=sandbox,
        )
    )
    started = time.monotonic()
    outcome = await run_script(
        command,
        cwd=str(workspace),
        env=env,
        timeout=config.timeout_seconds,
        encoding=config.encoding,
        prefix=prefix,
    )
    _finished(run, shown, outcome, started)
    meta.update(script_path=str(script), exit_code=outcome.exit_code)
    if outcome.status == "ok":
        return [Message(role=ASSISTANT, text=outcome.stdout, meta=meta)]
    error = outcome.error or "Script execution failed"
    text = failure_text(error, outcome.exit_code, outcome.stderr)
    return [Message(role=ASSISTANT, text=text, meta=meta)]


def _workspace(run: NodeRun) -> Path:
    """`<run dir>/code_workspace`, shared by the python nodes of the run; created 0700."""
    if run.run_dir is None:
        raise RunFailedError(f"node '{run.path}': a python node needs a run directory")
    workspace = Path(run.run_dir) / WORKSPACE
    try:
        workspace.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise RunFailedError(f"node '{run.path}': {write_failure(workspace, exc)}") from None
    return workspace.resolve()


def _write_script(run: NodeRun, workspace: Path, code: str) -> Path:
    """`<node>.py`, then `<node>_run-2.py`, ... (ChatDev's names), written afresh, mode 0600."""
    counts: dict[str, int] = run.extras.setdefault(_SCRIPTS, {})
    count = counts.get(run.path, 0) + 1
    counts[run.path] = count
    name = _UNSAFE.sub("_", run.path) + (f"_run-{count}" if count > 1 else "") + ".py"
    script = workspace / name
    try:
        with open_run_file(script, own_folder=True) as handle:
            handle.write(code if code.endswith("\n") else code + "\n")
    except OSError as exc:
        raise RunFailedError(f"node '{run.path}': {write_failure(script, exc)}") from None
    return script


def _interpreter(run: NodeRun, config: PythonConfig) -> str:
    """A relative path with a folder in it is taken from the workflow's folder (devall)."""
    interpreter = config.interpreter
    if os.sep in interpreter and not os.path.isabs(interpreter) and run.workflow_dir:
        return str(Path(run.workflow_dir) / interpreter)
    return interpreter


def _environment(
    run: NodeRun, config: PythonConfig, workspace: Path, script: Path
) -> dict[str, str]:
    """devall's environment, `env` over it (ChatDev forgets `env`), and ChatDev's MAC_* names."""
    env = dict(os.environ)
    env.update(config.env)
    env.update(
        MAC_CODE_WORKSPACE=str(workspace), MAC_CODE_SCRIPT=str(script), MAC_NODE_ID=run.node.id
    )
    return env


def _confined(
    run: NodeRun, config: PythonConfig, command: list[str], env: dict[str, str], workspace: Path
) -> tuple[list[str], dict[str, str], dict[str, Any] | None]:
    """bwrap's prefix, the script's environment and the sandbox's description (or none)."""
    setting = effective_sandbox(config.sandbox)
    if setting is None:
        return [], env, None
    # The interpreter's own tree is bound into the sandbox: it is looked up as the child would.
    program = shutil.which(command[0], path=env.get("PATH", os.defpath)) or command[0]
    box = Sandbox(
        setting,
        workdir=str(workspace),
        program=program,
        workflow_dir=str(run.workflow_dir) if run.workflow_dir is not None else None,
    )
    own = [*config.env, "MAC_CODE_WORKSPACE", "MAC_CODE_SCRIPT", "MAC_NODE_ID"]
    prefix, env = box.confine(env, own, who=f"node '{run.path}'")
    return prefix, env, box.describe()


def _shown(run: NodeRun, script: Path) -> str:
    """The script's path as the trace shows it: relative to the run directory."""
    try:
        return str(script.relative_to(Path(run.run_dir or "").resolve()))
    except ValueError:
        return str(script)


def _finished(run: NodeRun, script: str, outcome: ScriptOutcome, started: float) -> None:
    duration = round((time.monotonic() - started) * 1000, 3) if started else 0.0
    run.emit(
        CodeFinishedEvent(
            run_id=run.run_id,
            node_id=run.path,
            visit=run.visit,
            script=script,
            status=outcome.status,
            exit_code=outcome.exit_code,
            stderr=outcome.stderr,
            duration_ms=duration,
        )
    )
