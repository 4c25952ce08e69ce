"""The `devall` command: global options and command registration."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import typer
from typer.models import CommandInfo

from devall_cli import __version__
from devall_cli.cli.common import STATE
from devall_cli.cli.help_format import use_help_layout
from devall_cli.cli.usage import DevallGroup

app = typer.Typer(
    name="devall",
    help="Run ChatDev 2.0 (DevAll) workflows whose agents use MCP tools, from a terminal or CI.",
    no_args_is_help=True,
    cls=DevallGroup,  # usage errors as one error line and a hint, like every other error
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"devall {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version."),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show Python tracebacks for errors.")
    ] = False,
    no_color: Annotated[bool, typer.Option("--no-color", help="Disable colour output.")] = False,
) -> None:
    """Run ChatDev 2.0 (DevAll) workflows whose agents use MCP tools.

    Exit codes: 0 ok, 1 run or probe failed, 2 usage, 3 config, 4 connection,
    5 remote, 6 replay mismatch, 7 tool drift, 8 budget reached, 70 internal error (a bug),
    130 interrupted (143 on SIGTERM).
    """
    STATE.debug = debug
    if debug:
        from devall_cli.cli.usage import current_context
        from devall_cli.errors import issue_origins_recorded

        # A config error shows the stack of the check that found it; only for this command
        # (the context closes when the command ends, and the previous setting comes back).
        current_context().with_resource(issue_origins_recorded())
    STATE.no_color = no_color
    STATE.mask = None
    sandbox = sys.modules.get("devall_cli.procs.sandbox")
    if sandbox is not None:  # no command inherits an earlier one's --sandbox (in one process)
        sandbox.set_default_sandbox(None)


# Commands register themselves on import (one module per command).
# (each command module adds one import line here)
from devall_cli.cli import (  # noqa: E402,F401
    auth_cmd,
    batch_cmd,
    graph_cmd,
    init_cmd,
    lock_cmd,
    probe_cmd,
    prompts_cmd,
    report_cmd,
    resources_cmd,
    run_cmd,
    schema_cmd,
    skills_cmd,
    test_cmd,
    tools_cmd,
    validate_cmd,
    watch_cmd,
)

# Every page of `--help` in one layout, with its examples (help_format.py, help_examples.py).
use_help_layout(app)


def main() -> None:
    """Console-script entry point."""
    if _asks_top_help(sys.argv[1:]):
        with _commands_unread(app):
            app()
    else:
        app()


def _asks_top_help(argv: list[str]) -> bool:
    """`devall [--debug] [--no-color] [--help|-h ...]`: a page listing the commands only."""
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ):
        return False  # shell completion reads the commands' options
    args = list(argv)
    while args and args[0] in ("--debug", "--no-color"):
        args.pop(0)
    return not args or args[0] in ("-h", "--help")


@contextlib.contextmanager
def _commands_unread(group: typer.Typer) -> Iterator[None]:
    """Commands built without reading their options, for the page that lists them.

    Typer reads every option of every command (their annotations, evaluated one by one) when it
    builds the app, which is most of the time of `devall --help`; the list needs only each
    command's name and help. A stand-in callback keeps both; the real ones come back after.
    """
    swapped: list[tuple[CommandInfo, Callable[..., Any]]] = []
    for info in _leaf_commands(group):
        real = info.callback
        if real is None:
            continue

        def stand_in() -> None:
            """Never called: the listing only names the command."""

        stand_in.__name__, stand_in.__doc__ = real.__name__, real.__doc__
        swapped.append((info, real))
        info.callback = stand_in
    try:
        yield
    finally:
        for info, real in swapped:
            info.callback = real


def _leaf_commands(group: typer.Typer) -> Iterator[CommandInfo]:
    yield from group.registered_commands
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            yield from _leaf_commands(sub.typer_instance)
