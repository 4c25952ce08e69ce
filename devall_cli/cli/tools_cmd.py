"""`devall tools list` and `devall tools call`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    EnvFileOption,
    JsonOption,
    VarOption,
    WorkflowArg,
    error_boundary,
    load,
    print_json,
    print_line,
    run_async,
    shown,
    stderr_console,
    stdout_console,
    write_product,
)
from devall_cli.errors import ExitCode
from devall_cli.text import clean_value, visible

tools_app = typer.Typer(
    help="Inspect and call the tools a workflow's nodes will see.", no_args_is_help=True
)
app.add_typer(tools_app, name="tools")

NodeOption = Annotated[
    str | None, typer.Option("--node", metavar="ID", help="Only this node's tools.")
]


def _parameters(schema: Any) -> str:
    """`a*, b, c*`: parameter names, `*` marking the required ones."""
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = set(schema.get("required", [])) if isinstance(schema, dict) else set()
    return ", ".join(f"{name}{'*' if name in required else ''}" for name in props)


@tools_app.command("list")
@error_boundary
def list_command(
    workflow: WorkflowArg,
    node: NodeOption = None,
    schema: Annotated[
        bool, typer.Option("--schema", help="Show each tool's input schema.")
    ] = False,
    json_output: JsonOption = False,
    var: VarOption = None,
    env_file: EnvFileOption = None,
) -> None:
    """List each tool (final name after prefixes and filters) with its nodes and server.

    Starts the workflow's MCP servers (local ones as subprocesses) to ask them for their tools.
    """
    from rich.table import Table

    from devall_cli.tools.catalog import list_workflow_tools
    from devall_cli.tools.manager import ToolManager

    loaded = load(workflow, var, env_file)
    redactor = loaded.redactor

    async def go() -> list[Any]:
        # Listing reads function modules from their source: no user code runs.
        async with ToolManager(loaded, import_functions=False, stop_at_once=True) as manager:
            return await list_workflow_tools(manager, node)

    rows = run_async(go())
    if json_output:
        print_json(
            redactor.value(
                [
                    {
                        "name": r.name,
                        "original_name": r.original_name,
                        "nodes": list(r.nodes),
                        "source": r.source,
                        "server": r.server,
                        "description": r.description,
                        "input_schema": dict(r.input_schema),
                    }
                    for r in rows
                ]
            )
        )
        return
    table = Table("tool", "node(s)", "source", "server", "description", "parameters")
    for r in rows:
        # Masked whole, then cut to its first line: a cut secret would leak its start.
        first_line = redactor.text(r.description or "").strip().splitlines()[:1]
        table.add_row(
            shown(r.name),
            shown(", ".join(r.nodes)),
            shown(r.source),
            shown(redactor.text(r.server)),
            shown(first_line[0] if first_line else ""),
            shown(redactor.text(_parameters(r.input_schema))),
        )
    out = stdout_console()
    out.print(table)
    if schema:
        for r in rows:
            out.print(shown(f"\n{r.name}:"))
            # ensure_ascii: every control character comes out as a JSON escape.
            out.print(Text(json.dumps(redactor.value(dict(r.input_schema)), indent=2)))
    if not rows:
        print_line(stderr_console(), "devall: no tools found")


@tools_app.command("call")
@error_boundary
def call_command(
    workflow: WorkflowArg,
    tool: Annotated[str, typer.Argument(metavar="TOOL", help="Final tool name (with prefix).")],
    args: Annotated[
        str, typer.Option("--args", metavar="JSON", help="Arguments as a JSON object.")
    ] = "{}",
    node: NodeOption = None,
    json_output: JsonOption = False,
    var: VarOption = None,
    env_file: EnvFileOption = None,
) -> None:
    """Call one tool as a node would, and print its normalized result.

    Binary results are saved under logs/<run-id>/attachments/. Exit 1 if the tool returned an
    error result, 4/5 for connection or protocol failures.
    """
    from devall_cli.engine.runner import new_run_id
    from devall_cli.tools.catalog import call_workflow_tool, default_run_dir
    from devall_cli.tools.manager import ToolManager
    from devall_cli.tools.normalize import blocks_to_json

    arguments = _parse_args(args)
    loaded = load(workflow, var, env_file)
    redactor = loaded.redactor
    run_id = new_run_id("tools-call")
    run_dir = default_run_dir(run_id)

    async def go() -> Any:
        async with ToolManager(loaded, run_id=run_id, run_dir=run_dir) as manager:
            return await call_workflow_tool(manager, tool, arguments, node)

    outcome = run_async(go())
    result = outcome.result
    blocks = blocks_to_json(result.blocks)
    if json_output:
        print_json(
            redactor.value(
                {
                    "tool": tool,
                    "ok": not result.is_error,
                    "is_error": result.is_error,
                    "blocks": blocks,
                    "duration_ms": round(outcome.duration_ms, 1),
                }
            )
        )
    else:
        _print_blocks(blocks, run_dir, redactor, to_stderr=result.is_error)
    if result.is_error:
        if not json_output:
            print_line(stderr_console(), f"devall: error: tool '{tool}' returned an error")
        raise typer.Exit(int(ExitCode.FAILED))


def _parse_args(text: str) -> dict[str, Any]:
    from devall_cli.tools import json_limits

    try:
        value = json_limits.loads(text)
    except json_limits.JsonLimitError as exc:
        raise typer.BadParameter(f"the JSON {exc}", param_hint="--args") from None
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--args") from None
    if not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object", param_hint="--args")
    cleaned: dict[str, Any] = clean_value(value)  # "\ud800" escapes and argv's surrogates
    return cleaned


def _print_blocks(
    blocks: list[dict[str, Any]], run_dir: Path, redactor: Any, to_stderr: bool
) -> None:
    """The product: text blocks as they are (tabs kept), attachments as paths, data as JSON."""
    lines: list[str] = []
    for block in blocks:
        if block["type"] == "text":
            lines.append(redactor.text(block["text"]))
        elif block["type"] == "attachment":
            path = run_dir / block["path"]
            lines.append(
                f"[{block['kind']} saved: {path} ({block['mime_type']}, {block['size']} bytes)]"
            )
        else:
            lines.append(json.dumps(redactor.value(block["data"]), ensure_ascii=False))
    text = "".join(line + "\n" for line in lines)
    if to_stderr:  # an error result is a diagnostic: escaped like every other one
        stderr_console().print(Text(visible(text.rstrip("\n"), multiline=True)))
    else:
        write_product(text)
