"""ToolManager: starts a run's tool sources, builds each node's tool list and routes calls."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from devall_cli import limits
from devall_cli.cassette import Tape
from devall_cli.config.model import Workflow
from devall_cli.errors import ConfigIssue, DevallError, DuplicateToolError
from devall_cli.node_paths import declared_path
from devall_cli.tools.base import (
    WARNING_LINE,
    AuthCallback,
    AuthNotice,
    CallContext,
    Elicitor,
    RawTool,
    ServerInfo,
    TextBlock,
    ToolEvents,
    ToolResult,
    ToolSource,
    ToolSpec,
)
from devall_cli.tools.cache_hints import listing_ttl
from devall_cli.tools.head_start import HeadStart
from devall_cli.tools.normalize import cap_blocks
from devall_cli.tools.plan import (
    SourceContext,
    SourcePlan,
    build_source,
    plan_sources,
    start_hint,
    tooling_type,
)
from devall_cli.tools.policy import Approver, ToolPolicy, Verdict
from devall_cli.tools.policy_gate import PolicyGate

DUPLICATE_MESSAGE = (
    "Duplicate tool name '{name}' detected. "
    "Please use a unique 'prefix' in your tooling configuration."
)
# Creates (not starts) the source of a plan.
SourceMaker = Callable[[SourcePlan, SourceContext], ToolSource]
# What OpenAI-compatible APIs accept as a function name.
SAFE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def safe_tool_names(names: Sequence[str]) -> list[str]:
    """One name the model API accepts per (distinct) name in `names`, all of them unique.

    A name that is accepted already keeps it. Every other name is sanitized and, if needed,
    numbered (`a_b_2`) to the first name no other tool of the list has, accepted or sanitized,
    so a sanitized name can never take an accepted one or point at another tool. The outcome
    depends only on `names` and their order.
    """
    taken = {name for name in names if SAFE_NAME.match(name)}
    safe: list[str] = []
    for name in names:
        if not SAFE_NAME.match(name):
            name = _sanitized(name, taken)
            taken.add(name)
        safe.append(name)
    return safe


def _sanitized(name: str, taken: set[str]) -> str:
    """`name` with characters the API refuses replaced, cut, and numbered away from `taken`."""
    base = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:58] or "tool"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    return candidate


@dataclass(frozen=True)
class Route:
    """Where a final tool name of a node goes."""

    source_id: str
    original_name: str


class ToolManager:
    """One per run: every distinct server is started once and shared by the nodes using it."""

    def __init__(
        self,
        workflow: Workflow,
        *,
        run_id: str = "",
        run_dir: Path | None = None,
        events: ToolEvents | None = None,
        store: Any = None,
        import_functions: bool = True,
        make_source: SourceMaker = build_source,
        spawn_ahead: bool = True,
        on_auth: AuthCallback | None = None,
        elicitor: Elicitor | None = None,
        stop_at_once: bool = False,
        direct_client: bool | Literal["local"] = False,
        tape: Tape | None = None,
        policy: ToolPolicy | None = None,
        approver: Approver | None = None,
        list_denied: bool = False,
        caller_approves: bool = False,
        on_warning: Callable[[str, str], None] | None = None,
    ) -> None:
        """`policy` is the command line's layer of the tool policy; `approver` decides the calls
        it leaves to a person. `list_denied` (tools list and call): denied tools are listed too,
        and calls of them refused; `caller_approves` (tools call): a call the policy would ask
        about or refuse runs, the command's caller having asked for it. `on_warning(source id,
        text)`: where a command without a trace shows a source's warnings (a tool left out)."""
        self.workflow = workflow
        self._make_source = make_source  # a batch hands out the servers its tasks share
        if tape is not None:  # recorded through the real sources, or replayed without them
            from devall_cli.tools.taped import taped_maker

            self._make_source = taped_maker(tape, make_source)
            spawn_ahead = spawn_ahead and not tape.replays("tools")
        # Local servers are spawned before the MCP client stack is imported, unless the
        # sources come from elsewhere (a batch's shared servers): nothing to spawn then.
        self._spawn_ahead_on = spawn_ahead
        self._on_auth_shown = on_auth  # OAuth steps a command shows itself (it has no trace)
        self._on_warning = on_warning
        self.plan = plan_sources(workflow)
        self._redact = workflow.redactor.text
        self._run_id = run_id
        self._events = events
        if store is None and run_dir is not None:
            from devall_cli.tools.attachments import AttachmentStore

            store = AttachmentStore(run_dir)
        self._head_start = HeadStart()
        self._announced: set[str] = set()  # sources whose server.starting was emitted
        self._ctx = SourceContext(
            run_id=run_id,
            run_dir=run_dir,
            workflow_dir=workflow.directory,
            store=store,
            on_log=self._on_log,
            on_restart=self._on_restart,
            redact=self._redact,
            import_functions=import_functions,
            on_auth=self._on_auth,
            reveal=workflow.redactor.add,
            events=events,
            elicitor=elicitor,
            head_start=self._head_start,
            stop_at_once=stop_at_once,
            direct_client=direct_client,
        )
        self._sources: dict[str, ToolSource] = {}
        self._infos: dict[str, ServerInfo] = {}
        self._listed: dict[str, tuple[float, list[RawTool]]] = {}
        # Sources whose start listing answers the next request for their tools: in the commands
        # that list once (tools list, tools call), that request comes right after the start.
        self._start_listing: set[str] = set()
        self._routes: dict[str, dict[str, Route]] = {}
        self._specs: dict[str, dict[str, ToolSpec]] = {}  # node id -> final name -> spec
        self._list_denied = list_denied
        self._gate = PolicyGate(
            workflow.graph,
            cli=policy,
            approver=approver,
            events=events,
            mask=workflow.redactor.value,
            caller_approves=caller_approves,
        )

    # --- events ------------------------------------------------------------------------------

    def _on_log(self, source_id: str, line: str) -> None:
        if self._events is not None:
            self._events.server_log(source_id, line)
        elif self._on_warning is not None and line.startswith(WARNING_LINE):
            self._on_warning(source_id, line.removeprefix(WARNING_LINE))

    def _on_auth(self, source_id: str, notice: AuthNotice) -> None:
        if self._events is not None:
            self._events.server_auth(source_id, notice)
        if self._on_auth_shown is not None:
            self._on_auth_shown(source_id, notice)

    def _on_restart(self, source_id: str, attempt: int) -> None:
        if self._events is not None:
            self._events.server_restarted(source_id, attempt)

    @contextlib.contextmanager
    def _masking(self) -> Iterator[None]:
        """Errors from a source name its URL or command line: mask the secrets in them."""
        try:
            yield
        except DevallError as exc:
            _mask_error(exc, self._redact)
            raise

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self, node_ids: Sequence[str] | None = None) -> None:
        """Start every source (or those of `node_ids`) concurrently; the first failure is raised."""
        plans = [p for p in self.plan.sources if node_ids is None or set(p.nodes) & set(node_ids)]
        await self._spawn_ahead(plans)
        tasks = [asyncio.create_task(self.start_source(p)) for p in plans]
        if not tasks:
            return
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = [t for t in done if not t.cancelled() and t.exception() is not None]
        if failed:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            await self.close()
            exc = failed[0].exception()
            assert exc is not None
            raise exc

    async def _spawn_ahead(self, plans: Sequence[SourcePlan]) -> None:
        """Spawn the local servers of `plans` before their sources import the MCP client."""
        if not self._spawn_ahead_on:
            return
        waiting = [p for p in plans if p.id not in self._sources]
        for plan in waiting:
            self._announce(plan)  # before the process can log anything
        await self._head_start.spawn(waiting, self._ctx)

    def _announce(self, plan: SourcePlan) -> None:
        if self._events is not None and plan.id not in self._announced:
            self._events.server_starting(plan.id, plan.kind, plan.target)
        self._announced.add(plan.id)

    async def start_source(self, plan: SourcePlan) -> ServerInfo:
        """Create and start one source (idempotent), tracing it."""
        if plan.id in self._infos:
            return self._infos[plan.id]
        self._announce(plan)
        source = self._sources.get(plan.id) or self._make_source(plan, self._ctx)
        self._sources[plan.id] = source
        try:
            with self._masking():
                info = await source.start()
        except DevallError as exc:
            exc.hint = exc.hint or self._redact(start_hint(plan, exc))
            self._announced.discard(plan.id)  # a later attempt is announced anew
            if self._events is not None:
                status = str(getattr(exc, "status", type(exc).__name__))
                self._events.server_exited(plan.id, status, exc.message)
            raise
        self._infos[plan.id] = info
        tools = await self.list_source(plan.id)
        if self._list_denied:
            self._start_listing.add(plan.id)
        if self._events is not None:
            self._events.server_ready(plan.id, info, len(tools), getattr(source, "pid", None))
        return info

    async def close(self) -> None:
        """Close every source, whatever happens to the others."""
        sources, self._sources = list(self._sources.values()), {}
        self._infos.clear()
        self._announced.clear()
        # Concurrently: each local server may need seconds to stop, and Ctrl-C must stay fast.
        await asyncio.gather(
            *(_close_quietly(s) for s in sources), _close_quietly(self._head_start)
        )

    async def __aenter__(self) -> ToolManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- listing -----------------------------------------------------------------------------

    async def list_source(self, source_id: str) -> list[RawTool]:
        """The source's tools, kept as `cache_ttl` or the server's cache hint says (0: list
        again on every request; tools/cache_hints.py)."""
        plan = self.plan.source(source_id)
        if source_id not in self._infos:
            await self.start_source(plan)
        ttl = _cache_ttl(plan, self._sources[source_id])
        cached = self._listed.get(source_id)
        fresh = source_id in self._start_listing
        self._start_listing.discard(source_id)
        if cached is not None and (fresh or (ttl > 0 and time.monotonic() - cached[0] < ttl)):
            return cached[1]
        with self._masking():
            tools = await self._sources[source_id].list_tools()
        self._listed[source_id] = (time.monotonic(), tools)
        return tools

    async def specs_for(self, node_id: str) -> list[ToolSpec]:
        """The node's tools in declaration order, prefixed, filtered and checked for duplicates;
        without those the tool policy denies (unless `list_denied`).

        `node_id` is the node's path (`outer/inner` for a node of a subgraph); a unit of a node
        run by a dynamic edge (`node#2`) has its node's tools.
        """
        node_path = declared_path(node_id, self.plan.tooling)
        offered: list[tuple[str, SourcePlan, RawTool]] = []  # (final name, source, tool)
        declared: dict[str, str] = {}  # final name -> the id of the source offering it
        for index, tooling in enumerate(self.plan.tooling.get(node_path, ())):
            plan = self.plan.source(self.plan.entries[(node_path, index)])
            for raw in _filter(await self.list_source(plan.id), plan):
                final = tooling.final_name(raw.name)
                if final in declared:
                    raise _duplicate(final, tooling.path, (declared[final], plan.id))
                declared[final] = plan.id
                offered.append((final, plan, raw))
        # Named once the whole list is known: a sanitized name must avoid every accepted name.
        names = safe_tool_names([final for final, _, _ in offered])
        routes = {
            name: Route(plan.id, raw.name)
            for name, (_, plan, raw) in zip(names, offered, strict=True)
        }
        specs = [
            ToolSpec(
                name=name,
                original_name=raw.name,
                description=raw.description,
                input_schema=raw.input_schema,
                source=plan.kind,
                server=plan.target,
                source_id=plan.id,
                title=raw.title,
                annotations=raw.annotations,
                output_schema=raw.output_schema,
                meta=raw.meta,
                task_support=raw.task_support,
                icons=raw.icons,
            )
            for name, (_, plan, raw) in zip(names, offered, strict=True)
        ]
        self._routes[node_id] = routes  # denied tools too: a call of one is refused, not unknown
        self._specs[node_id] = {spec.name: spec for spec in specs}
        allowed = self._gate.judge(node_id, node_path, specs)
        return specs if self._list_denied else allowed

    def server_sources(self, node_id: str) -> list[tuple[str, Any]]:
        """The started MCP server sources of the node's tooling, (source id, source), in
        declaration order (the skills they serve, skills/tools.py)."""
        node_path = declared_path(node_id, self.plan.tooling)
        found: dict[str, Any] = {}
        for index, _ in enumerate(self.plan.tooling.get(node_path, ())):
            plan = self.plan.source(self.plan.entries[(node_path, index)])
            if tooling_type(plan.tooling).is_server and plan.id in self._sources:
                found.setdefault(plan.id, self._sources[plan.id])
        return list(found.items())

    def verdict(self, node_id: str, name: str) -> Verdict | None:
        """The tool policy's verdict on a tool of a node, once `specs_for` listed the node."""
        return self._gate.verdict(declared_path(node_id, self.plan.tooling), name)

    # --- calling -----------------------------------------------------------------------------

    async def call(
        self,
        node_id: str,
        name: str,
        arguments: Mapping[str, Any],
        *,
        context: CallContext | None = None,
    ) -> ToolResult:
        """Call a tool by the final name the node offered; unknown names are error results, and
        so are calls the tool policy refuses (`refused_by_policy`).

        `context` goes to the source: who answers what its server asks during the call.
        """
        if node_id not in self._routes:
            await self.specs_for(node_id)
        route = self._routes[node_id].get(name)
        node_path = declared_path(node_id, self.plan.tooling)
        if route is None:
            # Named as the model knows them: not the tools the policy keeps from it.
            shown = [n for n in self._routes[node_id] if self._gate.offered(node_path, n)]
            known = ", ".join(sorted(shown)) or "none"
            text = f"unknown tool '{name}' (this node's tools: {known})"
            return ToolResult(
                (TextBlock(text, tool_name=name, source="devall"),), True, "unknown_tool"
            )
        call_id = context.call_id if context is not None else ""
        spec = self._specs[node_id][name]
        refused = await self._gate.admit(node_id, node_path, spec, arguments, call_id)
        if refused is not None:
            return refused
        if route.source_id not in self._infos:
            await self.start_source(self.plan.source(route.source_id))
        with self._masking():
            source = self._sources[route.source_id]
            result = await source.call_tool(route.original_name, arguments, context=context)
        # One place for every source: what the trace, the logs and the model keep is bounded.
        blocks = cap_blocks(result.blocks, limits.TOOL_RESULT_CHARS)
        return result if blocks == result.blocks else dataclasses.replace(result, blocks=blocks)


