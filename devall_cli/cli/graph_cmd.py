"""`devall graph`: the workflow as a picture (Mermaid, SVG or DOT), without running it."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    EnvFileOption,
    VarOption,
    WorkflowArg,
    error_boundary,
    load,
    write_product,
)
from devall_cli.errors import RunFailedError


class GraphFormat(StrEnum):
    """What `devall graph` writes."""

    MERMAID = "mermaid"
    SVG = "svg"
    DOT = "dot"


_BY_SUFFIX = {
    ".svg": GraphFormat.SVG,
    ".dot": GraphFormat.DOT,
    ".gv": GraphFormat.DOT,
    ".mmd": GraphFormat.MERMAID,
    ".mermaid": GraphFormat.MERMAID,
}


@app.command("graph")
@error_boundary
def graph_command(
    workflow: WorkflowArg,
    fmt: Annotated[
        GraphFormat | None,
        typer.Option(
            "--format",
            "-f",
            help="mermaid (default on stdout), svg (default for -o FILE) or dot.",
            case_sensitive=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", metavar="FILE", help="Write to FILE instead of stdout."),
    ] = None,
    var: VarOption = None,
    env_file: EnvFileOption = None,
) -> None:
    """Draw WORKFLOW's graph: nodes, edges with their conditions, loops and subgraphs.

    Mermaid text on stdout by default; with -o FILE the format follows the file's suffix
    (.svg, .dot/.gv, .mmd), SVG otherwise. The SVG is the drawing `devall report` shows.
    """
    from devall_cli.graphview import render

    loaded = load(workflow, var, env_file)
    chosen = fmt or (_BY_SUFFIX.get(out.suffix.lower(), GraphFormat.SVG) if out else None)
    text = render(loaded, (chosen or GraphFormat.MERMAID).value)
    if out is None:
        write_product(text)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RunFailedError(f"could not write {out}: {exc.strerror or exc}") from None
