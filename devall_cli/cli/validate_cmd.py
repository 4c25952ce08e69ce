"""`devall validate`: load and check a workflow without running anything."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

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
from devall_cli.errors import ConfigError, ConfigIssue, ExitCode
from devall_cli.text import visible

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
    cli_vars = parse_vars(var)
    results = [(path, *_check(path, cli_vars, env_file, allow_unset)) for path in workflows]
    ok = all(loaded is not None for _, loaded, _ in results)
    if json_output:
        documents = [validation_document(loaded, issues) for _, loaded, issues in results]
        if len(documents) == 1:
            print_json(documents[0])
        else:
            print_json(
                [{"file": str(p), **d} for (p, _, _), d in zip(results, documents, strict=True)]
            )
    else:
        for path, loaded, issues in results:
            _report(path, loaded, issues)
    if not ok:
        raise typer.Exit(int(ExitCode.CONFIG))


def _check(
    path: Path, cli_vars: dict[str, str], env_file: Path | None, allow_unset: bool
) -> tuple[Workflow | None, list[ConfigIssue]]:
    """One file: the workflow (None when it is invalid) and every issue found."""
    # Imported here so that `devall --help` does not pay for the YAML loader.
    if allow_unset:
        from devall_cli.workflow.unset import validate_allowing_unset

        return validate_allowing_unset(path, cli_vars=cli_vars, env_file=env_file)
    from devall_cli.workflow.loader import validate_workflow

    return validate_workflow(path, cli_vars=cli_vars, env_file=env_file, advice=True)


def _report(path: Path, loaded: Workflow | None, issues: list[ConfigIssue]) -> None:
    """Issues on stderr, the summary of a valid file on stdout."""
    if issues:
        report_error(ConfigError("workflow issues", issues=issues))
    if loaded is not None:
        stdout_console().print(Text(render_summary(loaded, str(path))))


def validation_document(workflow: Workflow | None, issues: Iterable[ConfigIssue]) -> dict[str, Any]:
    """The `--json` document: ok, issues, and a summary of the workflow when it loaded."""
    return {
        "ok": workflow is not None,
        "issues": [
            {
                "file": issue.file,
                "path": issue.path,
                "line": issue.line,
                "col": issue.col,
                "message": issue.message,
                "severity": issue.severity,
            }
            for issue in issues
        ],
        "summary": summarize(workflow) if workflow is not None else None,
    }


def summarize(workflow: Workflow) -> dict[str, Any]:
    """Nodes (subgraph nodes by path) with their tooling, edges, start and end; secrets masked."""
    from devall_cli.config.model import node_tooling, walk_nodes
    from devall_cli.nodes import NODE_TYPES

    mask = workflow.redactor.text  # the same masking as every other output
    graph = workflow.graph
    nodes = []
    for path, node in walk_nodes(graph):
        kind = NODE_TYPES.get(node.type)
        details = kind.details(node.config) if kind is not None else {}
        tooling = [
            {
                "type": entry.type,
                "prefix": entry.prefix,
                "target": mask(entry.config.display_target()),
            }
            for entry in node_tooling(node)
        ]
        nodes.append({"id": path, "type": node.type, **details, "tooling": tooling})
    return {
        "workflow": workflow.name,
        "nodes": nodes,
        "edges": len(graph.edges),
        "start": list(graph.start),
        "end": list(graph.end),
        "memory": [{"name": store.name, "type": store.type} for store in graph.memory],
    }


def render_summary(workflow: Workflow, shown_path: str) -> str:
    """The human summary printed on stdout for a valid workflow (control characters escaped)."""
    from devall_cli.config.model import walk_nodes
    from devall_cli.nodes import NODE_TYPES

    summary = summarize(workflow)
    notes = []
    for _, node in walk_nodes(workflow.graph):  # the order of summary["nodes"]
        kind = NODE_TYPES.get(node.type)
        notes.append(kind.note(node.config) if kind is not None else "")
    node_count, edge_count = len(summary["nodes"]), summary["edges"]
    lines = [
        f"{shown_path}: workflow '{summary['workflow']}' is valid "
        f"({node_count} node{'s' * (node_count != 1)}, {edge_count} edge{'s' * (edge_count != 1)})",
        f"start: {', '.join(summary['start'])}" + _end_text(summary["end"]),
    ]
    if summary["memory"]:
        stores = ", ".join(f"{m['name']} ({m['type']})" for m in summary["memory"])
        lines.append(f"memory: {stores}")
    width = max(len(node["id"]) for node in summary["nodes"])
    for node, note in zip(summary["nodes"], notes, strict=True):
        detail = f" ({note})" if note else ""
        detail += "".join(
            f" · {key}: {value if isinstance(value, str) else ', '.join(value)}"
            for key in ("thinking", "memories", "skills")
            if (value := node.get(key))
        )
        lines.append(f"  {node['id']:<{width}}  {node['type']}{detail}")
        for tool in node["tooling"]:
            prefix = f" prefix={tool['prefix']}" if tool["prefix"] else ""
            lines.append(f"  {'':<{width}}    {tool['type']}{prefix}  {tool['target']}")
    # Names and targets may come from `--var` or the environment: escape them, line by line.
    return "\n".join(visible(line) for line in lines)


def _end_text(end: list[str]) -> str:
    return f"   end: {', '.join(end)}" if end else ""
