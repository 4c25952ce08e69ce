"""Which tool sources a workflow needs: one per distinct tooling config, shared by its nodes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from devall_cli.config.model import ToolingConfig, Workflow, node_tooling, walk_nodes
from devall_cli.text import safe_id
from devall_cli.tools.base import (
    AuthCallback,
    Elicitor,
    LogCallback,
    SourceKind,
    ToolEvents,
    ToolSource,
)
from devall_cli.tools.kinds.client_settings import present_roots
from devall_cli.tools.kinds.registry import TOOLING_TYPES, ToolingType


def tooling_type(tooling: ToolingConfig) -> ToolingType:
    """The descriptor of a tooling entry's type (the loader checked it exists)."""
    return TOOLING_TYPES.all()[tooling.type]


@dataclass
class SourcePlan:
    """One tool source to start: its config and the nodes (paths) that use it."""

    id: str
    kind: SourceKind
    tooling: ToolingConfig  # the first entry that declared it
    nodes: list[str] = field(default_factory=list)

    @cached_property  # asked once per listed tool: a command line is quoted only once
    def target(self) -> str:
        """URL, command line or functions directory."""
        return str(self.tooling.config.display_target())


@dataclass
class WorkflowPlan:
    """All sources of a workflow, and which source serves each (node path, tooling index)."""

    sources: list[SourcePlan]
    entries: dict[tuple[str, int], str]  # (node path, tooling index) -> source id
    tooling: dict[str, tuple[ToolingConfig, ...]]  # node path -> its tooling entries

    def source(self, source_id: str) -> SourcePlan:
        """The plan with this id."""
        for plan in self.sources:
            if plan.id == source_id:
                return plan
        raise KeyError(source_id)


def _base_name(tooling: ToolingConfig) -> str:
    """A short readable id for a source: prefix, script name, or host and port."""
    name = tooling.name or tooling.prefix or tooling_type(tooling).base_name(tooling.config)
    return safe_id(name)


def plan_sources(workflow: Workflow) -> WorkflowPlan:
    """Group the tooling entries of every node (subgraphs included) by identity, in order."""
    by_identity: dict[tuple[Any, ...], SourcePlan] = {}
    entries: dict[tuple[str, int], str] = {}
    tooling_of: dict[str, tuple[ToolingConfig, ...]] = {}
    used: set[str] = set()
    for path, node in walk_nodes(workflow.graph):
        entries_of_node = expand_tooling(node_tooling(node))
        tooling_of[path] = entries_of_node
        for index, tooling in enumerate(entries_of_node):
            identity = tooling.config.identity()
            plan = by_identity.get(identity)
            if plan is None:
                plan = SourcePlan(_unique(_base_name(tooling), used), tooling.type, tooling)
                by_identity[identity] = plan
            if path not in plan.nodes:
                plan.nodes.append(path)
            entries[(path, index)] = plan.id
    return WorkflowPlan(list(by_identity.values()), entries, tooling_of)


def expand_tooling(entries: tuple[ToolingConfig, ...]) -> tuple[ToolingConfig, ...]:
    """The entries with each one of an expanding type (`mcp_config`) replaced by its parts."""
    out: list[ToolingConfig] = []
    for entry in entries:
        expand = tooling_type(entry).expand
        out.extend(expand(entry) if expand is not None else (entry,))
    return tuple(out)


def _unique(name: str, used: set[str]) -> str:
    candidate, n = name, 2
    while candidate in used:
        candidate, n = f"{name}-{n}", n + 1
    used.add(candidate)
    return candidate


@dataclass(frozen=True)
class SourceContext:
    """What a source needs from the run around it."""

    run_id: str = ""
    run_dir: Path | None = None
    workflow_dir: Path | None = None
    store: Any = None  # AttachmentStore | None
    on_log: LogCallback | None = None
    on_restart: Callable[[str, int], None] | None = None
    redact: Callable[[str], str] | None = None  # masks secrets in server log lines
    import_functions: bool = True  # False: function modules are read, not run, until a call
    on_auth: AuthCallback | None = None  # OAuth steps of remote servers (authorize URL, ...)
    reveal: Callable[[str], None] | None = None  # a secret learnt at run time (a token): mask it
    interactive: bool = True  # False: an OAuth sign-in in the browser is refused (probe)
    events: ToolEvents | None = None  # what servers report and ask (progress, sampling, ...)
    elicitor: Elicitor | None = None  # asks the operator when a call brings no elicitor
    head_start: Any = None  # HeadStart | None: local servers spawned ahead of their sources
    stop_at_once: bool = False  # servers only listed: SIGTERM at close, no wait on their stdin
    # Tools are only listed and called (tools list/call, probe): local servers get devall's own
    # light MCP client (mcp_direct.py) instead of fastmcp's, unless DEVALL_MCP_CLIENT=fastmcp;
    # "local" (run): local servers only.
    direct_client: bool | Literal["local"] = False


def start_hint(plan: SourcePlan, error: Any) -> str:
    """How to fix the error that stopped a source from starting, if its type can tell."""
    path = plan.tooling.path
    if path == "command line":  # an ad-hoc target: there is no config block to point at
        where = "the command line"
    else:
        where = f"{path}.config" if path else "its tooling config"
    return tooling_type(plan.tooling).start_hint(plan.tooling.config, error, where)


def offered_roots(plan: SourcePlan) -> tuple[str, ...]:
    """The `file://` URIs of the roots the plan's server is offered now (configured, existing)."""
    configured = tooling_type(plan.tooling).roots(plan.tooling.config)
    return tuple(root.uri for root in present_roots(configured))


def build_source(plan: SourcePlan, ctx: SourceContext) -> ToolSource:
    """Create (not start) the ToolSource for a plan; its type imports the heavy modules."""
    return tooling_type(plan.tooling).make_source(plan.id, plan.tooling.config, ctx)
