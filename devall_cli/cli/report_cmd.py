"""`devall report`: one HTML page of a run, from its run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import error_boundary, write_product

RunDirArg = Annotated[
    Path,
    typer.Argument(
        metavar="RUN_DIR", help="The run directory: logs/<run-id>/, or the --out DIR of the run."
    ),
]


@app.command("report")
@error_boundary
def report_command(
    run_dir: RunDirArg,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", metavar="FILE", help="Write the page here (default RUN_DIR/report.html)."
        ),
    ] = None,
) -> None:
    """Write one self-contained HTML page of a run and print its path.

    Built from RUN_DIR/events.jsonl and result.json: the outcome, the graph coloured by
    status, a timeline of nodes, model turns and tool calls, every turn and tool result with
    images and audio inline. The page loads nothing from the network.
    """
    from devall_cli.report import write_report

    write_product(f"{write_report(run_dir, out)}\n")
