"""Local servers spawned before the CLI is imported: `tools list|call|lock|diff`, `probe`, `run`.

These commands wait for their local servers to start, so every millisecond before the spawn is
a millisecond of the command. Typer, Rich, the commands and Typer's parsing of the command line
(it builds a pydantic validator per option) take about 0.3 s; a local MCP server starts in
about 1 s. `early_start` reads just enough of the command line to find the workflow, loads it
as the command will and spawns its local servers (head_start.py), all before Typer is imported;
the command then parses and loads as always, and its `HeadStart` adopts the running processes
(same source id, same config) instead of spawning them again.

Only the plain forms are taken: `devall [--debug] [--no-color] tools list WORKFLOW`,
`devall ... tools lock WORKFLOW`, `devall ... tools diff WORKFLOW`, `devall ... probe WORKFLOW`,
`devall ... tools call WORKFLOW TOOL` (`--args`, `--out`) and `devall ... run WORKFLOW` (with
the run options of `COMMANDS`), with `--var`, `--env-file`, `--json`, `--schema`, `--timeout`,
`--junit`, the lockfile's `--output`/`-o`, `--lock`, `--locked` and `--strict`, the tool
policy's `--allow-tool`, `--deny-tool` and `--approve`, and `--sandbox`
(set as the CLI default before the spawn, so that the servers spawned here are confined as the
command would confine them; a process adopted later must match it).
Anything else (ad-hoc targets, `--node`, `--help`, an option this module does not know, a
workflow that does not load) leaves the command to itself: this is a head start, never a second
parser. Processes no command adopted are torn down before devall exits, and a SIGTERM
before the command takes over its signals ends devall as the command would (exit 143).
"""

from __future__ import annotations

import atexit
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

# The tool policy's options: they change what is offered, not which servers start.
POLICY_OPTIONS = ("--allow-tool", "--deny-tool", "--approve")
# The commands taken, by their words, with their options: those that take a value, and flags.
COMMANDS: dict[tuple[str, ...], tuple[frozenset[str], frozenset[str]]] = {
    ("tools", "list"): (
        frozenset({"--var", "--env-file", "--sandbox", *POLICY_OPTIONS}),
        frozenset({"--json", "--schema"}),
    ),
    ("probe",): (
        frozenset(
            {"--var", "--env-file", "--timeout", "--junit", "--sandbox", "--lock", *POLICY_OPTIONS}
        ),
        frozenset({"--json", "--locked", "--strict"}),
    ),
    ("tools", "lock"): (frozenset({"--var", "--env-file", "--output", "-o"}), frozenset()),
    ("tools", "diff"): (
        frozenset({"--var", "--env-file", "--lock"}),
        frozenset({"--json", "--strict"}),
    ),
    ("tools", "call"): (
        frozenset({"--args", "--out", "--var", "--env-file", "--sandbox", *POLICY_OPTIONS}),
        frozenset({"--json"}),
    ),
    # Not --replay (its servers may never start) nor --lock/--locked (drift runs nothing).
    ("run",): (
        frozenset(
            {
                "--task",
                "--task-file",
                "--var",
                "--env-file",
                "--out",
                "--max-steps",
                "--answers",
                "--record",
                "--sandbox",
                "--pricing",
                "--max-cost",
                "--max-tokens",
                "--max-model-calls",
                *POLICY_OPTIONS,
            }
        ),
        frozenset(
            {"--json", "--quiet", "-q", "--verbose", "-v", "--report", "--otel", "--otel-content"}
        ),
    ),
}
# The positional arguments of a command, when more than its workflow: `tools call WF TOOL`.
POSITIONALS: dict[tuple[str, ...], int] = {("tools", "call"): 2}
GLOBAL_FLAGS = frozenset({"--debug", "--no-color"})
# `DEVALL_EARLY_START=0` turns the head start off.
EARLY_ENV = "DEVALL_EARLY_START"


@dataclass
class Invocation:
    """What the command line says, as far as the head start needs it."""

    workflow: Path
    vars: dict[str, str]
    env_file: Path | None
    sandbox: str | None = None  # `--sandbox MODE`, as given


def read_command_line(argv: Sequence[str]) -> Invocation | None:
    """The workflow and its placeholders of a plain `tools list` / `probe`, else None."""
    args = list(argv)
    while args and args[0] in GLOBAL_FLAGS:
        args.pop(0)
    for words, (valued, flags) in COMMANDS.items():
        if tuple(args[: len(words)]) == words:
            return _options(args[len(words) :], valued, flags, POSITIONALS.get(words, 1))
    return None


