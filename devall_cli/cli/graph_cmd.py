"""`devall graph`: the workflow as a picture (Mermaid, SVG or DOT), without running it."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    STATE,
    EnvFileOption,
    VarOption,
    WorkflowArg,
    error_boundary,
    load,
    parse_vars,
    print_line,
    stderr_console,
    write_product,
)
from devall_cli.errors import ConfigError, RunFailedError


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
    Placeholders that are not set (an API key, a server URL) do not stop the drawing.
    """
    from devall_cli.engine.graph_shape import shape_of
    from devall_cli.graphview import collector_paused, render

    with collector_paused():
        loaded = _load_for_drawing(workflow, var, env_file)
        chosen = fmt or (_BY_SUFFIX.get(out.suffix.lower(), GraphFormat.SVG) if out else None)
        shape = shape_of(loaded.graph, loaded.redactor.text)
        text = render(shape, (chosen or GraphFormat.MERMAID).value)
    if out is None:
        write_product(text)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RunFailedError(f"could not write {out}: {exc.strerror or exc}") from None


def _load_for_drawing(workflow: Path, var: list[str] | None, env_file: Path | None) -> Any:
    """The workflow; placeholders that are not set get stand-ins (a picture needs no secrets).

    When the only errors are unset placeholders, the file is loaded again with `${NAME}` as
    the value of each (a URL-like name gets an `.invalid` URL) and a warning names them.
    Any other error is reported as `devall validate` reports it.
    """
    from devall_cli.workflow.loader import load_workflow
    from devall_cli.workflow.unset import only_unset, unset_names, with_stand_ins

    try:
        return load(workflow, var, env_file)
    except ConfigError as exc:
        if not only_unset(exc.issues):
            raise
        names = unset_names(exc.issues)
        environ = with_stand_ins(os.environ, names)
        try:
            loaded = load_workflow(
                workflow, cli_vars=parse_vars(var), env_file=env_file, environ=environ
            )
        except ConfigError:
            raise exc from None
    STATE.mask = loaded.redactor.text
    console = stderr_console()
    for issue in loaded.warnings:
        print_line(console, f"devall: warning: {issue.headline()}")
    print_line(console, f"devall: warning: not set, drawn without a value: {', '.join(names)}")
    return loaded
