"""What every command shares: global state, common options, consoles and the error boundary."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import traceback
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer

from devall_cli.cli.completion import complete_workflow
from devall_cli.cli.plain_output import error_output
from devall_cli.cli.plain_output import print_json as print_json  # re-exported
from devall_cli.cli.plain_output import write_json_text as write_json_text  # re-exported
from devall_cli.errors import (
    DevallError,
    ExitCode,
    InterruptedRunError,
    UsageError,
)
from devall_cli.text import clean_text, visible

if TYPE_CHECKING:  # Rich is imported when a command prints, not for `--help`
    from rich.console import Console
    from rich.text import Text

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
    Path,
    typer.Argument(
        metavar="WORKFLOW",
        help="Path to the workflow YAML file.",
        autocompletion=complete_workflow,
    ),
]


def color_disabled() -> bool:
    """Colour is off with --no-color, NO_COLOR, or when the stream is not a terminal."""
    return STATE.no_color or "NO_COLOR" in os.environ


def stderr_console() -> Console:
    """The console for the human trace and diagnostics."""
    return _console(stderr=True)


def stdout_console() -> Console:
    """The console for the product (tables, answers); wide when piped, so rows stay whole."""
    console = _console(stderr=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 160
    return console


def _console(*, stderr: bool) -> Console:
    from rich.console import Console

    # Foreign text is printed verbatim: a `[/x]` or `:bug:` in it is never markup or an emoji.
    return Console(
        stderr=stderr,
        no_color=color_disabled(),
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=True,
    )


def shown(text: str) -> Text:
    """One line of text for a console or a table cell: verbatim, control characters escaped."""
    from rich.text import Text

    return Text(visible(text))


def print_line(console: Console, text: str) -> None:
    """Print one line of diagnostics (`devall: error: ...`), control characters escaped."""
    console.print(shown(text))


def write_product(text: str) -> None:
    """Write the product text on stdout: exact on a pipe or a file, escaped on a terminal."""
    text = clean_text(text)
    if sys.stdout.isatty():
        text = visible(text, multiline=True)
    sys.stdout.write(text)
    sys.stdout.flush()


def folders_to_make(run_dir: Path) -> list[Path]:
    """The folders of `run_dir` (itself first) that do not exist yet: what a command makes."""
    return [folder for folder in (run_dir, *run_dir.parents) if not folder.exists()]


def remove_run_dir(run_dir: Path, made: list[Path]) -> None:
    """Remove the records of a run directory the command made (`made`) and kept nothing in:
    events.jsonl, result.json, the lock and server logs, then each folder left empty. A folder
    that was there before, or holds anything else (attachments), stays."""
    from devall_cli.run_files import LOCK_NAME

    if not made:
        return
    servers = run_dir / "servers"
    logs = [*servers.glob("*.log"), *servers.glob("*.log.1")]
    for path in [*logs, *(run_dir / name for name in ("events.jsonl", "result.json", LOCK_NAME))]:
        with contextlib.suppress(OSError):
            path.unlink()
    for folder in [servers, *made]:  # deepest first; one that is not empty stays
        with contextlib.suppress(OSError):
            folder.rmdir()


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
    for raw, text in error_output(error, debug=STATE.debug, mask=STATE.mask):
        if raw:  # where devall found the issue (--debug)
            sys.stderr.write(text)
            sys.stderr.flush()
        else:
            print_line(console, text)


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
            if isinstance(exc, UsageError) and not exc.hint:
                exc.hint = _help_hint()
            report_error(exc)
            raise typer.Exit(int(exc.exit_code)) from None
        except KeyboardInterrupt:
            report_error(InterruptedRunError())
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except Exception as exc:
            # A bug in devall, told apart from a failed run by its exit code (70, EX_SOFTWARE):
            # one line with a hint, the traceback only with --debug.
            if STATE.debug:
                traceback.print_exc()
                hint = ""
            else:
                hint = " (run with --debug for the traceback)"
            print_line(
                stderr_console(),
                f"devall: error: internal error: {type(exc).__name__}: {exc}{hint}",
            )
            raise typer.Exit(int(ExitCode.INTERNAL)) from None

    return wrapper


def _help_hint() -> str:
    """`try 'devall tools call --help'`: the help of the command that is running."""
    from devall_cli.cli.usage import current_context

    ctx = current_context()
    return f"try '{ctx.command_path if ctx is not None else 'devall'} --help'"


def load(
    workflow: Path,
    var: list[str] | None,
    env_file: Path | None,
    *,
    tools_only: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Any:
    """Load and validate a workflow for a command (warnings go to stderr).

    `tools_only`: for listings and probes, which need no model settings. `environ` stands in
    for the process environment (a replay adds the placeholders its cassette recorded).
    """
    from devall_cli.workflow.loader import load_workflow

    loaded = load_workflow(
        workflow,
        cli_vars=parse_vars(var),
        env_file=env_file,
        tools_only=tools_only,
        environ=environ,
    )
    STATE.mask = loaded.redactor.text
    console = stderr_console()
    for issue in loaded.warnings:
        print_line(console, f"devall: warning: {issue.headline()}")
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

    from devall_cli.cli.early import take_loop, terminated_early

    state = signals or SignalState()
    early_loop = take_loop()  # servers spawned before the CLI was parsed run on it

    async def main() -> R:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def on_sigterm() -> None:
            state.received = "SIGTERM"
            task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        if terminated_early():  # a SIGTERM before this loop took it over was swallowed
            on_sigterm()
        try:
            return await coro
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGTERM)
            if early_loop is not None:
                from devall_cli.tools.head_start import close_kept

                await close_kept()  # spawned early for a source the command did not start

    try:
        if early_loop is None:
            return asyncio.run(main())
        with asyncio.Runner(loop_factory=lambda: early_loop) as runner:
            return runner.run(main())
    except asyncio.CancelledError:
        if state.received == "SIGTERM":
            raise InterruptedRunError("terminated (SIGTERM)", signal_name="SIGTERM") from None
        raise
    except KeyboardInterrupt:
        state.received = state.received or "SIGINT"
        raise InterruptedRunError("interrupted (Ctrl-C)") from None
    finally:
        # Last line of defence: no server process outlives the command.
        from devall_cli.procs.process_groups import kill_all_children

        kill_all_children()
