"""`devall probe`: start each distinct server once, list its tools, classify what went wrong.

Beside each server's health, the probe checks what `run` would refuse once the tools are
known: two servers offering one node the same tool name (the duplicate-name check of the tool
manager, run on the listings the probe got). It also counts what the tool policy (the command
line's and the top graph's layers; nodes' own policies are not applied) decides for each
server's tools, and says whether a local server runs sandboxed. Asked for surfaces
(`probe --locked`), it also takes each healthy server's lockfile entry (lockfile.py) on the same
session, speaking fastmcp's client, which can ask for resources and prompts too.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from devall_cli.config.model import Workflow
from devall_cli.errors import DevallError, DuplicateToolError, ServerStartError
from devall_cli.tools.base import CallContext, RawTool, ServerInfo, ToolResult, ToolSource
from devall_cli.tools.head_start import HeadStart, start_import
from devall_cli.tools.plan import (
    SourceContext,
    SourcePlan,
    build_source,
    offered_roots,
    plan_sources,
    start_hint,
    tooling_type,
)
from devall_cli.tools.policy import Decision, ToolPolicy, decide
from devall_cli.tools.policy_gate import Layers, graph_layers

DECISIONS: tuple[Decision, ...] = ("allow", "deny", "ask", "refuse")
# How the probe's text and JSON name the MCP client that spoke to a server.
CLIENT_NAMES = {"direct": "light", "fastmcp": "fastmcp"}


@dataclass(frozen=True)
class ProbeReport:
    """The health of one server (the JSON row of `devall probe --json`)."""

    id: str
    kind: str
    target: str
    nodes: tuple[str, ...]
    ok: bool
    status: str  # ok | unreachable | http_401 | ... | no_tools
    error: str | None = None
    protocol_version: str | None = None
    server_name: str | None = None
    tools: int = 0  # the tools models are offered
    connect_ms: float | None = None
    list_ms: float | None = None
    log_tail: tuple[str, ...] = field(default=())
    hint: str | None = None  # how to fix a failure, where devall can tell
    roots: tuple[str, ...] = ()  # the roots offered to the server (`file://` URIs)
    task_only: int = 0  # of the tools offered, those that can only run as tasks
    client: str | None = None  # the MCP client that spoke to it: light | fastmcp
    # How many offered tools the tool policy allows, denies, asks about, refuses.
    policy: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(DECISIONS, 0))
    sandbox: Mapping[str, Any] | None = None  # how a local server runs confined (None: not)


@dataclass(frozen=True)
class ToolConflict:
    """Two servers offering one node the same tool name, which `run` refuses (exit 3)."""

    node: str
    tool: str
    servers: tuple[str, str]
    error: str


@dataclass(frozen=True)
class ProbeOutcome:
    """Every server's report, and the tool names that would stop a run."""

    servers: list[ProbeReport]
    conflicts: list[ToolConflict]
    # With `surfaces`: the lockfile entry of every server that answered, by id (masked).
    surfaces: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether every server is healthy and no node is offered one name twice."""
        return all(report.ok for report in self.servers) and not self.conflicts


def workflow_targets(workflow: Workflow) -> list[SourcePlan]:
    """The MCP servers a workflow declares (function tooling has no server to probe)."""
    return [p for p in plan_sources(workflow).sources if tooling_type(p.tooling).is_server]


async def probe_workflow(
    workflow: Workflow,
    *,
    timeout: float,
    ctx: SourceContext | None = None,
    policy: ToolPolicy | None = None,
    surfaces: bool = False,
) -> ProbeOutcome:
    """Probe the workflow's servers, then check each node's tool names as `run` would.

    `policy` is the command line's layer of the tool policy; `surfaces`: take each healthy
    server's lockfile entry too.
    """
    listed: dict[str, list[RawTool]] = {}
    taken: dict[str, Mapping[str, Any]] | None = {} if surfaces else None
    if taken is not None:
        ctx = replace(ctx or SourceContext(interactive=False), redact=workflow.redactor.text)
    targets = workflow_targets(workflow)
    reports = await probe_servers(
        targets, timeout=timeout, ctx=ctx, listed=listed, surfaces=taken
    )
    layers = graph_layers(workflow.graph, policy)
    plans = {plan.id: plan for plan in targets}
    reports = [
        replace(r, policy=policy_counts(plans[r.id], listed.get(r.id, []), layers))
        for r in reports
    ]
    found = workflow.redactor.value(taken or {})
    return ProbeOutcome(reports, await tool_conflicts(workflow, listed), found)


def policy_counts(plan: SourcePlan, tools: Sequence[RawTool], layers: Layers) -> dict[str, int]:
    """How many of the server's offered tools get each decision (by their first entry's name)."""
    counts: dict[str, int] = dict.fromkeys(DECISIONS, 0)
    for tool in tools:
        final = plan.tooling.final_name(tool.name)
        counts[decide(final, plan.id, tool.annotations, layers).decision] += 1
    return counts


async def probe_servers(
    targets: Sequence[SourcePlan],
    *,
    timeout: float,
    ctx: SourceContext | None = None,
    listed: dict[str, list[RawTool]] | None = None,
    surfaces: dict[str, Mapping[str, Any]] | None = None,
) -> list[ProbeReport]:
    """Probe every target concurrently; the whole probe is bounded by `timeout` seconds.

    Local servers are spawned first, so that they start while the MCP client is imported. The
    tools of each server that listed them go into `listed`, by server id; with `surfaces`,
    each such server's lockfile entry goes there.
    """
    head_start = HeadStart()
    # A probed server only lists its tools: it is stopped at once (SIGTERM) when done; and a
    # probe never waits for a sign-in. The light client speaks only tools: a surface needs
    # fastmcp's, and the lockfile's entries come from it.
    ctx = replace(
        ctx or SourceContext(interactive=False),
        head_start=head_start,
        stop_at_once=True,
        direct_client=surfaces is None,
    )
    deadline = time.monotonic() + timeout
    try:
        await head_start.spawn(targets, ctx)
        # Needed once the first server answers (counting its tools): imported meanwhile, on a
        # thread, rather than on the loop while other servers shake hands.
        start_import("devall_cli.tools.manager")
        outcomes = await asyncio.gather(
            *(_probe_one(t, deadline, ctx, surfaces) for t in targets)
        )
    finally:
        await head_start.close()
    if listed is not None:
        listed.update({report.id: tools for report, tools in outcomes if tools})
    return [report for report, _ in outcomes]


async def _probe_one(
    plan: SourcePlan,
    deadline: float,
    ctx: SourceContext,
    surfaces: dict[str, Mapping[str, Any]] | None = None,
) -> tuple[ProbeReport, list[RawTool]]:
    source = await _built(plan, ctx)
    base = ProbeReport(
        plan.id,
        plan.kind,
        plan.target,
        tuple(plan.nodes),
        ok=False,
        status="",
        roots=offered_roots(plan),
    )
    # Each server's time is its own: a local one counts from its spawn (made ahead, maybe
    # before the command was loaded), any other from when its own connect began.
    spawned_at = ctx.head_start.spawned_at(plan.id) if ctx.head_start is not None else None
    t0 = time.monotonic() if spawned_at is None else spawned_at
    connect_ms: float | None = None
    try:
        async with asyncio.timeout_at(_loop_deadline(deadline)):
            info = await source.start()
            connect_ms = (time.monotonic() - t0) * 1000
            t1 = time.monotonic()
            tools = await source.list_tools()
            list_ms = (time.monotonic() - t1) * 1000
            if surfaces is not None:
                from devall_cli.tools.lockfile import surface_of

                mask = ctx.redact or (lambda text: text)
                surfaces[plan.id] = await surface_of(plan, source, info, tools, mask)
    except TimeoutError:
        status = tooling_type(plan.tooling).timeout_status
        tail = _tail(source)
        timed_out = ServerStartError(
            "probe timed out", status=status, server_id=plan.id, log_tail=tail
        )
        report = replace(
            base,
            status=status,
            error="probe timed out",
            log_tail=tail,
            hint=start_hint(plan, timed_out) or None,
        )
        return report, []
    except DevallError as exc:
        report = replace(
            base,
            status=failure_status(exc),
            error=exc.message,
            connect_ms=connect_ms,
            log_tail=tuple(getattr(exc, "log_tail", ()) or _tail(source)),
            hint=start_hint(plan, exc) or None,
        )
        return report, []
    finally:
        with contextlib.suppress(Exception):
            await source.close()
    return _healthy(base, source, info, tools, connect_ms, list_ms), tools


def _healthy(
    base: ProbeReport,
    source: ToolSource,
    info: ServerInfo,
    tools: list[RawTool],
    connect_ms: float,
    list_ms: float,
) -> ProbeReport:
    """The report of a server that answered: counted as `tools list` and `run` offer them."""
    offered = len(tools)
    return replace(
        base,
        ok=bool(offered),
        status="ok" if offered else "no_tools",
        error=None if offered else "the server lists no tools",
        protocol_version=info.protocol_version,
        server_name=info.server_name,
        tools=offered,
        task_only=sum(1 for tool in tools if tool.task_support == "required"),
        client=CLIENT_NAMES.get(str(getattr(source, "client", "fastmcp")), "fastmcp"),
        sandbox=dict(info.sandbox) if info.sandbox is not None else None,
        connect_ms=round(connect_ms, 1),
        list_ms=round(list_ms, 1),
        log_tail=_tail(source),
    )


async def _built(plan: SourcePlan, ctx: SourceContext) -> ToolSource:
    """The plan's source. One with no process of its own (a remote one) is built on a thread:
    building it imports its client stack (a second of CPU or more), which on the event loop
    would hold up the handshakes of the local servers probed beside it, and so their times."""
    if tooling_type(plan.tooling).early_process is not None:
        return build_source(plan, ctx)
    return await asyncio.to_thread(build_source, plan, ctx)


async def tool_conflicts(
    workflow: Workflow, listed: Mapping[str, list[RawTool]]
) -> list[ToolConflict]:
    """The first tool name each node would be offered twice, by the tool manager's own check
    (prefixes, `tool_sources`) on the listings in `listed` (by server id; a
    server not listed counts as offering nothing)."""
    from devall_cli.tools.manager import ToolManager

    def make(plan: SourcePlan, ctx: SourceContext) -> ToolSource:
        return _Listing(plan, listed.get(plan.id, []))

    conflicts: list[ToolConflict] = []
    manager = ToolManager(workflow, make_source=make, spawn_ahead=False, import_functions=False)
    async with manager:
        for node in manager.plan.tooling:
            try:
                await manager.specs_for(node)
            except DuplicateToolError as exc:
                conflicts.append(ToolConflict(node, exc.tool, exc.sources, exc.message))
    return conflicts


class _Listing:
    """A server's listing as the probe got it, standing in for its source."""

    def __init__(self, plan: SourcePlan, tools: list[RawTool]) -> None:
        self.id = plan.id
        self.kind = plan.kind
        self.target = plan.target
        self._tools = tools

    async def start(self) -> ServerInfo:
        return ServerInfo()

    async def list_tools(self) -> list[RawTool]:
        return list(self._tools)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, context: CallContext | None = None
    ) -> ToolResult:
        raise NotImplementedError("a probe calls no tool")

    async def close(self) -> None:
        return None


def failure_status(exc: DevallError) -> str:
    """The failure class DESIGN.md names for an error: its `status` (errors.py), else
    `protocol_error` for an error class that names none."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, str) else "protocol_error"


def _tail(source: object) -> tuple[str, ...]:
    return tuple(getattr(source, "log_tail", ()) or ())[-10:]


def _loop_deadline(deadline: float) -> float:
    """Translate a time.monotonic() deadline to the running loop's clock."""
    loop = asyncio.get_running_loop()
    return loop.time() + max(0.0, deadline - time.monotonic())
