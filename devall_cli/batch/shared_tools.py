"""MCP servers shared by the tasks of a batch: one per distinct server config, started once.

Each task still has its own ToolManager (its tool lists, routes and events), but the sources
of server tooling (`mcp_local`, `mcp_remote`: tooling types with a server) come from one
`SharedSources` pool: the first task that needs a server starts it, the others wait for that
start and then use the same process or session, a local one up to its `max_concurrency` calls
at a time. Entries share a server when their configs are identical (the same rule as within a
run), also across tasks whose `vars` loaded different workflows. Function tooling stays per task
(it has the task's run id and attachments).

A shared server is not the task's: closing a task's ToolManager leaves it running, and the batch
closes it at the end. Its log goes to `<batch>/servers/<id>.log`. Binary results are saved in the
run directory of the task whose call returned them (the store is looked up per call).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devall_cli.cassette import Tape
from devall_cli.config.model import Workflow
from devall_cli.engine.runner import ToolManagerLike
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import (
    AttachmentBlock,
    CallContext,
    RawTool,
    ServerInfo,
    SourceKind,
    ToolEvents,
    ToolResult,
    ToolSource,
)
from devall_cli.tools.plan import SourceContext, SourcePlan, build_source, tooling_type
from devall_cli.tools.policy import Approver, ToolPolicy

# The attachment store of the task whose code is running (set by the task, per asyncio task).
TASK_STORE: contextvars.ContextVar[AttachmentStore | None] = contextvars.ContextVar(
    "devall_task_store", default=None
)


class TaskAttachments:
    """The store shared sources save into: the current task's own AttachmentStore."""

    def save(
        self,
        data: bytes,
        *,
        tool_name: str,
        kind: str,
        mime_type: str,
        uri: str | None = None,
        source: str = "mcp_tool",
    ) -> AttachmentBlock:
        """Save into the run directory of the task making the call; OSError outside a task."""
        store = TASK_STORE.get()
        if store is None:
            raise OSError("no task is running to keep the attachment")
        return store.save(
            data, tool_name=tool_name, kind=kind, mime_type=mime_type, uri=uri, source=source
        )


@dataclass
class _Shared:
    """One started server of the pool."""

    id: str
    source: ToolSource
    info: ServerInfo


