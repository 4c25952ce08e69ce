"""`devall schema`: print the JSON Schema of the workflow format (for editors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import error_boundary, write_json_text
from devall_cli.errors import UsageError


@app.command("schema")
@error_boundary
def schema_command(
    out: Annotated[
        Path | None,
        typer.Option("-o", "--out", metavar="FILE", help="Write the schema to FILE."),
    ] = None,
) -> None:
    """Print the JSON Schema of workflow files, for editors (yaml-language-server).

    Put `# yaml-language-server: $schema=<path of the written file>` at the top of a
    workflow, or map the schema to your workflow files in the editor's settings.
    """
    from devall_cli.workflow.json_schema import workflow_schema

    text = json.dumps(workflow_schema(), indent=2) + "\n"
    if out is None:
        write_json_text(text)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {out}", err=True)
