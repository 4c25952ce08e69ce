"""`DirectSession`: devall's own MCP client, for the commands that only list and call tools.
One of the two `McpSession`s (mcp_protocol.py) a `LocalSource` or a `RemoteSource` can hold.

`devall tools list`, `tools call` and `probe` shake hands with a server, list (and call) once
and exit. Importing fastmcp's client for that costs more CPU than most servers need to start
(about a second on a quiet machine, measured in docs/benchmarks.md), so these commands speak
to local servers, and to remote ones over streamable HTTP, with this small client instead;
`devall run` does so with its local servers (it needs nothing else of a stdio session), while
`batch`, `resources` and `prompts` keep fastmcp's. `DEVALL_MCP_CLIENT=fastmcp` makes every
command use fastmcp's.

It speaks on a `MessageChannel`: the supervised process of stdio_process.py (which frames the
lines and enforces the size and depth limits), or http_lines.py's streamable HTTP (which does
the same for HTTP bodies and event streams). It agrees on a protocol as fastmcp's client does
(mcp_handshake.py: `server/discover` and the 2026-07-28 protocol, else the `initialize`
handshake of 2025-11-25 and older), so both clients reach the same version with a server. Then
`tools/list` with `nextCursor` paging, `tools/call` with a progress token, and on the older
protocols `logging/setLevel` and `notifications/roots/list_changed`. It answers what a server
asks (mcp_answers.py) through the same `ServerRequests` as fastmcp's client, also when a
2026-07-28 result asks for it (`input_required`, mcp_input_required.py); a 2026-07-28 listing
leaves out tools with invalid `x-mcp-header` definitions (mcp_headers.py). Progress and log
notifications become the same events. Results are checked as the SDK checks them
(mcp_checks.py). It raises `RpcError`, `SessionClosed` and ProtocolError; the source bounds its
requests and mcp_errors.py words its failures as it words fastmcp's, so a command prints the
same whichever client ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable, Mapping
from types import SimpleNamespace
from typing import Any, Protocol, TypeVar

from devall_cli.errors import DevallError, ProtocolError
from devall_cli.text import clean_value
from devall_cli.tools.base import RawTool, ToolResult
from devall_cli.tools.cache_hints import ttl_hint
from devall_cli.tools.icons import icons_problem, listed_icons
from devall_cli.tools.mcp_answers import answer_request
from devall_cli.tools.mcp_checks import (
    block_problem,
    id_key,
    our_id,
    response_problem,
    schema_problem,
    shown,
)
from devall_cli.tools.mcp_failures import SERVER_CLOSED
from devall_cli.tools.mcp_handshake import (
    DISCOVER_TIMEOUT,
    HANDSHAKE_VERSIONS,
    MODERN_VERSIONS,
    client_capabilities,
    open_session,
    stamped,
)
from devall_cli.tools.mcp_headers import exclude_invalid
from devall_cli.tools.mcp_input_required import complete_input, needs_input, with_input
from devall_cli.tools.mcp_protocol import (
    CallOutcome,
    ProgressFn,
    RpcError,
    SessionClosed,
)
from devall_cli.tools.mcp_requests import ServerRequests
from devall_cli.tools.mcp_tasks import call_as_task, declare_extension, offers_tasks
from devall_cli.tools.normalize import json_object
from devall_cli.tools.stdio_lines import INVALID_RESPONSE
from devall_cli.tools.tool_errors import invalid_result

T = TypeVar("T")

__all__ = ["HANDSHAKE_VERSIONS", "MODERN_VERSIONS", "DirectSession", "open_direct"]

INTERNAL_ERROR = -32603
MAX_PAGES = 1000  # tools/list pages followed before the listing is called endless


class MessageChannel(Protocol):
    """Where a session's messages go and come from: a StdioProcess, or http_lines.HttpLines."""

    def discard_pending(self) -> int:
        """Drop messages nobody has read (meant for an earlier session); their count."""
        ...

    async def send_line(self, line: str) -> None:
        """Send one JSON-RPC message (OSError when it cannot be sent)."""
        ...

    async def receive_message(self) -> dict[str, Any] | None:
        """The next JSON-RPC object from the server; None once there will be no more."""
        ...


async def open_direct(
    process: MessageChannel,
    requests: ServerRequests,
    *,
    server: str,
    note: Callable[[str], None],
    output_schemas: dict[str, Mapping[str, Any] | None],
    closing: Callable[[], Awaitable[None]] | None = None,
    probe_timeout: float = DISCOVER_TIMEOUT,
) -> DirectSession:
    """A session on `process` once a protocol is agreed (unbounded here: the source bounds it).

    `closing` runs when the session closes (an HTTP channel ends its session there);
    `probe_timeout` bounds the wait for an answer to `server/discover` (mcp_handshake.py).
    """
    session = DirectSession(
        process,
        requests,
        server=server,
        note=note,
        output_schemas=output_schemas,
        closing=closing,
    )
    try:
        await session.open(
            sampling=requests.settings.sampling == "allow",
            roots=requests.offers_roots,
            probe_timeout=probe_timeout,
        )
    except BaseException:
        await session.close()
        raise
    return session


