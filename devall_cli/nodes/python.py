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
import re
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
from devall_cli.kinds import runtime
from devall_cli.nodes.base import NODE_TYPES, NodeType
from devall_cli.tools.kinds.mcp_local import parse_sandbox, sandbox_shape

if TYPE_CHECKING:
    from devall_cli.procs.sandbox import SandboxConfig

KEYS = KeySpec(
    known=frozenset({"interpreter", "args", "env", "timeout_seconds", "encoding", "sandbox"})
)
FAILED_HEADER = "==CODE EXECUTION FAILED=="
_FENCED = re.compile(r"```[a-zA-Z0-9_+-]*\s*\n(?P<code>.*?)```", re.DOTALL)


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


# A visit (python_run.py): imported only when a python node runs, never to parse a workflow.
run_python = runtime("devall_cli.nodes.python_run:run_python")


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
        run_python,  # imported when a python node first runs
        config_required=False,
        serial=True,
        details=_details,
        shapes=_shapes,
    )
)
