"""`python`: runs the code of its latest input and outputs what the code printed.

As in ChatDev: the code is the first fenced block of the latest input (else its whole text),
dedented; it is written to `code_workspace/<node>.py` in the run directory (`<node>_run-N.py`
from the second script of a node on) and run there with the configured interpreter. The output
is stdout, or on failure a text starting `==CODE EXECUTION FAILED==` with the reason, the exit
status and stderr: a failure is data for the next node, not a failure of the run. Scripts of a
run run one at a time. `devall validate` never runs one.

With `sandbox:` (or the CLI's `--sandbox`) the script runs under bubblewrap (procs/sandbox.py):
it may write only in the workspace, sees the workflow's folder read-only and gets only an
allow-list of devall's environment. A sandbox that is required but cannot run stops the run
(SandboxError, exit 4): that is no failure of the code.
"""

from __future__ import annotations

import codecs
import os
import re
import shutil
import sys
import textwrap
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli.config.json_shapes import Schema
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    opt_int,
    opt_str,
    opt_str_map,
    scalar_text,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.errors import RunFailedError
from devall_cli.events import CodeFinishedEvent, CodeStartedEvent
from devall_cli.messages import ASSISTANT, Message
from devall_cli.nodes.base import NODE_TYPES, NodeRun, NodeType
from devall_cli.nodes.code_process import ScriptOutcome, run_script
from devall_cli.procs.sandbox import Sandbox, SandboxConfig, effective_sandbox
from devall_cli.run_files import CODE_WORKSPACE, open_run_file, write_failure
from devall_cli.tools.kinds.mcp_local import parse_sandbox, sandbox_shape

KEYS = KeySpec(
    known=frozenset({"interpreter", "args", "env", "timeout_seconds", "encoding", "sandbox"})
)
WORKSPACE = CODE_WORKSPACE
FAILED_HEADER = "==CODE EXECUTION FAILED=="
_SCRIPTS = "python_scripts"  # NodeRun.extras: scripts written so far, by node path
_FENCED = re.compile(r"```[a-zA-Z0-9_+-]*\s*\n(?P<code>.*?)```", re.DOTALL)
_UNSAFE = re.compile(r"[^0-9A-Za-z_\-]")


def default_interpreter() -> str:
    """The Python running devall, as ChatDev uses the one running ChatDev."""
    return sys.executable or "python3"


@dataclass(frozen=True)
class PythonConfig:
    """`config` of a `python` node."""

    interpreter: str = field(default_factory=default_interpreter)
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: int = 60
    encoding: str = "utf-8"
    sandbox: SandboxConfig | None = None  # None: not set, the CLI default applies


def parse_python(ck: Checker, config: dict[str, Any], path: KeyPath) -> PythonConfig:
    """`interpreter`, `args`, `env`, `timeout_seconds` (whole number ≥ 1), `encoding`,
    `sandbox`."""
    check_keys(ck, config, path, KEYS)
    interpreter = opt_str(ck, config, "interpreter", path) or default_interpreter()
    encoding = opt_str(ck, config, "encoding", path) or "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        ck.error((*path, "encoding"), f"unknown encoding {describe(encoding)}")
    return PythonConfig(
        interpreter=interpreter,
        args=_args(ck, config, path),
        env=opt_str_map(ck, config, "env", path, secret_names=True),
        timeout_seconds=opt_int(ck, config, "timeout_seconds", path, 60, minimum=1),
        encoding=encoding,
        sandbox=parse_sandbox(ck, config, path),
    )


def _args(ck: Checker, config: dict[str, Any], path: KeyPath) -> tuple[str, ...]:
    """A list of scalars as text; one scalar is a list of one (ChatDev's `ensure_list`)."""
    value = config.get("args")
    if value is None or isinstance(value, str | int | float | bool):
        return () if value is None else (scalar_text(value),)
    if not isinstance(value, list):
        ck.error((*path, "args"), f"args must be a list of text items, got {describe(value)}")
        return ()
    items: list[str] = []
    for index, item in enumerate(value):
        if isinstance(item, list | dict):
            message = f"every item of args must be text, got {describe(item)}"
            ck.error((*path, "args", index), message)
        else:
            items.append(scalar_text(item))
    return tuple(items)


def extract_code(text: str) -> str:
    """The first fenced code block of `text`, else all of it; dedented and stripped."""
    if not text.strip():
        return ""
    found = _FENCED.search(text)
    code = found.group("code") if found else text
    return textwrap.dedent(code).strip()


def failure_text(error: str, exit_code: int | None = None, stderr: str = "") -> str:
    """ChatDev's failure message: the header, the reason, `exit_code=N`, then stderr."""
    lines = [FAILED_HEADER, error]
    if exit_code is not None:
        lines.append(f"exit_code={exit_code}")
    if stderr:
        lines.append(f"stderr:\n{stderr}")
    return "\n".join(lines)


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


def _details(config: PythonConfig) -> dict[str, Any]:
    details: dict[str, Any] = {
        "interpreter": config.interpreter,
        "timeout_seconds": config.timeout_seconds,
    }
    if config.sandbox is not None:
        details["sandbox"] = config.sandbox.mode
    return details


def _shapes() -> dict[str, Schema]:
    return {"sandbox": sandbox_shape()}


PYTHON = NODE_TYPES.register(
    NodeType(
        "python",
        "runs the code of its latest input",
        KEYS,
        parse_python,
        run_python,
        config_required=False,
        serial=True,
        details=_details,
        shapes=_shapes,
    )
)
