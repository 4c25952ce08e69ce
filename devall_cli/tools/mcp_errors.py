"""The one place where a session's exceptions become devall's own, whichever client raised them.

`translate_exception` maps an exception raised while connecting, listing or calling — fastmcp's,
the MCP SDK's, httpx2's and anyio's, or the direct client's `RpcError` and `SessionClosed`
(mcp_protocol.py) — to a DevallError (infrastructure failures stop the run) or to an error
ToolResult (tool failures are data). Messages name the server id and URL or command, never a
header value.

    phase "connect"                   phase "list"                phase "call"
    refused / DNS / reset → unreachable                           session lost → ServerDiedError
    HTTP 401 / 403 / other → http_401 / http_403 / http_error (with the body's reason)
    handshake timeout → handshake_timeout                          timeout → ToolResult "timeout"
    JSON-RPC error → ProtocolError    JSON-RPC error → ProtocolError  → ToolResult
    "Connection closed" → ServerDiedError (every phase)            ToolError → ToolResult
    OAuth failure (AuthError, the SDK's OAuthFlowError) → AuthError (every phase)

A `RpcError` is read as the SDK's MCPError, a `SessionClosed` as a lost session.

Light to import: the libraries' exception types are looked up where they are already loaded
(`sys.modules`), never imported here. An exception of a library that was never imported cannot
exist, so the direct client, which starts without fastmcp, gets its failures worded here too
without paying for the SDK.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from typing import Any, Literal

from devall_cli.errors import (
    AuthError,
    DevallError,
    ProtocolError,
    ServerUnreachableError,
)
from devall_cli.tools.base import ToolResult
from devall_cli.tools.mcp_failures import (
    SERVER_CLOSED,
    answered_with_error,
    closed_during_handshake,
    lost_connection,
    not_answered,
)
from devall_cli.tools.mcp_protocol import RpcError, SessionClosed
from devall_cli.tools.stdio_lines import INVALID_RESPONSE
from devall_cli.tools.tool_errors import (
    BAD_RESULT_MESSAGES,
    error_result,
    failed_call,
    invalid_result,
    timed_out_call,
    tool_error_class,
)

Phase = Literal["connect", "list", "call"]


class _NotLoaded(Exception):
    """Stands for the type of a library that is not loaded: nothing is an instance of it."""


def _loaded(module: str, name: str) -> Any:
    """`module.name` where `module` is already imported, else a type nothing is an instance of."""
    found = sys.modules.get(module)
    return getattr(found, name, _NotLoaded) if found is not None else _NotLoaded


class _Foreign:
    """The foreign exception types, as far as their libraries are loaded now."""

    def __init__(self) -> None:
        self.mcp_error: Any = _loaded("mcp", "MCPError")
        self.tool_error: Any = _loaded("fastmcp.exceptions", "ToolError")
        self.oauth_flow_error: Any = _loaded("mcp.client.auth", "OAuthFlowError")
        self.http_status_error: Any = _loaded("httpx2", "HTTPStatusError")
        self.http_timeout: Any = _loaded("httpx2", "TimeoutException")
        self.http_connect_timeout: Any = _loaded("httpx2", "ConnectTimeout")
        self.http_transport_error: Any = _loaded("httpx2", "TransportError")
        self.validation_error: Any = _loaded("pydantic", "ValidationError")
        self.lost_stream: tuple[Any, ...] = tuple(
            _loaded("anyio", name)
            for name in ("ClosedResourceError", "BrokenResourceError", "EndOfStream")
        )


def handled_types() -> tuple[type[BaseException], ...]:
    """Every exception type `translate_exception` recognises by type, of the libraries loaded
    now (the completeness test builds one instance of each); anything else becomes a
    ProtocolError naming its type."""
    foreign = _Foreign()
    types = (
        DevallError,
        RpcError,
        SessionClosed,
        foreign.oauth_flow_error,
        foreign.tool_error,
        foreign.mcp_error,
        foreign.http_status_error,
        foreign.http_timeout,
        foreign.http_transport_error,
        *foreign.lost_stream,
        ConnectionError,
        socket.gaierror,
        OSError,
        TimeoutError,
        foreign.validation_error,
        RuntimeError,
        BaseExceptionGroup,
    )
    return tuple(kind for kind in types if kind is not _NotLoaded)


# JSON-RPC error codes the SDK gives meaning to (mcp_types' names).
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
INVALID_REQUEST = -32600
_LOST_MESSAGES = (
    "client failed to connect",
    "server session was closed unexpectedly",
    "client is not connected",
    "session task completed",
)
_CONNECT_TIMEOUT_CODE = 408  # fastmcp raises MCPError(408) for an httpx2.ConnectTimeout


def chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then its causes and contexts; exception groups are entered at their first leaf."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, BaseExceptionGroup) and current.exceptions:
            current = current.exceptions[0]
            continue
        yield current
        current = current.__cause__ or current.__context__


def _message(exc: BaseException) -> str:
    return str(exc).strip() or type(exc).__name__


def _find(exc: BaseException, kind: Any) -> Any:
    """The first exception of `kind` (a type or a tuple of types) in the chain of `exc`."""
    return next((e for e in chain(exc) if isinstance(e, kind)), None)


def _answers(foreign: _Foreign) -> tuple[Any, ...]:
    """The types of a server's JSON-RPC error answer: the SDK's MCPError and `RpcError`."""
    return (foreign.mcp_error, RpcError)


def is_server_answer(exc: BaseException) -> bool:
    """Whether `exc` is the server's JSON-RPC error answer (the SDK's MCPError or `RpcError`)."""
    return isinstance(exc, _answers(_Foreign()))


def is_handshake_timeout(exc: BaseException) -> bool:
    """Whether connecting failed because the server did not complete the handshake in time."""
    if isinstance(exc, ServerUnreachableError):
        return exc.status == "handshake_timeout"
    foreign = _Foreign()
    for item in chain(exc):
        if isinstance(item, foreign.http_connect_timeout):
            return False  # no TCP connection at all: the server is unreachable
        if isinstance(item, (TimeoutError, foreign.http_timeout)):
            return True
        if "failed to initialize server session" in str(item).lower():
            return True
    return False


def is_session_lost(exc: BaseException) -> bool:
    """Whether a request failed because the session or connection is gone (not the request)."""
    foreign = _Foreign()
    for item in chain(exc):
        if isinstance(item, SessionClosed):
            return True
        if isinstance(item, RpcError):
            return False  # the direct client tells a lost session apart: SessionClosed
        if isinstance(item, foreign.mcp_error):
            if item.code == CONNECTION_CLOSED:
                return True
            # HTTP 404 for our session id: the server restarted or dropped the session.
            return item.code == INVALID_REQUEST and "session" in item.message.lower()
        if isinstance(item, TimeoutError):
            return False
        if isinstance(item, (*foreign.lost_stream, foreign.http_transport_error, OSError)):
            return True
        if isinstance(item, foreign.http_status_error):
            return False
        if isinstance(item, RuntimeError) and str(item).lower().startswith(_LOST_MESSAGES):
            return True
    return False


def describe_failure(exc: BaseException) -> str:
    """A short human reason for a connection-level failure."""
    foreign = _Foreign()
    for item in chain(exc):
        if isinstance(item, SessionClosed):
            return _message(item)  # SERVER_CLOSED, or why the server's input cannot be written
        if isinstance(item, foreign.mcp_error) and item.code == CONNECTION_CLOSED:
            return SERVER_CLOSED  # as the direct client says it
        if isinstance(item, ConnectionRefusedError):
            return "connection refused"
        if isinstance(item, socket.gaierror):
            return f"host name not resolved ({item.strerror or item})"
        if isinstance(item, ConnectionResetError):
            return "connection reset by peer"
        if isinstance(item, foreign.http_timeout):
            return "timed out connecting"
    return _message(exc)


def validation_problem(exc: Any) -> str:
    """The first problem a pydantic ValidationError found, as `where: what`."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    what = str(first.get("msg", ""))
    return f"{where}: {what}" if where else what


