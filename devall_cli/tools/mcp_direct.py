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
the same for HTTP bodies and event streams). What it speaks: the `initialize` handshake
(offering the newest protocol version the handshake reaches, accepting every version the MCP
SDK accepts), `tools/list` with `nextCursor` paging, `tools/call` with a progress token,
`logging/setLevel` and `notifications/roots/list_changed`. It answers the server's `ping` and
`roots/list` (offered, as by fastmcp's client, only when roots are configured), and its
`elicitation/create` and `sampling/createMessage` through the same `ServerRequests` as
fastmcp's client (the SDK's types are imported only when a server asks for sampling). Progress
and log notifications become the same events. Results are checked as the SDK checks them
(content items, structured content against the tool's output schema). It raises `RpcError`,
`SessionClosed` and ProtocolError; the source bounds its requests and mcp_errors.py words its
failures as it words fastmcp's, so a command prints the same whichever client ran.

Not spoken: the 2026-07-28 protocol (`server/discover`); a local server that speaks only that
one refuses the handshake, and the command says so (a remote one is handed to fastmcp's client).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable, Mapping
from types import SimpleNamespace
from typing import Any, Protocol, TypeVar

from devall_cli import __version__
from devall_cli.errors import DevallError, ProtocolError
from devall_cli.text import clean_value
from devall_cli.tools.base import ElicitationAnswer, RawTool, ToolResult
from devall_cli.tools.mcp_failures import SERVER_CLOSED
from devall_cli.tools.mcp_protocol import (
    CallOutcome,
    ProgressFn,
    RpcError,
    SessionClosed,
)
from devall_cli.tools.mcp_requests import ServerRequests
from devall_cli.tools.normalize import json_object
from devall_cli.tools.stdio_lines import INVALID_RESPONSE
from devall_cli.tools.tool_errors import invalid_result

T = TypeVar("T")

# Protocol versions of the initialize handshake, newest first; the first is offered.
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
MAX_PAGES = 1000  # tools/list pages followed before the listing is called endless
_SHOWN_CHARS = 300


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
) -> DirectSession:
    """A session on `process` after the handshake (unbounded here: the source bounds it).

    `closing` runs when the session closes (an HTTP channel ends its session there).
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
            sampling=requests.settings.sampling == "allow", roots=requests.offers_roots
        )
    except BaseException:
        await session.close()
        raise
    return session


class DirectSession:
    """One MCP session on a MessageChannel: requests out, answers and requests in.

    An `McpSession` (mcp_protocol.py) that speaks the handshake, `tools/list`, `tools/call` and
    `logging/setLevel`, and answers what the server asks.
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
        self.capabilities: Mapping[str, Any] = {}

    # --- the handshake -------------------------------------------------------------------------

    async def open(self, *, sampling: bool, roots: bool = False) -> None:
        """Start reading and shake hands (unbounded here: the source bounds it)."""
        if dropped := self._process.discard_pending():
            self._note(f"[devall: dropped {dropped} stale message(s)]")
        self._reader = asyncio.create_task(self._read())
        capabilities: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
        if roots:
            capabilities["roots"] = {"listChanged": True}
        if sampling:
            capabilities["sampling"] = {}
        result = await self.rpc(
            "initialize",
            {
                "protocolVersion": HANDSHAKE_VERSIONS[0],
                "capabilities": capabilities,
                "clientInfo": {"name": "devall", "version": __version__},
            },
        )
        version = result.get("protocolVersion")
        if version not in HANDSHAKE_VERSIONS:
            raise RpcError(INTERNAL_ERROR, f"unsupported protocol version {version!r}")
        server = result.get("serverInfo")
        name = server.get("name") if isinstance(server, Mapping) else None
        caps = result.get("capabilities")
        self.protocol_version = version
        self.server_name = name if isinstance(name, str) else None
        self.capabilities = caps if isinstance(caps, Mapping) else {}
        await self.notify("notifications/initialized")

    # --- requests ------------------------------------------------------------------------------

    async def rpc(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        progress: ProgressFn | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its result (RpcError, SessionClosed).

        `meta` goes into the request's `_meta`, beside the progress token (the trace context).
        """
        if self._ended is not None:
            raise SessionClosed(self._ended)
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        request_meta = dict(meta or {})
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
            # `initialize`, which the protocol forbids cancelling.
            if method != "initialize":
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
        """`notifications/roots/list_changed` (see ServerRequests.check_roots)."""
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
        request_id = _our_id(obj.get("id"))
        answer = self._pending.get(request_id) if request_id is not None else None
        problem = _response_problem(obj)
        if problem is not None:
            self._note(f"[devall: invalid JSON-RPC message ({problem}): {_shown(obj)}]")
            if answer is not None and not answer.done():
                reason = f"{INVALID_RESPONSE} from the server: {problem}"
                answer.set_exception(RpcError(INTERNAL_ERROR, reason))
            return
        if answer is None or answer.done():
            return  # an answer to a request given up, or to none of ours
        if "error" in obj:
            error = obj["error"]
            answer.set_exception(RpcError(error["code"], error["message"]))
        else:
            answer.set_result(obj["result"])

    def _notified(self, method: str, params: Mapping[str, Any]) -> None:
        if method == "notifications/progress":
            token = _our_id(params.get("progressToken"))
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
            task = self._serving.get(_id_key(params.get("requestId")))
            if task is not None:
                task.cancel()

    def _serve(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        """Answer a request of the server in a task of its own, which a cancel can stop."""
        key = _id_key(request_id)
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
            reply["result"] = await self._handle(method, params)
        except RpcError as exc:
            reply["error"] = {"code": exc.code, "message": exc.message}
        except Exception as exc:  # a handler's failure is the server's answer, not devall's
            reply["error"] = {"code": INTERNAL_ERROR, "message": str(exc) or type(exc).__name__}
        with contextlib.suppress(SessionClosed):
            await self._send(reply)

    async def _handle(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if method == "ping":
            return {}
        if method == "roots/list":
            if not self._requests.offers_roots:  # refused as fastmcp's client refuses it
                raise RpcError(INVALID_REQUEST, "List roots not supported")
            return {"roots": self._requests.root_list()}
        if method == "elicitation/create":
            return await self._elicit(params)
        if method == "sampling/createMessage" and self._requests.settings.sampling == "allow":
            return await self._sample(params)
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _elicit(self, params: Mapping[str, Any]) -> dict[str, Any]:
        message = params.get("message")
        url = params.get("url")
        schema = params.get("requestedSchema")
        if not isinstance(message, str) or not (
            isinstance(url, str) or isinstance(schema, Mapping)
        ):
            raise RpcError(
                INVALID_PARAMS, "elicitation/create needs a message and a requestedSchema or url"
            )
        if isinstance(url, str):
            answer = await self._requests.answer_elicitation(message, url, {})
            return _elicit_result(answer, None)
        form_schema = dict(schema) if isinstance(schema, Mapping) else {}
        answer = await self._requests.answer_elicitation(message, None, form_schema)
        return _elicit_result(answer, form_schema)

    async def _sample(self, params: Mapping[str, Any]) -> dict[str, Any]:
        import mcp_types  # only when a server asks: the sampling request is read as the SDK's
        from pydantic import ValidationError

        try:
            parsed = mcp_types.CreateMessageRequestParams.model_validate(dict(params))
        except ValidationError as exc:
            raise RpcError(
                INVALID_PARAMS, f"invalid sampling request: {exc.errors()[0]['msg']}"
            ) from exc
        result = await self._requests.sample(parsed.messages, parsed, None)
        if isinstance(result, mcp_types.ErrorData):
            raise RpcError(result.code, result.message)
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    # --- what a source asks (mcp_protocol.McpSession) -------------------------------------------

    @property
    def logs(self) -> bool:
        return self.capabilities.get("logging") is not None

    async def set_log_level(self, level: str) -> None:
        await self.rpc("logging/setLevel", {"level": level})

    async def request(self, operation: Callable[[Any], Awaitable[T]]) -> T:
        raise DevallError(f"{self.server}: only tools/list and tools/call are spoken here")

    async def list_tools(self) -> list[RawTool]:
        """Every page of `tools/list`, checked as the SDK checks it."""
        listed = await self._pages()
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
        return self._outcome(name, result)

    # --- listing -------------------------------------------------------------------------------

    async def _pages(self) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            result = await self.rpc("tools/list", {"cursor": cursor} if cursor else None)
            page = result.get("tools")
            if not isinstance(page, list):
                raise ProtocolError(self._invalid_listing("tools: a list is required"))
            tools.extend(page)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
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
            problem = _block_problem(item)
            if problem is not None:
                return invalid_result(name, f"content.{number}: {problem}")
        is_error = result.get("isError", False)
        if not isinstance(is_error, bool):
            return invalid_result(name, "isError: a boolean is required")
        structured = result.get("structuredContent")
        if structured is not None and not isinstance(structured, Mapping):
            return invalid_result(name, "structuredContent: an object is required")
        if not is_error:
            problem = _schema_problem(name, self._output_schemas.get(name), result)
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


def _schema_problem(
    name: str, schema: Mapping[str, Any] | None, result: Mapping[str, Any]
) -> str | None:
    """What is wrong with the structured content of a result, by the tool's output schema."""
    if schema is None:
        return None
    if "structuredContent" not in result:
        return f"Tool {name} has an output schema but did not return structured content"
    from jsonschema import exceptions, validators  # only for tools that declare a schema

    try:
        validator = validators.validator_for(schema)(schema)
        error = exceptions.best_match(validator.iter_errors(result["structuredContent"]))
    except Exception as exc:  # a broken schema, a `$ref` that does not resolve
        return f"Invalid schema for tool {name}: {str(exc).splitlines()[0]}"
    if error is None:
        return None
    return f"Invalid structured content returned by tool {name}: {error.message}"


# The content blocks of a tool result and the string fields each must have, as the SDK checks.
_BLOCK_FIELDS = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": (),
}


def _block_problem(item: Any) -> str | None:
    """What makes `item` no content block the MCP schema knows (None when it is one)."""
    if not isinstance(item, Mapping):
        return "an object is required"
    kind = item.get("type")
    if kind not in _BLOCK_FIELDS:
        return f"unknown content type {kind!r}"
    missing = [key for key in _BLOCK_FIELDS[kind] if not isinstance(item.get(key), str)]
    if missing:
        return f"{kind} content needs {', '.join(missing)} (a string)"
    if kind == "resource":
        resource = item.get("resource")
        if not isinstance(resource, Mapping) or not isinstance(resource.get("uri"), str):
            return "resource content needs a resource with a uri"
        if not isinstance(resource.get("text"), str) and not isinstance(resource.get("blob"), str):
            return "resource content needs a text or a blob"
    return None


def _elicit_result(answer: ElicitationAnswer, schema: dict[str, Any] | None) -> dict[str, Any]:
    """The `elicitation/create` result; accepted form content is checked against its schema."""
    result: dict[str, Any] = {"action": answer.action}
    if answer.content is not None:
        content = dict(answer.content)
        if answer.action == "accept" and schema:
            from jsonschema import validators

            validators.validator_for(schema)(schema).validate(content)
        result["content"] = content
    return result


def _our_id(value: Any) -> int | None:
    """A request id or progress token as devall sent it (an int), also when the server echoes
    it as a string ("1" for 1), as the SDK accepts; None when it cannot be one of ours."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def _id_key(value: Any) -> str:
    """A key for an id of the server's own requests: a number and its string form are one."""
    return json.dumps(value) if not isinstance(value, int | str) else str(value)


def _response_problem(obj: Mapping[str, Any]) -> str | None:
    """What makes `obj` no valid JSON-RPC response (None when it is one)."""
    if obj.get("jsonrpc") != "2.0":
        return "jsonrpc: '2.0' is required"
    request_id = obj.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return "id: a number or string is required"
    if ("result" in obj) == ("error" in obj):
        return "exactly one of result and error is required"
    if "result" in obj:
        return None if isinstance(obj["result"], Mapping) else "result: an object is required"
    error = obj["error"]
    if not isinstance(error, Mapping):
        return "error: an object is required"
    code = error.get("code")
    if isinstance(code, bool) or not isinstance(code, int):
        return "error.code: an integer is required"
    if not isinstance(error.get("message"), str):
        return "error.message: a string is required"
    return None


def _shown(obj: Mapping[str, Any]) -> str:
    text = json.dumps(obj, ensure_ascii=False)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
