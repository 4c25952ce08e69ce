"""`FastmcpSession`: an MCP session spoken by fastmcp's `Client` (see mcp_protocol.py).

Importing this module brings fastmcp's client stack along (fastmcp, the MCP SDK, httpx2); the
sources import it only when they open such a session.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Mapping
from contextvars import Token
from typing import Any, Literal, TypeVar, cast

import mcp_types
from fastmcp import Client
from fastmcp.client.transports import ClientTransport
from opentelemetry import context as otel_context
from opentelemetry import propagate

from devall_cli.tools.base import RawTool
from devall_cli.tools.icons import listed_icons
from devall_cli.tools.mcp_headers import hear_sdk_exclusions
from devall_cli.tools.mcp_protocol import ProgressFn
from devall_cli.tools.mcp_tasks import (
    MODERN_VERSION,
    call_as_task,
    declare_extension,
    offers_tasks,
)
from devall_cli.tools.normalize import json_object

T = TypeVar("T")
# devall bounds each call itself (mcp_session.py's `_bounded`), pausing the bound while the
# operator or the model answers the server; the SDK's own per-request timeout could not pause,
# so it is set far off.
SDK_CALL_TIMEOUT = 24 * 3600.0
MAX_PAGES = 250  # tools/list pages followed, as by fastmcp's `Client.list_tools`


class FastmcpSession:
    """One entered fastmcp Client."""

    def __init__(self, client: Client[Any]) -> None:
        self.client = client
        self.listing_ttl_ms: int | None = None

    @property
    def protocol_version(self) -> str | None:
        version: str | None = self.client.protocol_version
        return version

    @property
    def server_name(self) -> str | None:
        server = self.client.server_info
        return server.name if server is not None else None

    @property
    def logs(self) -> bool:
        result = self.client.initialize_result
        caps = result.capabilities if result is not None else None
        # The 2026 protocol has no initialize result: the server's log level is not set there.
        return caps is not None and caps.logging is not None

    async def list_tools(self) -> list[RawTool]:
        # Page by page (as `Client.list_tools` does) to read each page's cache hint too.
        tools: list[mcp_types.Tool] = []
        hints: list[int] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            result = await self.client.list_tools_mcp(cursor=cursor)
            tools.extend(result.tools)
            # The SDK keeps `ttlMs` only on a 2026-07-28 session (set: the server gave it).
            if "ttl_ms" in result.model_fields_set:
                hints.append(result.ttl_ms)
            cursor = result.next_cursor
            if cursor is None or cursor in seen:
                break
            seen.add(cursor)
        else:
            raise RuntimeError(f"the server listed tools on more than {MAX_PAGES} pages")
        self.listing_ttl_ms = min(hints) if hints else None
        return [_raw_tool(tool) for tool in tools]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFn | None,
        meta: Mapping[str, Any] | None = None,
    ) -> mcp_types.CallToolResult:
        # fastmcp makes a span of its own for the call and puts the current trace context in
        # `meta`, over ours: with devall's trace context current, its span (recorded only under
        # a process-wide tracer provider) is the call's child, and the server gets ours.
        token = _attach_trace_context(meta)
        try:
            result: mcp_types.CallToolResult = await self.client.call_tool_mcp(
                name,
                arguments,
                timeout=SDK_CALL_TIMEOUT,
                progress_handler=progress,
                meta=dict(meta) if meta else None,
            )
        finally:
            if token is not None:
                otel_context.detach(token)
        return result

    async def call_tool_task(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFn | None,
        meta: Mapping[str, Any] | None = None,
    ) -> mcp_types.CallToolResult:
        """`tools/call` run as an MCP task where the server takes tasks (mcp_tasks.py)."""
        capabilities = self.client.server_capabilities
        offered = capabilities.model_dump(by_alias=True, mode="json") if capabilities else None
        if not offers_tasks(offered):
            return await self.call_tool(name, arguments, progress, meta)
        modern = self.protocol_version == MODERN_VERSION
        rpc = _TaskRequests(self.client.session, meta, modern=modern)
        raw = await call_as_task(rpc, name, arguments, progress, modern=modern)
        result = mcp_types.CallToolResult.model_validate(raw, by_name=False)
        if not result.is_error:  # checked as the SDK checks an ordinary call's result
            await self.client.session.validate_tool_result(name, result)
        return result

    async def set_log_level(self, level: str) -> None:
        with warnings.catch_warnings():  # the SDK warns that 2026 servers drop the request
            warnings.simplefilter("ignore")
            await self.client.set_logging_level(cast(mcp_types.LoggingLevel, level))

    async def send_roots_list_changed(self) -> None:
        with warnings.catch_warnings():  # the 2026 protocol has no such notification
            warnings.simplefilter("ignore")
            await self.client.send_roots_list_changed()

    async def request(self, operation: Callable[[Any], Awaitable[T]]) -> T:
        return await operation(self.client)

    async def close(self) -> None:
        await self.client.close()  # type: ignore[no-untyped-call]


async def open_fastmcp(
    transport: ClientTransport,
    *,
    mode: Literal["auto", "legacy"],
    request_timeout: float,
    init_timeout: float,
    handlers: dict[str, Any],
    close: Callable[[FastmcpSession], Awaitable[None]],
) -> FastmcpSession:
    """Enter a new Client on `transport`; `close` disposes of it when entering fails."""
    hear_sdk_exclusions()  # the tools its listings leave out are warned about as ours are
    client: Client[Any] = Client(
        transport,
        timeout=request_timeout,
        init_timeout=init_timeout,
        mode=mode,
        **handlers,
    )
    session = FastmcpSession(client)
    try:
        await client.__aenter__()  # type: ignore[no-untyped-call]
    except BaseException:
        await close(session)
        raise
    return session


class _TaskRequests:
    """The requests of a task (mcp_tasks.TaskRpc), sent raw on the SDK's session.

    The SDK speaks no task on 2025-11-25 (it reads every `tools/call` result as a
    CallToolResult), so these requests bypass its typed layer: stamped as its own requests are
    (the 2026-07-28 `_meta`, the protocol headers), then sent by its dispatcher unchecked.
    """

    def __init__(self, session: Any, meta: Mapping[str, Any] | None, *, modern: bool) -> None:
        self._session = session
        self._meta = dict(meta) if meta else None  # the trace context, of the call only
        self._modern = modern

    async def __call__(
        self, method: str, params: dict[str, Any], progress: ProgressFn | None = None
    ) -> dict[str, Any]:
        data: dict[str, Any] = {"method": method, "params": dict(params)}
        if method == "tools/call" and self._meta:
            data["params"]["_meta"] = dict(self._meta)
        opts: dict[str, Any] = {"timeout": SDK_CALL_TIMEOUT}
        self._session._stamp(data, opts)
        if self._modern:
            data["params"]["_meta"] = declare_extension(data["params"].get("_meta") or {})
            if method.startswith("tasks/"):  # routed by the task, as the extension asks
                opts.setdefault("headers", {})["Mcp-Name"] = str(params["taskId"])
        if progress is not None:
            opts["on_progress"] = progress
        result: dict[str, Any] = await self._session._dispatcher.send_raw_request(
            method, data["params"], opts
        )
        return result


def _attach_trace_context(meta: Mapping[str, Any] | None) -> Token[otel_context.Context] | None:
    """Make the trace context in `meta` (a `traceparent`) current; the token to detach it."""
    if not meta or "traceparent" not in meta:
        return None
    carrier = {key: str(value) for key, value in meta.items() if key in _TRACE_KEYS}
    return otel_context.attach(propagate.extract(carrier))


_TRACE_KEYS = ("traceparent", "tracestate")


def _raw_tool(tool: mcp_types.Tool) -> RawTool:
    """A listed tool with everything it says about itself."""
    execution = getattr(tool, "execution", None)
    return RawTool(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {}),
        meta=dict(tool.meta or {}),
        title=tool.title,
        annotations=json_object(tool.annotations),
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        task_support=getattr(execution, "task_support", None),
        icons=listed_icons(tool.icons),
    )
