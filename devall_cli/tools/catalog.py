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
class ToolScope:
    """How messages name where the tools come from: a workflow, or servers on the command line."""

    tools_place: str = "in the workflow"  # no tool 'x' in the workflow
    nodes_place: str = "in the workflow"  # no node 'x' in the workflow
    node_word: str = "node"  # `server` when each node stands for a server given ad hoc
    list_hint: str = "'devall tools list WORKFLOW' shows every tool with its node"


WORKFLOW_SCOPE = ToolScope()


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
    server_id: str = ""  # the id the server is shown by (`mcp_server`, `127.0.0.1:8001`)
    meta: Mapping[str, Any] | None = None  # the `_meta` its server lists it with
    execution: Mapping[str, Any] | None = None  # `{"taskSupport": ...}`, as listed
    icons: tuple[Mapping[str, Any], ...] | None = None  # `icons`, as listed (tools/icons.py)


@dataclass(frozen=True)
class CallOutcome:
    """What `tools call` reports."""

    spec: ToolSpec
    node_id: str
    result: ToolResult
    duration_ms: float


def tool_nodes(
    workflow: Workflow, node: str | None, scope: ToolScope = WORKFLOW_SCOPE
) -> list[str]:
    """Paths of the nodes with tooling (subgraphs included), or just `node`, which must exist."""
    paths = {path: n for path, n in walk_nodes(workflow.graph)}
    if node is not None:
        if node not in paths:
            known = ", ".join(paths)
            word = scope.node_word
            raise UsageError(f"no {word} '{node}' {scope.nodes_place} ({word}s: {known})")
        return [node]
    return [path for path, n in paths.items() if node_tooling(n)]


async def list_workflow_tools(
    manager: ToolManager, node: str | None = None, scope: ToolScope = WORKFLOW_SCOPE
) -> list[ListedTool]:
    """Every tool each selected node will be offered, merged across nodes that share it."""
    nodes = tool_nodes(manager.workflow, node, scope)
    await manager.start(nodes)
    rows: dict[tuple[str, str, str], ListedTool] = {}
    roots: dict[str, tuple[str, ...]] = {}  # per source: looked for once, not once a tool
    for node_id in nodes:
        for spec in await manager.specs_for(node_id):
            key = (spec.name, spec.source_id, spec.original_name)
            row = rows.get(key)
            if row is None:
                rows[key] = _listed(manager, spec, node_id, roots)
            else:
                rows[key] = ListedTool(**{**row.__dict__, "nodes": (*row.nodes, node_id)})
    return list(rows.values())


def _listed(
    manager: ToolManager, spec: ToolSpec, node_id: str, roots: dict[str, tuple[str, ...]]
) -> ListedTool:
    plan = manager.plan.source(spec.source_id)
    if plan.id not in roots:
        roots[plan.id] = offered_roots(plan)
    from_server = spec.source != "function"  # a function's `_meta` is devall's own bookkeeping
    return ListedTool(
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
        roots[plan.id],
        server_id=plan.id,
        meta=dict(spec.meta) if spec.meta and from_server else None,
        execution={"taskSupport": spec.task_support} if spec.task_support else None,
        icons=spec.icons,
    )


async def find_workflow_tool(
    manager: ToolManager, tool: str, node: str | None = None, scope: ToolScope = WORKFLOW_SCOPE
) -> tuple[str, ToolSpec]:
    """(node path, spec) of the tool a node offers under this final name; starts its servers."""
    nodes = tool_nodes(manager.workflow, node, scope)
    await manager.start(nodes)
    matches: list[tuple[str, ToolSpec]] = []
    for node_id in nodes:
        matches += [(node_id, s) for s in await manager.specs_for(node_id) if s.name == tool]
    if not matches:
        names = sorted({s.name for n in nodes for s in await manager.specs_for(n)})
        raise UsageError(
            f"no tool '{tool}' {scope.tools_place} (tools: {', '.join(names) or 'none'})",
            hint=scope.list_hint,
        )
    if len({(s.source_id, s.original_name) for _, s in matches}) > 1:
        owners = ", ".join(n for n, _ in matches)
        raise UsageError(
            f"tool '{tool}' differs between {scope.node_word}s {owners}; choose one with --node"
        )
    return matches[0]


def default_run_dir(run_id: str) -> Path:
    """`logs/<run-id>` under the current directory."""
    return Path("logs") / run_id