class SharedSources:
    """The pool of a batch's servers; `close()` stops them all."""

    def __init__(self, batch_dir: Path | None) -> None:
        self.batch_dir = batch_dir
        self._ready: dict[Any, _Shared] = {}
        self._starting: dict[Any, asyncio.Task[_Shared]] = {}
        self._ids: set[str] = set()
        self._attachments = TaskAttachments()
        self._closed = False
        self.starts = 0  # servers started (a failed start counts too)

    def tool_manager_factory(
        self, policy: ToolPolicy | None = None, approver: Approver | None = None
    ) -> Callable[..., ToolManagerLike]:
        """What `run_workflow` takes as `tool_manager_factory`: a ToolManager on this pool, with
        the command line's tool policy and the approver of the calls it leaves to a person."""

        def make(
            workflow: Workflow,
            *,
            run_id: str,
            run_dir: Path | None,
            events: ToolEvents | None,
            tape: Tape | None = None,
        ) -> ToolManagerLike:
            from devall_cli.tools.manager import ToolManager

            manager: ToolManagerLike = ToolManager(
                workflow,
                run_id=run_id,
                run_dir=run_dir,
                events=events,
                store=TASK_STORE.get(),
                make_source=self.make_source,
                spawn_ahead=False,
                tape=tape,
                policy=policy,
                approver=approver,
            )
            return manager

        return make

    def make_source(self, plan: SourcePlan, ctx: SourceContext) -> ToolSource:
        """A handle on the pool's server for server tooling, the task's own source otherwise."""
        if tooling_type(plan.tooling).is_server:
            return SharedSourceHandle(self, plan, ctx.redact)
        return build_source(plan, ctx)

    async def acquire(self, plan: SourcePlan, redact: Callable[[str], str] | None) -> _Shared:
        """The started server for `plan`'s config, starting it if no task has yet."""
        key = plan.tooling.config.identity()
        ready = self._ready.get(key)
        if ready is not None:
            return ready
        starting = self._starting.get(key)
        if starting is None:
            # Not in the calling task's context: the server outlives that task.
            starting = asyncio.get_running_loop().create_task(
                self._start(key, plan, redact), context=contextvars.Context()
            )
            self._starting[key] = starting
        # One task giving up (cancelled) must not cancel the start the others wait for.
        return await asyncio.shield(starting)

    async def _start(
        self, key: Any, plan: SourcePlan, redact: Callable[[str], str] | None
    ) -> _Shared:
        try:
            if self._closed:
                raise RuntimeError("the batch's servers are closed")
            shared_id = self._unique_id(plan.id)
            ctx = SourceContext(
                run_id="batch",
                run_dir=self.batch_dir,
                store=self._attachments,
                redact=redact,
            )
            source = build_source(SourcePlan(shared_id, plan.kind, plan.tooling), ctx)
            self.starts += 1
            try:
                info = await source.start()
            except BaseException:
                # A failed start is not kept: a later task tries again.
                with contextlib.suppress(Exception):
                    await source.close()
                self._ids.discard(shared_id)
                raise
            shared = _Shared(shared_id, source, info)
            self._ready[key] = shared
            return shared
        finally:
            self._starting.pop(key, None)

    def _unique_id(self, base: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", base) or "server"
        candidate, n = name, 2
        while candidate in self._ids:
            candidate, n = f"{name}-{n}", n + 1
        self._ids.add(candidate)
        return candidate

    @property
    def servers(self) -> Mapping[str, ToolSource]:
        """The running servers by their batch-wide id."""
        return {shared.id: shared.source for shared in self._ready.values()}

    async def close(self) -> None:
        """Stop every server (and any start still under way); idempotent."""
        self._closed = True
        starting = list(self._starting.values())
        for task in starting:
            task.cancel()
        await asyncio.gather(*starting, return_exceptions=True)
        shared, self._ready = list(self._ready.values()), {}
        await asyncio.gather(*(_close_quietly(s.source) for s in shared))


class SharedSourceHandle:
    """A task's view of a shared server: the task's source id, the pool's server behind it."""

    def __init__(
        self, pool: SharedSources, plan: SourcePlan, redact: Callable[[str], str] | None
    ) -> None:
        self._pool = pool
        self._plan = plan
        self._redact = redact
        self._shared: _Shared | None = None

    @property
    def id(self) -> str:
        """The source id within the task's run."""
        return self._plan.id

    @property
    def kind(self) -> SourceKind:
        """The tooling type."""
        return self._plan.kind

    @property
    def target(self) -> str:
        """URL or command line."""
        return self._plan.target

    @property
    def pid(self) -> int | None:
        """The shared local server's process id."""
        source = self._shared.source if self._shared is not None else None
        return getattr(source, "pid", None)

    @property
    def listing_ttl_ms(self) -> int | None:
        """The cache hint of the shared server's last listing (tools/cache_hints.py)."""
        source = self._shared.source if self._shared is not None else None
        return getattr(source, "listing_ttl_ms", None)

    async def start(self) -> ServerInfo:
        """Wait until the shared server is up (started by this task or another one)."""
        self._shared = await self._pool.acquire(self._plan, self._redact)
        return self._shared.info

    async def list_tools(self) -> list[RawTool]:
        """The shared server's tools."""
        return await self._source().list_tools()

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, context: CallContext | None = None
    ) -> ToolResult:
        """A call on the shared server (bounded by its `max_concurrency`)."""
        return await self._source().call_tool(name, arguments, context=context)

    async def on_session(self, operation: Callable[[Any], Any]) -> Any:
        """An extension's request on the shared server's session (the skills it serves,
        tools/mcp_skills.py). None where the source has no session (one on a tape): it serves
        no skills."""
        source = self._source()
        if not hasattr(source, "on_session"):
            return None
        return await source.on_session(operation)

    async def close(self) -> None:
        """Nothing: the server is the batch's, closed when the batch ends."""
        self._shared = None

    def _source(self) -> ToolSource:
        if self._shared is None:
            raise RuntimeError(f"server {self.id} used before it was started")
        return self._shared.source


async def _close_quietly(source: ToolSource) -> None:
    with contextlib.suppress(Exception):
        await source.close()
