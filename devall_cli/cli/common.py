"""What every command shares: global state, common options, consoles and the error boundary."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from devall_cli.errors import ConfigError, DevallError, ExitCode, InterruptedRunError

P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class GlobalState:
    """Set by the top-level callback (`--debug`, `--no-color`)."""

    debug: bool = False
    no_color: bool = False
    # Masks the loaded workflow's secrets in every error line (set by `load`).
    mask: Callable[[str], str] | None = None


STATE = GlobalState()

# Shared options, defined once.
VarOption = Annotated[
    list[str] | None,
    typer.Option(
        "--var", metavar="NAME=VALUE", help="Set a ${NAME} placeholder; overrides `vars`."
    ),
]
EnvFileOption = Annotated[
    Path | None,
    typer.Option("--env-file", metavar="PATH", help="Read placeholders from this .env file."),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")
]
WorkflowArg = Annotated[
    Path, typer.Argument(metavar="WORKFLOW", help="Path to the workflow YAML file.")
]


def color_disabled() -> bool:
    """Colour is off with --no-color, NO_COLOR, or when the stream is not a terminal."""
    return STATE.no_color or "NO_COLOR" in os.environ


def stderr_console() -> Console:
    """The console for the human trace and diagnostics."""
    return Console(stderr=True, no_color=color_disabled(), highlight=False, soft_wrap=True)


def stdout_console() -> Console:
    """The console for the product (tables, answers); wide when piped, so rows stay whole."""
    console = Console(no_color=color_disabled(), highlight=False, soft_wrap=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 160
    return console


def print_json(document: Any) -> None:
    """Write one JSON document on stdout."""
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def parse_vars(pairs: list[str] | None) -> dict[str, str]:
    """`--var NAME=VALUE` flags as a mapping; a malformed one is a usage error."""
    result: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"expected NAME=VALUE, got {pair!r}", param_hint="--var")
        result[name.strip()] = value
    return result


def report_error(error: DevallError, console: Console | None = None) -> None:
    """Print `devall: error: <message>` plus indented details on stderr."""
    console = console or stderr_console()
    if isinstance(error, ConfigError) and error.issues:
        for issue in error.issues:
            label = "error" if issue.severity == "error" else "warning"
            console.print(f"devall: {label}: {issue.headline()}", markup=False)
            if issue.source_line:
                console.print(f"  {issue.source_line}", markup=False)
                if issue.col:
                    console.print("  " + " " * (issue.col - 1) + "^", markup=False)
        return
    mask = STATE.mask or (lambda text: text)
    console.print(f"devall: error: {mask(error.message)}", markup=False)
    for line in error.details:
        console.print(f"  {mask(line)}", markup=False)


def error_boundary(func: Callable[P, R]) -> Callable[P, R]:
    """Map DevallErrors to one message and their exit code; tracebacks only with --debug."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.BadParameter):
            raise
        except DevallError as exc:
            if STATE.debug:
                traceback.print_exc()
            report_error(exc)
            raise typer.Exit(int(exc.exit_code)) from None
        except KeyboardInterrupt:
            report_error(InterruptedRunError())
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except Exception as exc:
            if STATE.debug:
                raise
            # A bug in devall: still one line, with a hint, never a raw traceback.
            stderr_console().print(
                f"devall: error: internal error: {type(exc).__name__}: {exc} "
                "(run with --debug for the traceback)",
                markup=False,
            )
            raise typer.Exit(int(ExitCode.FAILED)) from None

    return wrapper


def load(workflow: Path, var: list[str] | None, env_file: Path | None) -> Any:
    """Load and validate a workflow for a command (warnings go to stderr)."""
    from devall_cli.config.loader import load_workflow

    loaded = load_workflow(workflow, cli_vars=parse_vars(var), env_file=env_file)
    STATE.mask = loaded.redactor.text
    console = stderr_console()
    for issue in loaded.warnings:
        console.print(f"devall: warning: {issue.headline()}", markup=False)
    return loaded


class SignalState:
    """Which termination signal, if any, stopped the command."""

    def __init__(self) -> None:
        self.received: str | None = None

    def exit_code(self) -> int:
        """143 after SIGTERM, 130 otherwise (Ctrl-C)."""
        return int(ExitCode.TERMINATED if self.received == "SIGTERM" else ExitCode.INTERRUPTED)


def run_async(coro: Coroutine[Any, Any, R], signals: SignalState | None = None) -> R:
    """`asyncio.run` where Ctrl-C and SIGTERM cancel the work cleanly (servers are closed).

    Ctrl-C is handled by asyncio itself (the main task is cancelled); SIGTERM is made to do the
    same. Either way an InterruptedRunError comes out, with exit code 130 or 143.
    """
    import asyncio  # here, not at the top: --help and validate start ~20 ms faster without it

    state = signals or SignalState()

    async def main() -> R:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def on_sigterm() -> None:
            state.received = "SIGTERM"
            task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        try:
            return await coro
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if state.received == "SIGTERM":
            raise InterruptedRunError("terminated (SIGTERM)", signal_name="SIGTERM") from None
        raise
    except KeyboardInterrupt:
        state.received = state.received or "SIGINT"
        raise InterruptedRunError("interrupted (Ctrl-C)") from None
    finally:
        # Last line of defence: no server process outlives the command.
        from devall_cli.tools.process_groups import kill_all_children

        kill_all_children()
