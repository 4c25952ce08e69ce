"""`devall validate`: load and check a workflow without running anything."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import typer

from devall_cli.cli.app import app
from devall_cli.cli.common import (
    EnvFileOption,
    JsonOption,
    VarOption,
    WorkflowArg,
    error_boundary,
    parse_vars,
    print_json,
    report_error,
    stdout_console,
)
from devall_cli.errors import ConfigError, ConfigIssue, ExitCode

if TYPE_CHECKING:
    from devall_cli.config.model import NodeConfig, Workflow


@app.command("validate")
@error_boundary
def validate_command(
    workflow: WorkflowArg,
    var: VarOption = None,
    env_file: EnvFileOption = None,
    json_output: JsonOption = False,
) -> None:
    """Check a workflow file: YAML, placeholders, schema and graph shape. Exit 3 if invalid."""
    # Imported here so that `devall --help` does not pay for the YAML loader.
    from devall_cli.config.loader import validate_workflow

    loaded, issues = validate_workflow(workflow, cli_vars=parse_vars(var), env_file=env_file)
    ok = loaded is not None
    if json_output:
        print_json(validation_document(loaded, issues))
        if not ok:
            raise typer.Exit(int(ExitCode.CONFIG))
        return
    if loaded is None:
        raise ConfigError.from_issues(issues)
    if issues:
        report_error(ConfigError("warnings", issues=issues))
    stdout_console().print(render_summary(loaded, str(workflow)), markup=False)


def validation_document(workflow: Workflow | None, issues: Iterable[ConfigIssue]) -> dict[str, Any]:
    """The `--json` document: ok, issues, and a summary of the workflow when it loaded."""
    return {
        "ok": workflow is not None,
        "issues": [
            {
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
    """Nodes with their tooling, edge count, start and end; secrets masked."""
    graph = workflow.graph
    return {
        "workflow": workflow.name,
        "nodes": [
            {"id": node.id, "type": node.type, "tooling": _tooling(node, workflow.secrets)}
            for node in graph.nodes
        ],
        "edges": len(graph.edges),
        "start": list(graph.start),
        "end": list(graph.end),
    }


def _tooling(node: NodeConfig, secrets: Iterable[str]) -> list[dict[str, Any]]:
    from devall_cli.config.loader import mask_text
    from devall_cli.config.model import AgentConfig

    if not isinstance(node.config, AgentConfig):
        return []
    return [
        {
            "type": entry.type,
            "prefix": entry.prefix,
            "target": mask_text(entry.config.display_target(), secrets),
        }
        for entry in node.config.tooling
    ]


def render_summary(workflow: Workflow, shown_path: str) -> str:
    """The human summary printed on stdout for a valid workflow."""
    summary = summarize(workflow)
    node_count, edge_count = len(summary["nodes"]), summary["edges"]
    lines = [
        f"{shown_path}: workflow '{summary['workflow']}' is valid "
        f"({node_count} node{'s' * (node_count != 1)}, {edge_count} edge{'s' * (edge_count != 1)})",
        f"start: {', '.join(summary['start'])}" + _end_text(summary["end"]),
    ]
    width = max(len(node["id"]) for node in summary["nodes"])
    for node, config in zip(summary["nodes"], workflow.graph.nodes, strict=True):
        lines.append(f"  {node['id']:<{width}}  {node['type']}{_node_detail(config)}")
        for tool in node["tooling"]:
            prefix = f" prefix={tool['prefix']}" if tool["prefix"] else ""
            lines.append(f"  {'':<{width}}    {tool['type']}{prefix}  {tool['target']}")
    return "\n".join(lines)


def _node_detail(node: NodeConfig) -> str:
    from devall_cli.config.model import AgentConfig

    if isinstance(node.config, AgentConfig):
        return f" ({node.config.provider}: {node.config.name})"
    return ""


def _end_text(end: list[str]) -> str:
    return f"   end: {', '.join(end)}" if end else ""