def _mask_error(exc: DevallError, redact: Callable[[str], str]) -> None:
    """Mask secrets in an error's message and detail lines, in place (the traceback stays)."""
    exc.message = redact(exc.message)
    exc.args = (exc.message, *exc.args[1:])
    exc.details = [redact(line) for line in exc.details]


async def _close_quietly(source: ToolSource | HeadStart) -> None:
    with contextlib.suppress(Exception):
        await source.close()


def _cache_ttl(plan: SourcePlan, source: ToolSource) -> float:
    configured = tooling_type(plan.tooling).cache_ttl(plan.tooling.config)
    return listing_ttl(configured, getattr(source, "listing_ttl_ms", None), 0.0)


def _filter(tools: list[RawTool], plan: SourcePlan) -> list[RawTool]:
    """Keep MCP tools whose `_meta.source` is listed in `tool_sources` (default `mcp_tools`)."""
    sources = getattr(plan.tooling.config, "tool_sources", None)
    if sources is None:  # function tooling: nothing to filter
        return tools
    allowed = set(sources)
    return [t for t in tools if str((t.meta or {}).get("source", "mcp_tools")) in allowed]


def _duplicate(name: str, path: str, sources: tuple[str, str]) -> DuplicateToolError:
    first, second = sources
    if first == second:
        who = f"'{first}' offers it twice"
    else:
        who = f"'{first}' and '{second}' both offer it"
    issue = ConfigIssue(f"{DUPLICATE_MESSAGE.format(name=name)} {who}.", path=path)
    return DuplicateToolError(issue.headline(), issues=[issue], tool=name, sources=sources)