def _options(
    args: list[str], valued: frozenset[str], flags: frozenset[str], wanted: int = 1
) -> Invocation | None:
    positionals: list[str] = []
    given: dict[str, list[str]] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if not arg.startswith("-") or arg == "-":
            positionals.append(arg)
            continue
        name, sep, value = arg.partition("=")
        if name in flags and not sep:
            continue
        if name not in valued:
            return None  # an option of another kind (or `--`, `-h`): the command decides
        if not sep:
            if index >= len(args):
                return None
            value, index = args[index], index + 1
        given.setdefault(name, []).append(value)
    if len(positionals) != wanted:
        return None
    variables: dict[str, str] = {}
    for pair in given.get("--var", []):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            return None  # the command reports it
        variables[key.strip()] = value
    env_files = given.get("--env-file", [])
    env_file = Path(env_files[-1]) if env_files else None
    sandbox = given.get("--sandbox", [None])[-1]
    return Invocation(Path(positionals[0]), variables, env_file, sandbox)


_LOOP: asyncio.AbstractEventLoop | None = None  # the loop the early processes belong to


class Terminated(BaseException):
    """SIGTERM arrived after the early spawn, before the command took over its signals.

    A BaseException, so that no `except Exception` on the way swallows it.
    """


_TERMINATED = False  # SIGTERM arrived early: also when its Terminated was swallowed


def _on_sigterm(signum: int, frame: object) -> None:
    global _TERMINATED
    _TERMINATED = True
    # Raised into whatever runs now. Python ignores (prints) an exception raised inside a
    # weakref callback or `__del__` (an import's module-lock callback, say): then the flag
    # still tells run_async to end the command as SIGTERM would.
    raise Terminated


def terminated_early() -> bool:
    """Whether SIGTERM arrived before the command's event loop took it over."""
    return _TERMINATED


def main() -> None:
    """Console-script entry point: the plain path or the head start, then the CLI."""
    import sys

    if os.environ.get(EARLY_ENV, "").strip() != "0":
        from devall_cli.cli.plain import run_plain

        code = run_plain(sys.argv[1:])  # `validate` and `--version` without Typer
        if code is not None:
            raise SystemExit(code)
    try:
        early_start(sys.argv[1:])
        from devall_cli.cli.app import main as cli_main

        cli_main()
    except Terminated:
        # As the command itself ends on SIGTERM: one line, exit 143; the servers spawned early
        # are torn down at exit (or were killed with the command's other children).
        from devall_cli.cli.common import report_error
        from devall_cli.errors import InterruptedRunError

        error = InterruptedRunError("terminated (SIGTERM)", signal_name="SIGTERM")
        report_error(error)
        raise SystemExit(int(error.exit_code)) from None


def early_start(argv: Sequence[str]) -> None:
    """Spawn the local servers of a plain `tools list` / `probe` now (see the module docstring)."""
    global _LOOP
    if os.environ.get(EARLY_ENV, "").strip() == "0":
        return
    invocation = read_command_line(argv)
    if invocation is None or not invocation.workflow.is_file():
        return
    from devall_cli.errors import UsageError
    from devall_cli.procs.sandbox import set_default_sandbox

    try:
        set_default_sandbox(invocation.sandbox)
    except UsageError:
        return  # the command reports the bad value
    try:
        _LOOP = _spawn(invocation)
    except Exception:  # the command meets the same problem and reports it properly
        _LOOP = None
        return
    if _LOOP is not None:
        atexit.register(_tear_down)
        # Until the command's event loop takes SIGTERM over (run_async), end cleanly on it.
        signal.signal(signal.SIGTERM, _on_sigterm)


def _spawn(invocation: Invocation) -> asyncio.AbstractEventLoop | None:
    """Load the workflow and spawn its local servers on a new loop (None: nothing spawned)."""
    import asyncio

    from devall_cli.tools.head_start import HeadStart, keep_for_later
    from devall_cli.tools.plan import SourceContext, plan_sources
    from devall_cli.workflow.loader import load_workflow

    loaded = load_workflow(
        invocation.workflow,
        cli_vars=invocation.vars,
        env_file=invocation.env_file,
        tools_only=True,
    )
    plans = plan_sources(loaded).sources
    ctx = SourceContext(workflow_dir=loaded.directory, redact=loaded.redactor.text)
    loop = asyncio.new_event_loop()
    head_start = HeadStart()
    try:
        spawn = head_start.spawn(plans, ctx, import_client=False, hold_log=True)
        spawned = loop.run_until_complete(spawn)
    except BaseException:
        loop.run_until_complete(head_start.close())
        loop.close()
        raise
    for plan in plans:
        at = head_start.spawned_at(plan.id)
        process = head_start.take(plan.id)
        if process is not None and at is not None:
            keep_for_later(plan.id, plan.tooling.config, process, at)
    if not spawned:
        loop.close()
        return None
    return loop


def take_loop() -> asyncio.AbstractEventLoop | None:
    """The loop of the early processes: the command runs on it, once (None: no head start)."""
    global _LOOP
    loop, _LOOP = _LOOP, None
    return loop if loop is not None and not loop.is_closed() else None


def _tear_down() -> None:
    """At exit: processes no command adopted (it failed before it ran) are torn down."""
    loop = take_loop()
    if loop is None:
        return
    from devall_cli.tools.head_start import close_kept

    try:
        loop.run_until_complete(close_kept())
    finally:
        loop.close()
