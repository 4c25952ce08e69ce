"""The one place where fastmcp, MCP SDK, httpx2 and anyio exceptions become devall's own.

`translate_exception` maps a foreign exception raised while connecting, listing or calling to a
DevallError (infrastructure failures stop the run) or to an error ToolResult (tool failures are
data). Messages name the server id and URL or command, never a header value.

    phase "connect"                   phase "list"                phase "call"
    refused / DNS / reset → unreachable                           session lost → ServerDiedError
    HTTP 401 / 403 / other → http_401 / http_403 / http_error
    handshake timeout → handshake_timeout                          timeout → ToolResult "timeout"
    JSON-RPC error → ProtocolError    JSON-RPC error → ProtocolError  → ToolResult
    "Connection closed" → ServerDiedError (every phase)            ToolError → ToolResult
    OAuth failure (AuthError, the SDK's OAuthFlowError) → AuthError (every phase)

The words are mcp_failures.py's, which devall's own stdio client (mcp_direct.py) uses for the
same failures, so each reads the same whichever client met it.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Literal

import anyio
import httpx2
import mcp_types
from fastmcp.exceptions import ToolError
from mcp import MCPError
from mcp.client.auth import OAuthFlowError
from pydantic import ValidationError

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

# Every exception type `translate_exception` recognises by type (the completeness test builds
# one instance of each); anything else becomes a ProtocolError naming its type.
HANDLED_TYPES: tuple[type[BaseException], ...] = (
    DevallError,
    OAuthFlowError,
    ToolError,
    MCPError,
    httpx2.HTTPStatusError,
    httpx2.TimeoutException,
    httpx2.TransportError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    ConnectionError,
    socket.gaierror,
    OSError,
    TimeoutError,
    ValidationError,
    RuntimeError,
    BaseExceptionGroup,
)

_LOST_STREAM = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
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


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    return next((e for e in chain(exc) if isinstance(e, kind)), None)


def is_handshake_timeout(exc: BaseException) -> bool:
    """Whether connecting failed because the server did not complete the handshake in time."""
    if isinstance(exc, ServerUnreachableError):
        return exc.status == "handshake_timeout"
    for item in chain(exc):
        if isinstance(item, httpx2.ConnectTimeout):
            return False  # no TCP connection at all: the server is unreachable
        if isinstance(item, TimeoutError | httpx2.TimeoutException):
            return True
        if "failed to initialize server session" in str(item).lower():
            return True
    return False


def is_session_lost(exc: BaseException) -> bool:
    """Whether a request failed because the session or connection is gone (not the request)."""
    for item in chain(exc):
        if isinstance(item, MCPError):
            if item.code == mcp_types.CONNECTION_CLOSED:
                return True
            # HTTP 404 for our session id: the server restarted or dropped the session.
            return item.code == mcp_types.INVALID_REQUEST and "session" in item.message.lower()
        if isinstance(item, TimeoutError):
            return False
        if isinstance(item, (*_LOST_STREAM, httpx2.TransportError, OSError)):
            return True
        if isinstance(item, httpx2.HTTPStatusError):
            return False
        if isinstance(item, RuntimeError) and str(item).lower().startswith(_LOST_MESSAGES):
            return True
    return False


def describe_failure(exc: BaseException) -> str:
    """A short human reason for a connection-level failure."""
    for item in chain(exc):
        if isinstance(item, MCPError) and item.code == mcp_types.CONNECTION_CLOSED:
            return SERVER_CLOSED  # as devall's own client says it (mcp_failures.py)
        if isinstance(item, ConnectionRefusedError):
            return "connection refused"
        if isinstance(item, socket.gaierror):
            return f"host name not resolved ({item.strerror or item})"
        if isinstance(item, ConnectionResetError):
            return "connection reset by peer"
        if isinstance(item, httpx2.TimeoutException):
            return "timed out connecting"
    return _message(exc)


def validation_problem(exc: ValidationError) -> str:
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
    ) -> None:
        self.server = f"MCP server '{source_id}' ({target})"
        self.phase = phase
        self.tool = tool_name
        self.http_status = http_status if http_status and http_status >= 400 else None
        self.timeout = timeout

    def translate(self, exc: BaseException) -> DevallError | ToolResult:
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            return self.translate(exc.exceptions[0])
        auth = self.auth_failure(exc)
        if auth is not None:
            return auth
        if isinstance(exc, DevallError):
            return exc
        if isinstance(exc, ToolError):
            text = _message(exc)
            if self.phase != "call":
                return ProtocolError(f"{self.server} failed {self.method()}: {text}")
            return error_result(text, tool_name=self.tool, error_class=tool_error_class(text))
        status = _find(exc, httpx2.HTTPStatusError)
        if isinstance(status, httpx2.HTTPStatusError):
            return self.http_error(status.response.status_code)
        mcp_error = _find(exc, MCPError)
        if isinstance(mcp_error, MCPError) and not is_session_lost(exc):
            return self.mcp_error(mcp_error)
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
            if isinstance(item, OAuthFlowError):
                return AuthError(f"{self.server}: authorization failed: {_message(item)}")
        return None

    def http_error(self, code: int) -> ServerUnreachableError:
        status = {401: "http_401", 403: "http_403"}.get(code, "http_error")
        return ServerUnreachableError(f"{self.server} answered HTTP {code}", status=status)

    def mcp_error(self, exc: MCPError) -> DevallError | ToolResult:
        if self.http_status in (401, 403) or (self.http_status and self.phase != "call"):
            return self.http_error(self.http_status)
        if exc.code == _CONNECT_TIMEOUT_CODE and self.phase == "connect":
            return ServerUnreachableError(f"cannot reach {self.server}: timed out connecting")
        if exc.code in (mcp_types.REQUEST_TIMEOUT, _CONNECT_TIMEOUT_CODE):
            return self.timed_out()
        if self.phase == "call":
            return failed_call(self.tool, exc.message, invalid_marker=INVALID_RESPONSE)
        return answered_with_error(self.server, self.method(), exc.code, exc.message)

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
        if any(isinstance(e, OSError | httpx2.TransportError) for e in chain(exc)):
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
        if isinstance(exc, ValidationError) and exc.errors():
            first_line = f"{first_line}: {validation_problem(exc)}"
        bad_result = isinstance(exc, ValidationError) or any(
            marker in text.lower() for marker in BAD_RESULT_MESSAGES
        )
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
) -> DevallError | ToolResult:
    """Map a foreign exception to a DevallError, or (phase "call") to an error ToolResult."""
    translator = _Translator(
        source_id=source_id,
        target=target,
        phase=phase,
        tool_name=tool_name,
        http_status=http_status,
        timeout=timeout,
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
) -> DevallError:
    """`translate_exception` for connecting and listing, which never yield a ToolResult."""
    result = translate_exception(
        exc,
        source_id=source_id,
        target=target,
        phase=phase,
        http_status=http_status,
        timeout=timeout,
    )
    if isinstance(result, ToolResult):  # not reachable outside phase "call"; keep the contract
        return ProtocolError(f"unexpected tool result while {phase}ing '{source_id}'")
    return result