class DirectSession:
    """One MCP session on a MessageChannel: requests out, answers and requests in.

    An `McpSession` (mcp_protocol.py) that agrees on a protocol (mcp_handshake.py), speaks
    `tools/list`, `tools/call` and `logging/setLevel`, and answers what the server asks.
    """

    def __init__(
        self,
        process: MessageChannel,
        requests: ServerRequests,
        *,
        server: str,
        note: Callable[[str], None],
        output_schemas: dict[str, Mapping[str, Any] | None],
        closing: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._process = process
        self._closing = closing
        self._requests = requests
        self.server = server  # `MCP server 'id' (command)`, as errors name it
        self._note = note  # a line for the server's log
        # The output schema of each tool the server listed last: calls are checked against it.
        # Owned by the source, so that it outlives a restart of the server.
        self._output_schemas = output_schemas
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._progress: dict[int, ProgressFn] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._serving: dict[str, asyncio.Task[Any]] = {}  # the server's requests being answered
        self._reader: asyncio.Task[None] | None = None
        self._ended: str | None = None  # why the session ended, once it has
        self.protocol_version: str | None = None
        self.server_name: str | None = None
        self.listing_ttl_ms: int | None = None  # the cache hint of the last tools/list
        self.capabilities: Mapping[str, Any] = {}
        self._stamp: Mapping[str, Any] | None = None  # every request's `_meta` (2026-07-28)

    # --- the opening ---------------------------------------------------------------------------

    async def open(
        self, *, sampling: bool, roots: bool = False, probe_timeout: float = DISCOVER_TIMEOUT
    ) -> None:
        """Start reading and agree on a protocol (unbounded here: the source bounds it)."""
        if dropped := self._process.discard_pending():
            self._note(f"[devall: dropped {dropped} stale message(s)]")
        self._reader = asyncio.create_task(self._read())
        capabilities = client_capabilities(sampling=sampling, roots=roots)
        opened = await open_session(self, capabilities, probe_timeout=probe_timeout)
        self.protocol_version = opened.protocol_version
        self.server_name = opened.server_name
        self.capabilities = opened.capabilities
        self._stamp = opened.stamp

    @property
    def modern(self) -> bool:
        """Whether the session speaks the 2026-07-28 protocol (`_meta` on every request)."""
        return self._stamp is not None

    # --- requests ------------------------------------------------------------------------------

    async def rpc(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        progress: ProgressFn | None = None,
        meta: Mapping[str, Any] | None = None,
        tasks: bool = False,
    ) -> dict[str, Any]:
        """Send a request and wait for its result (RpcError, SessionClosed).

        `meta` goes into the request's `_meta`, beside the progress token (the trace context);
        `tasks`: the request declares the tasks extension there (2026-07-28, mcp_tasks.py).
        """
        if self._ended is not None:
            raise SessionClosed(self._ended)
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        request_meta = dict(meta or {})
        if self._stamp is not None:
            request_meta = stamped(request_meta, self._stamp)
            request_meta = declare_extension(request_meta) if tasks else request_meta
        if progress is not None:
            request_meta["progressToken"] = request_id
            self._progress[request_id] = progress
        if request_meta:
            params = {**(params or {}), "_meta": request_meta}
        if params is not None:
            message["params"] = params
        answer = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer
        try:
            await self._send(message)
            result: dict[str, Any] = await answer
            return result
        except asyncio.CancelledError:
            # Given up (a timeout): tell the server, without waiting on it; never for
            # `initialize` or `server/discover`, which the protocol forbids cancelling.
            if method not in ("initialize", "server/discover"):
                self._spawn(self._cancel(request_id))
            raise
        finally:
            self._pending.pop(request_id, None)
            self._progress.pop(request_id, None)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def send_roots_list_changed(self) -> None:
        """`notifications/roots/list_changed` (see ServerRequests.check_roots); the 2026-07-28
        protocol has no such notification."""
        if self._stamp is None:
            await self.notify("notifications/roots/list_changed")

    async def _cancel(self, request_id: int) -> None:
        with contextlib.suppress(SessionClosed):
            reason = "the request timed out"
            await self.notify(
                "notifications/cancelled", {"requestId": request_id, "reason": reason}
            )

    async def _send(self, message: Mapping[str, Any]) -> None:
        if self._ended is not None:
            raise SessionClosed(self._ended)
        try:
            await self._process.send_line(json.dumps(message, ensure_ascii=False))
        except OSError as exc:
            self._end(f"cannot write to the server: {exc}")
            raise SessionClosed(self._ended) from exc

    # --- what the server sends -------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            while (obj := await self._process.receive_message()) is not None:
                # Where a server's text enters: results, listings, notifications, errors.
                self._dispatch(clean_value(obj))
        finally:
            self._end(SERVER_CLOSED)

    def _dispatch(self, obj: dict[str, Any]) -> None:
        method = obj.get("method")
        if isinstance(method, str):
            params = obj.get("params")
            params = params if isinstance(params, Mapping) else {}
            if "id" in obj:
                self._serve(obj["id"], method, params)
            else:
                self._notified(method, params)
            return
        request_id = our_id(obj.get("id"))
        answer = self._pending.get(request_id) if request_id is not None else None
        problem = response_problem(obj)
        if problem is not None:
            self._note(f"[devall: invalid JSON-RPC message ({problem}): {shown(obj)}]")
            if answer is not None and not answer.done():
                reason = f"{INVALID_RESPONSE} from the server: {problem}"
                answer.set_exception(RpcError(INTERNAL_ERROR, reason))
            return
        if answer is None or answer.done():
            return  # an answer to a request given up, or to none of ours
        if "error" in obj:
            error = obj["error"]
            answer.set_exception(RpcError(error["code"], error["message"], error.get("data")))
        else:
            answer.set_result(obj["result"])

    def _notified(self, method: str, params: Mapping[str, Any]) -> None:
        if method == "notifications/progress":
            token = our_id(params.get("progressToken"))
            handler = self._progress.get(token) if token is not None else None
            progress, total = params.get("progress"), params.get("total")
            if handler is not None and isinstance(progress, int | float):
                message = params.get("message")
                self._spawn(
                    handler(
                        float(progress),
                        float(total) if isinstance(total, int | float) else None,
                        message if isinstance(message, str) else None,
                    )
                )
        elif method == "notifications/message":
            logger = params.get("logger")
            message = SimpleNamespace(
                level=str(params.get("level", "info")),
                logger=logger if isinstance(logger, str) else None,
                data=params.get("data"),
            )
            self._spawn(self._requests.log_message(message))  # type: ignore[arg-type]
        elif method == "notifications/cancelled":
            # The server gave up one of its own requests: stop answering it, send no answer.
            task = self._serving.get(id_key(params.get("requestId")))
            if task is not None:
                task.cancel()

    def _serve(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        """Answer a request of the server in a task of its own, which a cancel can stop."""
        key = id_key(request_id)
        task = asyncio.ensure_future(self._answer(request_id, method, params))
        self._tasks.add(task)
        self._serving[key] = task

        def done(finished: asyncio.Task[Any]) -> None:
            self._tasks.discard(finished)
            if self._serving.get(key) is finished:
                del self._serving[key]

        task.add_done_callback(done)

    async def _answer(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        """Answer one request of the server."""
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        try:
            reply["result"] = await answer_request(self._requests, method, params)
        except RpcError as exc:
            reply["error"] = {"code": exc.code, "message": exc.message}
        except Exception as exc:  # a handler's failure is the server's answer, not devall's
            reply["error"] = {"code": INTERNAL_ERROR, "message": str(exc) or type(exc).__name__}
        with contextlib.suppress(SessionClosed):
            await self._send(reply)

    # --- what a source asks (mcp_protocol.McpSession) -------------------------------------------

    @property
    def logs(self) -> bool:
        # The 2026 protocol has no `logging/setLevel`: the level goes in each request's `_meta`.
        return self._stamp is None and self.capabilities.get("logging") is not None

    async def set_log_level(self, level: str) -> None:
        await self.rpc("logging/setLevel", {"level": level})

    async def request(self, operation: Callable[[Any], Awaitable[T]]) -> T:
        raise DevallError(f"{self.server}: only tools/list and tools/call are spoken here")

    async def list_tools(self) -> list[RawTool]:
        """Every page of `tools/list`, checked as the SDK checks it."""
        listed = await self._pages()
        if self.modern:  # tools whose x-mcp-header definitions are invalid are left out
            listed = exclude_invalid(listed)
        tools = [self._raw_tool(item, number) for number, item in enumerate(listed)]
        self._output_schemas.clear()
        self._output_schemas.update({tool.name: tool.output_schema for tool in tools})
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFn | None,
        meta: Mapping[str, Any] | None = None,
    ) -> CallOutcome | ToolResult:
        """One `tools/call`, checked as the SDK checks its result."""
        params = {"name": name, "arguments": arguments}
        result = await self.rpc("tools/call", params, progress=progress, meta=meta)
        if needs_input(result):  # 2026-07-28: answer what it asks, then send it again
            result = await complete_input(
                result,
                answer=lambda method, asked: answer_request(self._requests, method, asked),
                retry=lambda responses, state: self.rpc(
                    "tools/call", with_input(params, responses, state), progress, meta
                ),
            )
        return self._outcome(name, result)

    async def call_tool_task(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFn | None,
        meta: Mapping[str, Any] | None = None,
    ) -> CallOutcome | ToolResult:
        """`tools/call` run as an MCP task where the server takes tasks (mcp_tasks.py)."""
        if not offers_tasks(self.capabilities):
            return await self.call_tool(name, arguments, progress, meta)

        async def rpc(
            method: str, params: dict[str, Any], progress: ProgressFn | None = None
        ) -> dict[str, Any]:
            extra = meta if method == "tools/call" else None  # the trace context: the call's
            return await self.rpc(method, params, progress=progress, meta=extra, tasks=True)

        result = await call_as_task(rpc, name, arguments, progress, modern=self.modern)
        return self._outcome(name, result)

    # --- listing -------------------------------------------------------------------------------

    async def _pages(self) -> list[Any]:
        tools: list[Any] = []
        hints: list[int] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            result = await self.rpc("tools/list", {"cursor": cursor} if cursor else None)
            page = result.get("tools")
            if not isinstance(page, list):
                raise ProtocolError(self._invalid_listing("tools: a list is required"))
            tools.extend(page)
            if (hint := ttl_hint(result, self.protocol_version)) is not None:
                hints.append(hint)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                self.listing_ttl_ms = min(hints) if hints else None
                return tools
        raise ProtocolError(f"{self.server} listed tools on more than {MAX_PAGES} pages")

    def _raw_tool(self, item: Any, number: int) -> RawTool:
        where = f"tools.{number}"
        if not isinstance(item, Mapping):
            raise ProtocolError(self._invalid_listing(f"{where}: an object is required"))
        name, schema = item.get("name"), item.get("inputSchema")
        if not isinstance(name, str):
            raise ProtocolError(self._invalid_listing(f"{where}.name: a string is required"))
        if not isinstance(schema, Mapping):
            raise ProtocolError(
                self._invalid_listing(f"{where}.inputSchema: an object is required")
            )
        if (problem := icons_problem(item.get("icons"))) is not None:
            raise ProtocolError(self._invalid_listing(f"{where}.icons{problem}"))
        output = item.get("outputSchema")
        execution = item.get("execution")
        task_support = execution.get("taskSupport") if isinstance(execution, Mapping) else None
        meta, title, description = item.get("_meta"), item.get("title"), item.get("description")
        return RawTool(
            name=name,
            description=description if isinstance(description, str) else "",
            input_schema=dict(schema),
            meta=dict(meta) if isinstance(meta, Mapping) else {},
            title=title if isinstance(title, str) else None,
            annotations=json_object(item.get("annotations")),
            output_schema=dict(output) if isinstance(output, Mapping) else None,
            task_support=task_support if isinstance(task_support, str) else None,
            icons=listed_icons(item.get("icons")),
        )

    def _invalid_listing(self, problem: str) -> str:
        return f"{self.server} answered tools/list with an invalid result: {problem}"

    # --- calling -------------------------------------------------------------------------------

    def _outcome(self, name: str, result: Mapping[str, Any]) -> CallOutcome | ToolResult:
        """The result, or an `invalid_result` where the SDK's checks would refuse it."""
        content = result.get("content")
        if not isinstance(content, list):
            return invalid_result(name, "content: a list is required")
        for number, item in enumerate(content):
            problem = block_problem(item)
            if problem is not None:
                return invalid_result(name, f"content.{number}: {problem}")
        is_error = result.get("isError", False)
        if not isinstance(is_error, bool):
            return invalid_result(name, "isError: a boolean is required")
        structured = result.get("structuredContent")
        if structured is not None and not isinstance(structured, Mapping):
            return invalid_result(name, "structuredContent: an object is required")
        if not is_error:
            problem = schema_problem(name, self._output_schemas.get(name), result)
            if problem is not None:
                return invalid_result(name, problem)
        return CallOutcome(content, structured, result.get("_meta"), is_error)

    # --- the end -------------------------------------------------------------------------------

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _end(self, why: str) -> None:
        """Fail every request waiting for an answer; later ones fail at once."""
        if self._ended is None:
            self._ended = why
        for answer in self._pending.values():
            if not answer.done():
                answer.set_exception(SessionClosed(self._ended))

    async def close(self) -> None:
        """Stop reading and answering, then run `closing`; a process is its source's to stop."""
        self._end("the session was closed")
        tasks = [t for t in (self._reader, *self._tasks) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        closing, self._closing = self._closing, None
        if closing is not None:
            await closing()
