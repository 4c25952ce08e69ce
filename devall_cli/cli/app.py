"""The `devall` command: global options and command registration."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

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
    test_cmd,
    tools_cmd,
    validate_cmd,
)

# Every page of `--help` in one layout, with its examples (help_format.py, help_examples.py).
use_help_layout(app)


def main() -> None:
    """Console-script entry point."""
    app()