class _Translator:
    """Holds what one translation needs to word its messages."""

    def __init__(
        self,
        *,
        source_id: str,
        target: str,
        phase: Phase,
        tool_name: str,
        http_status: int | None,
        timeout: float | None,
        http_reason: str | None = None,
    ) -> None:
        self.server = f"MCP server '{source_id}' ({target})"
        self.phase = phase
        self.tool = tool_name
        self.http_status = http_status if http_status and http_status >= 400 else None
        self.http_reason = http_reason if self.http_status else None
        self.timeout = timeout
        self.foreign = _Foreign()

    def translate(self, exc: BaseException) -> DevallError | ToolResult:
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            return self.translate(exc.exceptions[0])
        auth = self.auth_failure(exc)
        if auth is not None:
            return auth
        if isinstance(exc, DevallError):
            return exc
        if isinstance(exc, self.foreign.tool_error):
            text = _message(exc)
            if self.phase != "call":
                return ProtocolError(f"{self.server} failed {self.method()}: {text}")
            return error_result(text, tool_name=self.tool, error_class=tool_error_class(text))
        status = _find(exc, self.foreign.http_status_error)
        if status is not None:
            return self.http_error(status.response.status_code)
        answer = _find(exc, _answers(self.foreign))
        if answer is not None and not is_session_lost(exc):
            return self.rpc_error(answer.code, answer.message)
        if self.phase == "connect":
            return self.connect_failure(exc)
        if is_session_lost(exc):
            return lost_connection(self.server, describe_failure(exc))
        if isinstance(exc, TimeoutError):
            return self.timed_out()
        return self.unexpected(exc)

    def auth_failure(self, exc: BaseException) -> AuthError | None:
        """The OAuth failure somewhere in the chain of `exc`, naming the server."""
        for item in chain(exc):
            if isinstance(item, AuthError):
                if item.message.startswith(self.server):
                    return item
                return AuthError(f"{self.server}: {item.message}", status=item.status)
            if isinstance(item, self.foreign.oauth_flow_error):
                return AuthError(f"{self.server}: authorization failed: {_message(item)}")
        return None

    def http_error(self, code: int) -> ServerUnreachableError:
        status = {401: "http_401", 403: "http_403"}.get(code, "http_error")
        # The body's reason ("Access is only allowed at ..."), when it is this answer's.
        said = f": {self.http_reason}" if self.http_reason and code == self.http_status else ""
        return ServerUnreachableError(f"{self.server} answered HTTP {code}{said}", status=status)

    def rpc_error(self, code: int, message: str) -> DevallError | ToolResult:
        """The server's (or the SDK's) JSON-RPC error `code`."""
        if self.http_status in (401, 403) or (self.http_status and self.phase != "call"):
            return self.http_error(self.http_status)
        if code == _CONNECT_TIMEOUT_CODE and self.phase == "connect":
            return ServerUnreachableError(f"cannot reach {self.server}: timed out connecting")
        if code in (REQUEST_TIMEOUT, _CONNECT_TIMEOUT_CODE):
            return self.timed_out()
        if self.phase == "call":
            return failed_call(self.tool, message, invalid_marker=INVALID_RESPONSE)
        return answered_with_error(self.server, self.method(), code, message)

    def method(self) -> str:
        return "tools/list" if self.phase == "list" else "the handshake"

    def timed_out(self) -> DevallError | ToolResult:
        if self.phase == "call":
            return timed_out_call(self.tool, self.timeout)
        if self.phase == "connect":
            return self.handshake_timeout()
        return not_answered(self.server, "tools/list", self.timeout)

    def connect_failure(self, exc: BaseException) -> DevallError:
        if is_handshake_timeout(exc):
            return self.handshake_timeout()
        if _find(exc, SessionClosed) is not None:
            return closed_during_handshake(self.server)
        lost_transport = (OSError, self.foreign.http_transport_error)
        if any(isinstance(e, lost_transport) for e in chain(exc)):
            return ServerUnreachableError(f"cannot reach {self.server}: {describe_failure(exc)}")
        if is_session_lost(exc) and not isinstance(exc, RuntimeError):
            return closed_during_handshake(self.server)
        if isinstance(exc, RuntimeError) and str(exc).lower().startswith(_LOST_MESSAGES):
            return ServerUnreachableError(f"cannot reach {self.server}: {_message(exc)}")
        result = self.unexpected(exc)
        assert isinstance(result, DevallError)  # phase "connect" never yields a ToolResult
        return result

    def handshake_timeout(self) -> ServerUnreachableError:
        limit = f" within {self.timeout:g}s" if self.timeout is not None else ""
        message = f"{self.server} did not complete the MCP handshake{limit}"
        return ServerUnreachableError(message, status="handshake_timeout")

    def unexpected(self, exc: BaseException) -> DevallError | ToolResult:
        text = _message(exc)
        first_line = text.splitlines()[0]
        invalid = isinstance(exc, self.foreign.validation_error)
        if invalid and exc.errors():  # type: ignore[attr-defined]
            first_line = f"{first_line}: {validation_problem(exc)}"
        bad_result = invalid or any(marker in text.lower() for marker in BAD_RESULT_MESSAGES)
        if self.phase == "call" and bad_result:
            return invalid_result(self.tool, first_line)
        return ProtocolError(f"unexpected {type(exc).__name__} from {self.server}: {first_line}")


