"""`devall probe`: start each distinct server once, list its tools, classify what went wrong."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from devall_cli.config.model import Workflow
from devall_cli.errors import DevallError
from devall_cli.tools.head_start import HeadStart
from devall_cli.tools.plan import (
    SourceContext,
    SourcePlan,
    build_source,
    offered_roots,
    plan_sources,
    start_hint,
    tooling_type,
)


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
    tools: int = 0
    connect_ms: float | None = None
    list_ms: float | None = None
    log_tail: tuple[str, ...] = field(default=())
    hint: str | None = None  # how to fix a failure, where devall can tell
    roots: tuple[str, ...] = ()  # the roots offered to the server (`file://` URIs)


def workflow_targets(workflow: Workflow) -> list[SourcePlan]:
    """The MCP servers a workflow declares (function tooling has no server to probe)."""
    return [p for p in plan_sources(workflow).sources if tooling_type(p.tooling).is_server]


async def probe_servers(
    targets: Sequence[SourcePlan], *, timeout: float, ctx: SourceContext | None = None
) -> list[ProbeReport]:
    """Probe every target concurrently; the whole probe is bounded by `timeout` seconds.

    Local servers are spawned first, so that they start while the MCP client is imported.
    """
    head_start = HeadStart()
    # A probed server only lists its tools: it is stopped at once (SIGTERM) when done; and a
    # probe never waits for a sign-in.
    ctx = replace(
        ctx or SourceContext(interactive=False),
        head_start=head_start,
        stop_at_once=True,
        direct_client=True,
    )
    deadline = time.monotonic() + timeout
    try:
        await head_start.spawn(targets, ctx)
        return list(await asyncio.gather(*(_probe_one(t, deadline, ctx) for t in targets)))
    finally:
        await head_start.close()


async def _probe_one(plan: SourcePlan, deadline: float, ctx: SourceContext) -> ProbeReport:
    source = build_source(plan, ctx)
    base = ProbeReport(
        plan.id,
        plan.kind,
        plan.target,
        tuple(plan.nodes),
        ok=False,
        status="",
        roots=offered_roots(plan),
    )
    # A server spawned ahead has been starting since then: its connect time counts from there.
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
    except TimeoutError:
        status = tooling_type(plan.tooling).timeout_status
        return replace(base, status=status, error="probe timed out", log_tail=_tail(source))
    except DevallError as exc:
        return replace(
            base,
            status=failure_status(exc),
            error=exc.message,
            connect_ms=connect_ms,
            log_tail=tuple(getattr(exc, "log_tail", ()) or _tail(source)),
            hint=start_hint(plan, exc) or None,
        )
    finally:
        with contextlib.suppress(Exception):
            await source.close()
    return replace(
        base,
        ok=bool(tools),
        status="ok" if tools else "no_tools",
        error=None if tools else "the server lists no tools",
        protocol_version=info.protocol_version,
        server_name=info.server_name,
        tools=len(tools),
        connect_ms=round(connect_ms, 1),
        list_ms=round(list_ms, 1),
        log_tail=_tail(source),
    )


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
