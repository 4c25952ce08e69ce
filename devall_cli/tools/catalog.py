"""`devall tools list` and `devall tools call`: a workflow's tools as its nodes will see them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devall_cli.config.model import Workflow, node_tooling, walk_nodes
from devall_cli.errors import UsageError
from devall_cli.tools.base import ToolResult, ToolSpec
from devall_cli.tools.manager import ToolManager
from devall_cli.tools.plan import offered_roots


@dataclass(frozen=True)
class ListedTool:
    """One row of `tools list`: a final tool name and the nodes that see it."""

    name: str
    original_name: str
    nodes: tuple[str, ...]
    source: str
    server: str
    description: str
    input_schema: Mapping[str, Any]
    title: str | None = None
    annotations: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    roots: tuple[str, ...] = ()  # the roots offered to its server (`file://` URIs)


@dataclass(frozen=True)
class CallOutcome:
    """What `tools call` reports."""

    spec: ToolSpec
    node_id: str
    result: ToolResult
    duration_ms: float


def tool_nodes(workflow: Workflow, node: str | None) -> list[str]:
    """Paths of the nodes with tooling (subgraphs included), or just `node`, which must exist."""
    paths = {path: n for path, n in walk_nodes(workflow.graph)}
    if node is not None:
        if node not in paths:
            known = ", ".join(paths)
            raise UsageError(f"no node '{node}' in the workflow (nodes: {known})")
        return [node]
    return [path for path, n in paths.items() if node_tooling(n)]


async def list_workflow_tools(manager: ToolManager, node: str | None = None) -> list[ListedTool]:
    """Every tool each selected node will be offered, merged across nodes that share it."""
    nodes = tool_nodes(manager.workflow, node)
    await manager.start(nodes)
    rows: dict[tuple[str, str, str], ListedTool] = {}
    for node_id in nodes:
        for spec in await manager.specs_for(node_id):
            key = (spec.name, spec.source_id, spec.original_name)
            row = rows.get(key)
            if row is None:
                rows[key] = ListedTool(
                    spec.name,
                    spec.original_name,
                    (node_id,),
                    spec.source,
                    spec.server,
                    spec.description,
                    spec.input_schema,
                    spec.title,
                    spec.annotations,
                    spec.output_schema,
                    offered_roots(manager.plan.source(spec.source_id)),
                )
            else:
                rows[key] = ListedTool(**{**row.__dict__, "nodes": (*row.nodes, node_id)})
    return list(rows.values())


async def find_workflow_tool(
    manager: ToolManager, tool: str, node: str | None = None
) -> tuple[str, ToolSpec]:
    """(node path, spec) of the tool a node offers under this final name; starts its servers."""
    nodes = tool_nodes(manager.workflow, node)
    await manager.start(nodes)
    matches: list[tuple[str, ToolSpec]] = []
    for node_id in nodes:
        matches += [(node_id, s) for s in await manager.specs_for(node_id) if s.name == tool]
    if not matches:
        names = sorted({s.name for n in nodes for s in await manager.specs_for(n)})
        raise UsageError(
            f"no tool '{tool}' in the workflow (tools: {', '.join(names)})",
            hint="'devall tools list WORKFLOW' shows every tool with its node",
        )
    if len({(s.source_id, s.original_name) for _, s in matches}) > 1:
        owners = ", ".join(n for n, _ in matches)
        raise UsageError(f"tool '{tool}' differs between nodes {owners}; choose one with --node")
    return matches[0]


def default_run_dir(run_id: str) -> Path:
    """`logs/<run-id>` under the current directory."""
    return Path("logs") / run_id
