"""One long-lived MCP session per server, shared by every list and call of a run.

`McpSessionSource` holds one `McpSession` (mcp_protocol.py) at a time: fastmcp's Client by
default, on the transport its subclass supplies (`make_transport`), or whatever session the
subclass opens itself (`_new_session`: the local source's direct client). Subclasses also
decide what a lost session means (`_on_session_lost`). Connecting never hangs: each attempt
(transport connect + handshake) is bounded by `init_timeout`. The first attempt probes the modern
protocol; if the server never answers it, one more attempt uses the classic `initialize`
handshake (so a server that never answers at all fails after at most twice `init_timeout`).
Every list and call ends at its timeout, also when the transport cannot even send it (a hung
SSE server holds the POST of an earlier request, and later ones queue behind it).

Subclass contract:
- `make_transport()` returns a fresh fastmcp `ClientTransport` for each connection attempt.
- `_new_session()` opens a session (unbounded: the source bounds it); by default fastmcp's
  Client on `make_transport()`, probing the 2026 revision first.
- `_on_session_lost(exc)` runs with the session lock held after a request failed because the
  session is gone. Return True once a new session is up (call `await self._reconnect()`); the
  failed request is then retried once. Return False (the default) to fail with ServerDiedError.
- `retry_delays` (class attribute): waits between connect/list attempts that failed because the
  server could not be reached; empty means a single attempt.
- `_failure(exc, phase)` words a connect/list failure; override to raise other DevallErrors.

Every failure a session raises is worded by mcp_errors.py, whichever client raised it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from devall_cli.errors import (
    DevallConnectionError,
    DevallError,
    ProtocolError,
    ServerDiedError,
    ServerUnreachableError,
)
from devall_cli.json_limits import JsonLimitError, check_value
from devall_cli.text import clean_value
from devall_cli.tools import mcp_errors
from devall_cli.tools.base import (
    WARNING_LINE,
    CallContext,
    Elicitor,
    LogCallback,
    RawTool,
    ServerInfo,
    SourceKind,
    ToolEvents,
    ToolResult,
)
from devall_cli.tools.kinds.client_settings import DEFAULT_CLIENT, McpClientConfig
from devall_cli.tools.mcp_headers import Excluded, collect_excluded, excluded_warning
from devall_cli.tools.mcp_requests import CallClock, RunningCall, ServerRequests
from devall_cli.tools.mcp_tasks import runs_as_task
from devall_cli.tools.normalize import normalize_result, result_meta
from devall_cli.tools.person_wait import PersonWaits
from devall_cli.tools.tool_errors import invalid_result, tool_error_class

if TYPE_CHECKING:
    from devall_cli.tools.attachments import AttachmentStore
    from devall_cli.tools.mcp_fastmcp import FastmcpSession
    from devall_cli.tools.mcp_protocol import CallResult, McpSession

T = TypeVar("T")
LOG_TAIL_LINES = 50
CLOSE_TIMEOUT = 5.0
# The client enforces init_timeout on the handshake itself; this outer bound also covers the
# transport's own connect (an SSE stream that never opens), a little later so the client's own,
# more precise error usually wins.
CONNECT_GRACE = 0.5
# The client's own request timeout starts only once a request is sent; over SSE the sending can
# wait behind an earlier request the server never answered. This outer bound, a little later so
# the client's own timeout (which also cancels the request on the server) usually wins, makes
# every request end at its timeout all the same.
REQUEST_GRACE = 0.25
# Where structuredContent sits in a response: message (1), result (2), structuredContent (3).
STRUCTURED_CONTENT_LEVEL = 3

# The MCP SDK logs transport tracebacks (e.g. a dropped SSE stream) at ERROR level; without a
# handler Python would print them on stderr. devall reports those failures itself.
logging.getLogger("mcp").addHandler(logging.NullHandler())


class McpSessionSource:
    """One long-lived MCP session reused for every list and call."""

    kind: SourceKind
    retry_delays: tuple[float, ...] = ()

    def __init__(
        self,
        *,
        id: str,
        target: str,
        request_timeout: float,
        init_timeout: float,
        store: AttachmentStore | None = None,
        on_log: LogCallback | None = None,
        max_concurrency: int = 1,
        client_config: McpClientConfig = DEFAULT_CLIENT,
        events: ToolEvents | None = None,
        elicitor: Elicitor | None = None,
    ) -> None:
        self.id = id
        self.target = target
        self.request_timeout = request_timeout
        self.init_timeout = init_timeout
        self.store = store
        self.on_log = on_log
        self.max_concurrency = max(1, max_concurrency)
        self._limiter = asyncio.Semaphore(self.max_concurrency)
        self._lock = asyncio.Lock()  # guards connecting, reconnecting and swapping the client
        self._current: McpSession | None = None
        self._generation = 0  # bumped for every new session; tells a stale failure apart
        self._info: ServerInfo | None = None
        self._closed = False
        self._recent_log: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self._excluded: set[str] = set()  # tools left out of a listing, warned about once
        self._task_support: dict[str, str | None] = {}  # tool -> `execution.taskSupport`, listed
        self.waits = PersonWaits()  # the bounds below stop while someone signs in (OAuth)
        self.requests = ServerRequests(
            server_id=id,
            settings=client_config,
            events=events,
            elicitor=elicitor,
            # With events, a server's log message becomes a `server.log` event of its own.
            note=lambda line: self._log(line, notify=events is None),
        )

    # --- what subclasses provide -------------------------------------------------------------

    def make_transport(self) -> Any:
        """A new fastmcp ClientTransport for one connection attempt."""
        raise NotImplementedError

    async def _new_session(self) -> McpSession:
        """Open a session: fastmcp's Client, modern probe first, one legacy try if unanswered."""
        transport = self.make_transport()
        legacy_only = bool(getattr(transport, "legacy_only", False))
        try:
            return await self._connect("legacy" if legacy_only else "auto", transport)
        except Exception as exc:
            if legacy_only or not mcp_errors.is_handshake_timeout(exc):
                raise
        self._log(
            f"[devall] no answer to the protocol probe within {self.init_timeout:g}s; "
            "retrying with the initialize handshake"
        )
        return await self._connect("legacy", self.make_transport())

    async def _on_session_lost(self, exc: BaseException) -> bool:
        """React to a lost session (lock held); True when `_reconnect()` brought a new one up."""
        return False

    def _http_status(self) -> int | None:
        """The HTTP status of the latest failed response, for sources that speak HTTP."""
        return None

    def _http_reason(self) -> str | None:
        """What the body of that failed response said (first lines, masked and cut), if any."""
        return None

    def _client_init_timeout(self) -> float:
        """The fastmcp client's own handshake bound (0: none, `init_timeout` bounds it here)."""
        return self.init_timeout

    def _failure(self, exc: BaseException, phase: Literal["connect", "list"]) -> DevallError:
        """The DevallError for a failed connect or list."""
        failure: DevallError = mcp_errors.translate_failure(
            exc,
            source_id=self.id,
            target=self.target,
            phase=phase,
            http_status=self._http_status(),
            http_reason=self._http_reason(),
            timeout=self.init_timeout if phase == "connect" else self.request_timeout,
        )
        return failure

    # --- public API --------------------------------------------------------------------------

    @property
    def server(self) -> str:
        """`MCP server 'id' (target)`, as errors name the server."""
        return f"MCP server '{self.id}' ({self.target})"

    @property
    def info(self) -> ServerInfo | None:
        """What the server said about itself when the current session started."""
        return self._info

    async def start(self) -> ServerInfo:
        """Connect and complete the handshake (bounded by init_timeout); idempotent."""
        await self._with_retries("connect", self._session)
        assert self._info is not None
        return self._info

    @property
    def listing_ttl_ms(self) -> int | None:
        """The cache hint (`ttlMs`) of the last listing; None if the server gave none."""
        return self._current.listing_ttl_ms if self._current is not None else None

    async def list_tools(self) -> list[RawTool]:
        """The server's tools, connecting first if needed."""
        with collect_excluded() as excluded:  # left out for invalid x-mcp-header definitions
            tools = await self._with_retries("list", self._list_once)
        self._warn_excluded(excluded)
        self._check_unique([tool.name for tool in tools])
        self._task_support = {tool.name: tool.task_support for tool in tools}
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float | None = None,
        context: CallContext | None = None,
    ) -> ToolResult:
        """Call a tool; tool failures and timeouts come back as error results.

        `context` answers what the server asks during the call (see mcp_requests.py).
        """
        limit = self.request_timeout if timeout is None else timeout
        started = time.perf_counter()
        # A lone surrogate cannot be serialized: the request would fail and the session with it.
        cleaned: dict[str, Any] = clean_value(dict(arguments))
        async with self._limiter:
            with self.requests.calling(context) as call:
                outcome = await self._call_with_recovery(name, cleaned, limit, call)
        duration_ms = (time.perf_counter() - started) * 1000
        if isinstance(outcome, ToolResult):
            return ToolResult(
                blocks=outcome.blocks,
                is_error=outcome.is_error,
                error_class=outcome.error_class,
                duration_ms=duration_ms,
            )
        refused = _refuse_too_deep(outcome, name)
        if refused is not None:
            return dataclasses.replace(refused, duration_ms=duration_ms)
        blocks = normalize_result(outcome, tool_name=name, store=self.store, source="mcp_tool")
        error_class = None
        if outcome.is_error:
            text = " ".join(getattr(block, "text", "") for block in blocks)
            error_class = tool_error_class(text)
        return ToolResult(
            blocks=blocks,
            is_error=bool(outcome.is_error),
            error_class=error_class,
            duration_ms=duration_ms,
            meta=result_meta(outcome),
        )

    async def request(self, operation: Callable[[Any], Awaitable[T]]) -> T:
        """Another request on the session (resources, prompts), bounded by the request timeout.

        `operation` gets fastmcp's Client. The server's JSON-RPC error answer comes out as the
        SDK's MCPError, for the caller to word; every other failure as a DevallError.
        """
        async with self._limiter:
            session, _ = await self._session()
            try:
                return await _bounded(session.request(operation), self.request_timeout, self.waits)
            except Exception as exc:
                if mcp_errors.is_server_answer(exc) and not mcp_errors.is_session_lost(exc):
                    raise
                raise self._failure(exc, "list") from exc

    async def on_session(self, operation: Callable[[McpSession], Coroutine[Any, Any, T]]) -> T:
        """`request`, but `operation` gets the session itself, whichever client it is: for an
        extension's requests, which neither client's typed surface speaks (mcp_skills.py)."""
        async with self._limiter:
            session, _ = await self._session()
            try:
                return await _bounded(operation(session), self.request_timeout, self.waits)
            except Exception as exc:
                if mcp_errors.is_server_answer(exc) and not mcp_errors.is_session_lost(exc):
                    raise
                raise self._failure(exc, "list") from exc

    def _check_unique(self, names: list[str]) -> None:
        """Two tools under one name break the protocol: a call could not say which one it means."""
        twice = sorted(name for name, count in Counter(names).items() if count > 1)
        if twice:
            listed = ", ".join(f"'{name}'" for name in twice)
            raise ProtocolError(f"{self.server} listed more than one tool named {listed}")

    async def close(self) -> None:
        """End the session; safe to call more than once."""
        self._closed = True
        session, self._current = self._current, None
        if session is not None:
            await _close_quietly(session)

    # --- sessions ----------------------------------------------------------------------------

    async def _session(self) -> tuple[McpSession, int]:
        """The current session and its generation, connecting first when there is none."""
        session = self._current
        if session is not None:
            return session, self._generation
        async with self._lock:
            if self._current is None:
                await self._open_session()
            assert self._current is not None
            return self._current, self._generation

    async def _reconnect(self) -> None:
        """Replace the current session with a new one (lock held by the caller)."""
        session, self._current = self._current, None
        if session is not None:
            await _close_quietly(session)
        await self._open_session()

    async def _open_session(self) -> None:
        """Open a new session (`_new_session`), then set the log level the settings ask for."""
        if self._closed:
            raise ServerDiedError(f"{self.server} is already closed")
        started = time.perf_counter()
        try:
            session = await self._new_session()
        except Exception as exc:
            raise self._failure(exc, "connect") from exc
        if self._closed:  # closed while connecting: do not leave the new session behind
            await _close_quietly(session)
            raise ServerDiedError(f"{self.server} is already closed")
        self._info = ServerInfo(
            protocol_version=session.protocol_version,
            server_name=session.server_name,
            connect_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        self._current = session
        self._generation += 1
        self.requests.session_started()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.request_timeout):
                await self.requests.apply_log_level(session)

    async def _connect(self, mode: Literal["auto", "legacy"], transport: Any) -> FastmcpSession:
        """Enter a new fastmcp Client on `transport`, bounded by init_timeout."""
        from devall_cli.tools.mcp_fastmcp import open_fastmcp

        async with self.waits.deadline(self.init_timeout + CONNECT_GRACE):
            return await open_fastmcp(
                transport,
                mode=mode,
                request_timeout=self.request_timeout,
                init_timeout=self._client_init_timeout(),
                handlers=self.requests.client_kwargs(),
                close=_close_quietly,
            )

    async def _recover(self, exc: BaseException, generation: int) -> bool:
        """Whether a session is usable again after `exc` lost the one of `generation`."""
        async with self._lock:
            if self._generation != generation and self._current is not None:
                return True  # another request already replaced the session
            if self._closed:
                return False
            return await self._on_session_lost(exc)

    # --- requests ----------------------------------------------------------------------------

    async def _with_retries(self, phase: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run `attempt`, retrying after the waits in `retry_delays` while unreachable."""
        delays = self.retry_delays
        for number in range(len(delays) + 1):
            try:
                return await attempt()
            except ServerUnreachableError as exc:
                if exc.status != "unreachable" or number == len(delays):
                    raise
                delay = delays[number]
                # The reason only: the error that ends the attempts names server and URL.
                self._log(
                    f"[devall] {phase} attempt {number + 1}/{len(delays) + 1} failed "
                    f"({_reason(exc.message)}); retrying in {delay:g}s"
                )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def _list_once(self) -> list[RawTool]:
        async with self._limiter:
            session, generation = await self._session()
            try:
                return await _bounded(session.list_tools(), self.request_timeout, self.waits)
            except Exception as exc:
                if not mcp_errors.is_session_lost(exc):
                    raise self._failure(exc, "list") from exc
                lost = exc
            if not await self._recover(lost, generation):
                raise self._failure(lost, "list") from lost
            session, _ = await self._session()
            try:
                return await _bounded(session.list_tools(), self.request_timeout, self.waits)
            except Exception as exc:
                raise self._failure(exc, "list") from exc

    async def _call_once(
        self,
        session: McpSession,
        name: str,
        arguments: dict[str, Any],
        limit: float,
        call: RunningCall,
    ) -> CallResult | ToolResult:
        await self.requests.check_roots(session)
        progress = self.requests.progress_handler(call)
        meta = call.context.request_meta or None
        # A tool that runs as a task: created, waited for and cancelled as one (mcp_tasks.py),
        # the whole of it within the call's timeout.
        as_task = runs_as_task(self._task_support.get(name))
        call_tool = session.call_tool_task if as_task else session.call_tool
        request = call_tool(name, arguments, progress, meta=meta)
        return await _bounded(request, limit, self.waits, call.clock)

    async def _call_with_recovery(
        self, name: str, arguments: dict[str, Any], limit: float, call: RunningCall
    ) -> CallResult | ToolResult:
        """One call, retried once on a new session when the first one was lost."""
        session, generation = await self._session()
        try:
            return await self._call_once(session, name, arguments, limit, call)
        except Exception as exc:
            if not mcp_errors.is_session_lost(exc):
                return self._call_failure(exc, name, limit)
            lost = exc
        try:
            recovered = await self._recover(lost, generation)
        except DevallConnectionError as exc:
            why = mcp_errors.describe_failure(exc.__cause__) if exc.__cause__ else exc.message
            raise self._died(lost, f"could not reconnect: {why}") from exc
        if not recovered:
            raise self._died(lost)
        session, _ = await self._session()
        try:
            return await self._call_once(session, name, arguments, limit, call)
        except Exception as exc:
            if mcp_errors.is_session_lost(exc):
                raise self._died(exc) from exc
            return self._call_failure(exc, name, limit)

    def _call_failure(self, exc: BaseException, name: str, limit: float) -> ToolResult:
        """The error result for a failed call, or raise when the failure is not the tool's."""
        outcome: DevallError | ToolResult = mcp_errors.translate_exception(
            exc,
            source_id=self.id,
            target=self.target,
            phase="call",
            tool_name=name,
            http_status=self._http_status(),
            http_reason=self._http_reason(),
            timeout=limit,
        )
        if isinstance(outcome, DevallError):
            raise outcome from exc
        return outcome

    def _died(self, exc: BaseException, reason: str | None = None) -> ServerDiedError:
        """The error for a session that is gone for good."""
        why = reason or mcp_errors.describe_failure(exc)
        return ServerDiedError(f"lost the session with {self.server}: {why}")

    # --- logs --------------------------------------------------------------------------------

    def _warn_excluded(self, excluded: list[Excluded]) -> None:
        """One warning a tool the server listed that is not offered (a server log line)."""
        events = self.requests.events
        for tool, why in excluded:
            if tool not in self._excluded:
                self._excluded.add(tool)
                text = excluded_warning(tool, why)
                self._log(f"{WARNING_LINE}{text}", notify=events is None)
                if events is not None:
                    events.server_message(self.id, "warning", "devall", text)

    def _log(self, line: str, *, notify: bool = True) -> None:
        """A line for the server's log; `notify`: also an `on_log` callback (a log event)."""
        self._recent_log.append(line)
        if notify and self.on_log is not None:
            self.on_log(self.id, line)


def _refuse_too_deep(result: CallResult, name: str) -> ToolResult | None:
    """An `invalid_result` for structured content nested beyond json_limits.py's limit.

    Over stdio such a response never gets here (stdio_lines.py refuses the line); over HTTP the
    SDK parsed it, and the normalizer and the event log would recurse through it.
    """
    try:
        check_value(result.structured_content, level=STRUCTURED_CONTENT_LEVEL)
    except JsonLimitError as exc:
        return invalid_result(name, f"the response {exc}")
    return None


async def _bounded(
    request: Coroutine[Any, Any, T],
    limit: float,
    waits: PersonWaits | None = None,
    clock: CallClock | None = None,
) -> T:
    """`request`, given up with TimeoutError a moment after `limit` seconds, whatever it waits on.

    Time spent waiting on a person (`waits`: an OAuth sign-in) or paused on the `clock` (devall
    answering the server: the operator, the model) does not count. A request given up is
    cancelled but not waited for: on cancellation the SDK still tries, for up to 5 s, to send
    the server a cancel notification, and over SSE that send waits behind the same hung
    request. The task ends on its own; `_ABANDONED` holds it until then.
    """
    task = asyncio.ensure_future(request)
    loop = asyncio.get_running_loop()
    end = loop.time() + limit + REQUEST_GRACE
    waited_before = waits.waited() if waits is not None else 0.0
    try:
        while True:
            paused = clock.extra() if clock is not None else 0.0
            paused += waits.waited() - waited_before if waits is not None else 0.0
            left = end + paused - loop.time()
            if (clock is not None and clock.active) or (waits is not None and waits.waiting):
                left = PAUSE_CHECK  # look again soon: the pause may end any moment
            elif left <= 0:
                break
            done, _ = await asyncio.wait({task}, timeout=left)
            if task in done:
                return task.result()
    except asyncio.CancelledError:
        _abandon(task)
        raise
    _abandon(task)
    raise TimeoutError(f"no answer within {limit:g}s")


PAUSE_CHECK = 0.25
_ABANDONED: set[asyncio.Future[Any]] = set()


def _reason(message: str) -> str:
    """`cannot reach MCP server 'x' (URL): connection refused` -> `connection refused`."""
    _, found, reason = message.partition("): ")
    return reason if found and reason else message


def _abandon(task: asyncio.Future[Any]) -> None:
    task.cancel()
    _ABANDONED.add(task)
    task.add_done_callback(_forget)


def _forget(task: asyncio.Future[Any]) -> None:
    _ABANDONED.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved, so that asyncio does not report it at exit


async def _close_quietly(session: McpSession) -> None:
    """Close a session that may already be broken, without raising and without hanging."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(CLOSE_TIMEOUT):
            await session.close()