def translate_exception(
    exc: BaseException,
    *,
    source_id: str,
    target: str,
    phase: Phase,
    tool_name: str = "",
    http_status: int | None = None,
    timeout: float | None = None,
    http_reason: str | None = None,
) -> DevallError | ToolResult:
    """Map a foreign exception to a DevallError, or (phase "call") to an error ToolResult.

    `http_status` is the status of the latest failed HTTP response, `http_reason` what its
    body said (masked and cut by the caller): an HTTP error names it.
    """
    translator = _Translator(
        source_id=source_id,
        target=target,
        phase=phase,
        tool_name=tool_name,
        http_status=http_status,
        timeout=timeout,
        http_reason=http_reason,
    )
    return translator.translate(exc)


def translate_failure(
    exc: BaseException,
    *,
    source_id: str,
    target: str,
    phase: Literal["connect", "list"],
    http_status: int | None = None,
    timeout: float | None = None,
    http_reason: str | None = None,
) -> DevallError:
    """`translate_exception` for connecting and listing, which never yield a ToolResult."""
    result = translate_exception(
        exc,
        source_id=source_id,
        target=target,
        phase=phase,
        http_status=http_status,
        timeout=timeout,
        http_reason=http_reason,
    )
    if isinstance(result, ToolResult):  # not reachable outside phase "call"; keep the contract
        return ProtocolError(f"unexpected tool result while {phase}ing '{source_id}'")
    return result
