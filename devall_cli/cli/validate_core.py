"""What `devall validate` does and prints, without Typer or Rich (the plain entry uses it too)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devall_cli.errors import ConfigIssue
from devall_cli.text import visible

if TYPE_CHECKING:
    from devall_cli.config.model import Workflow

# One checked file: its path as given, the workflow (None when it is invalid), every issue.
Checked = tuple[Path, "Workflow | None", list[ConfigIssue]]


def check_files(
    paths: Iterable[Path], cli_vars: dict[str, str], env_file: Path | None, allow_unset: bool
) -> list[Checked]:
    """Every file checked, in order (all are checked before anything is printed)."""
    return [(path, *check_file(path, cli_vars, env_file, allow_unset)) for path in paths]


def results_document(results: list[Checked]) -> Any:
    """The `--json` document: one file's, or a list with a "file" key in each entry."""
    documents = [validation_document(loaded, issues) for _, loaded, issues in results]
    if len(documents) == 1:
        return documents[0]
    pairs = zip(results, documents, strict=True)
    return [{"file": str(path), **doc} for (path, _, _), doc in pairs]


def check_file(
    path: Path, cli_vars: dict[str, str], env_file: Path | None, allow_unset: bool
) -> tuple[Workflow | None, list[ConfigIssue]]:
    """One file: the workflow (None when it is invalid) and every issue found."""
    # Imported here so that `devall --help` does not pay for the YAML loader.
    if allow_unset:
        from devall_cli.workflow.unset import validate_allowing_unset

        return validate_allowing_unset(path, cli_vars=cli_vars, env_file=env_file)
    from devall_cli.workflow.loader import validate_workflow

    return validate_workflow(path, cli_vars=cli_vars, env_file=env_file, advice=True)


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
