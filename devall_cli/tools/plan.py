"""Which tool sources a workflow needs: one per distinct tooling config, shared by its nodes."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from devall_cli.config.model import (
    AgentConfig,
    FunctionToolingConfig,
    McpLocalConfig,
    McpRemoteConfig,
    ToolingConfig,
    Workflow,
)
from devall_cli.tools.base import LogCallback, SourceKind, ToolSource


@dataclass
class SourcePlan:
    """One tool source to start: its config and the nodes that use it."""

    id: str
    kind: SourceKind
    tooling: ToolingConfig  # the first entry that declared it
    nodes: list[str] = field(default_factory=list)

    @property
    def target(self) -> str:
        """URL, command line or functions directory."""
        return self.tooling.config.display_target()


@dataclass
class WorkflowPlan:
    """All sources of a workflow, and which source serves each (node, tooling index)."""

    sources: list[SourcePlan]
    entries: dict[tuple[str, int], str]  # (node id, tooling index) -> source id

    def source(self, source_id: str) -> SourcePlan:
        """The plan with this id."""
        for plan in self.sources:
            if plan.id == source_id:
                return plan
        raise KeyError(source_id)


def _base_name(tooling: ToolingConfig) -> str:
    """A short readable id for a source: prefix, script name, or host and port."""
    cfg = tooling.config
    if tooling.prefix:
        name = tooling.prefix
    elif isinstance(cfg, McpRemoteConfig):
        parts = urlsplit(cfg.server)
        name = f"{parts.hostname or 'remote'}-{parts.port}" if parts.port else parts.hostname or ""
    elif isinstance(cfg, McpLocalConfig):
        scripts = [a for a in cfg.args if not a.startswith("-")]
        name = PurePosixPath(scripts[-1]).stem if scripts else PurePosixPath(cfg.command).name
    else:
        name = "functions"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "server"


def plan_sources(workflow: Workflow) -> WorkflowPlan:
    """Group the tooling entries of all agent nodes by identity, in declaration order."""
    by_identity: dict[tuple[Any, ...], SourcePlan] = {}
    entries: dict[tuple[str, int], str] = {}
    used: set[str] = set()
    for node in workflow.graph.nodes:
        if not isinstance(node.config, AgentConfig):
            continue
        for index, tooling in enumerate(node.config.tooling):
            identity = tooling.config.identity()
            plan = by_identity.get(identity)
            if plan is None:
                plan = SourcePlan(_unique(_base_name(tooling), used), _kind(tooling), tooling)
                by_identity[identity] = plan
            if node.id not in plan.nodes:
                plan.nodes.append(node.id)
            entries[(node.id, index)] = plan.id
    return WorkflowPlan(list(by_identity.values()), entries)


def _unique(name: str, used: set[str]) -> str:
    candidate, n = name, 2
    while candidate in used:
        candidate, n = f"{name}-{n}", n + 1
    used.add(candidate)
    return candidate


def _kind(tooling: ToolingConfig) -> SourceKind:
    if isinstance(tooling.config, McpRemoteConfig):
        return "mcp_remote"
    if isinstance(tooling.config, McpLocalConfig):
        return "mcp_local"
    return "function"


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


def build_source(plan: SourcePlan, ctx: SourceContext) -> ToolSource:
    """Create (not start) the ToolSource for a plan; heavy modules are imported here."""
    cfg = plan.tooling.config
    if isinstance(cfg, McpRemoteConfig):
        from devall_cli.tools.mcp_remote import RemoteSource

        return RemoteSource(id=plan.id, config=cfg, store=ctx.store, on_log=ctx.on_log)
    if isinstance(cfg, McpLocalConfig):
        from devall_cli.tools.mcp_local import LocalSource

        log_path = ctx.run_dir / "servers" / f"{plan.id}.log" if ctx.run_dir else None
        return LocalSource(
            id=plan.id,
            config=cfg,
            store=ctx.store,
            on_log=ctx.on_log,
            log_path=log_path,
            on_restart=ctx.on_restart,
            redact=ctx.redact,
        )
    assert isinstance(cfg, FunctionToolingConfig)
    from devall_cli.tools.functions import FunctionSource

    context = {
        "run_id": ctx.run_id,
        "workflow_dir": ctx.workflow_dir,
        "attachment_store": ctx.store,
    }
    return FunctionSource(
        id=plan.id,
        config=cfg,
        store=ctx.store,
        context=context,
        import_modules=ctx.import_functions,
    )
