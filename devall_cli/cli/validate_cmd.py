"""`devall validate`: load and check a workflow without running anything."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    EnvFileOption,
    JsonOption,
    VarOption,
    error_boundary,
    parse_vars,
    print_json,
    report_error,
    stdout_console,
)
from devall_cli.cli.completion import complete_workflow
from devall_cli.cli.validate_core import check_files, render_summary, results_document
from devall_cli.errors import ConfigError, ConfigIssue, ExitCode

if TYPE_CHECKING:
    from devall_cli.config.model import Workflow


@app.command("validate")
@error_boundary
def validate_command(
    workflows: Annotated[
        list[Path],
        typer.Argument(
            metavar="WORKFLOW...",
            help="Workflow YAML file(s) to check.",
            autocompletion=complete_workflow,
        ),
    ],
    var: VarOption = None,
    env_file: EnvFileOption = None,
    allow_unset: Annotated[
        bool,
        typer.Option(
            "--allow-unset",
            help="Accept placeholders that are not set (a warning each, checked with a stand-in).",
        ),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Check workflow files: YAML, placeholders, schema and graph shape. Exit 3 if any is invalid.

    With several files and --json, the document is a list with one entry (and a "file" key) each.
    --allow-unset checks files whose ${API_KEY} or ${BASE_URL} only the run will have.
    """
    results = check_files(workflows, parse_vars(var), env_file, allow_unset)
    if json_output:
        print_json(results_document(results))
    else:
        for path, loaded, issues in results:
            _report(path, loaded, issues)
    if any(loaded is None for _, loaded, _ in results):
        raise typer.Exit(int(ExitCode.CONFIG))


def _report(path: Path, loaded: Workflow | None, issues: list[ConfigIssue]) -> None:
    """Issues on stderr, the summary of a valid file on stdout."""
    if issues:
        report_error(ConfigError("workflow issues", issues=issues))
    if loaded is not None:
        from rich.text import Text

        stdout_console().print(Text(render_summary(loaded, str(path))))
