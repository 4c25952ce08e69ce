"""translate_exception: every foreign exception becomes a DevallError or an error ToolResult."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any, cast

import anyio
import httpx2
import mcp_types
import pytest
from fastmcp.exceptions import ToolError
from mcp import MCPError
from mcp.client.auth import OAuthFlowError
from pydantic import ValidationError

from devall_cli.errors import (
    AuthError,
    DevallError,
    ExitCode,
    ProtocolError,
    ServerDiedError,
    ServerUnreachableError,
)
from devall_cli.tools import mcp_errors
from devall_cli.tools.base import TextBlock, ToolResult
from devall_cli.tools.mcp_errors import (
    Phase,
    handled_types,
    is_handshake_timeout,
    is_session_lost,
    translate_exception,
    translate_failure,
)
from devall_cli.tools.mcp_failures import SERVER_CLOSED
from devall_cli.tools.mcp_protocol import RpcError, SessionClosed

URL = "http://127.0.0.1:9/mcp"
SECRET = "Bearer hush-hush"


def caused(exc: BaseException, cause: BaseException) -> BaseException:
    exc.__cause__ = cause
    return exc


def status_error(code: int) -> httpx2.HTTPStatusError:
    request = httpx2.Request("POST", URL, headers={"Authorization": SECRET})
    response = httpx2.Response(code, request=request)
    try:
        response.raise_for_status()
    except httpx2.HTTPStatusError as exc:
        return exc
    raise AssertionError("no error raised")


def validation_error() -> ValidationError:
    try:
        mcp_types.Tool.model_validate({})
    except ValidationError as exc:
        return exc
    raise AssertionError("no error raised")


def refused() -> BaseException:
    """What fastmcp raises when nothing listens: RuntimeError ← httpx2 ← ConnectionRefusedError."""
    connect = caused(
        httpx2.ConnectError("All connection attempts failed"),
        ConnectionRefusedError(111, "Connect call failed"),
    )
    return caused(RuntimeError("Client failed to connect: All connection attempts failed"), connect)


def handshake_timed_out() -> BaseException:
    inner = caused(RuntimeError("Failed to initialize server session"), TimeoutError())
    return caused(
        RuntimeError("Client failed to connect: Failed to initialize server session"), inner
    )


SAMPLES: list[BaseException] = [
    ServerDiedError("already ours"),
    OAuthFlowError("Authorization server metadata issuer mismatch"),
    caused(RuntimeError("Client failed to connect"), AuthError("authorization failed: no")),
    ToolError("boom"),
    MCPError(code=mcp_types.REQUEST_TIMEOUT, message="Request 'tools/call' timed out"),
    MCPError(code=mcp_types.METHOD_NOT_FOUND, message="Method not found"),
    MCPError(code=mcp_types.INVALID_PARAMS, message="Unknown tool: 'x'"),
    MCPError(code=mcp_types.PARSE_ERROR, message="Parse error"),
    MCPError(code=mcp_types.INTERNAL_ERROR, message="Server returned an error response"),
    MCPError(code=mcp_types.CONNECTION_CLOSED, message="Connection closed"),
    MCPError(code=mcp_types.INVALID_REQUEST, message="Session not found"),
    MCPError(code=408, message="Timed out while waiting for response."),
    RpcError(mcp_types.INVALID_PARAMS, "Unknown tool: 'x'"),
    SessionClosed(SERVER_CLOSED),
    caused(SessionClosed("cannot write to the server: Broken pipe"), BrokenPipeError(32, "pipe")),
    status_error(401),
    status_error(403),
    status_error(500),
    httpx2.ConnectTimeout("connect timed out"),
    httpx2.ReadTimeout("read timed out"),
    httpx2.ConnectError("All connection attempts failed"),
    httpx2.RemoteProtocolError("peer closed connection"),
    anyio.ClosedResourceError(),
    anyio.BrokenResourceError(),
    anyio.EndOfStream(),
    ConnectionRefusedError(111, "Connection refused"),
    ConnectionResetError(104, "Connection reset by peer"),
    socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
    OSError(113, "No route to host"),
    TimeoutError(),
    validation_error(),
    refused(),
    handshake_timed_out(),
    RuntimeError("Server session was closed unexpectedly"),
    RuntimeError("Invalid structured content returned by tool x: 1 is not a string"),
    RuntimeError("something nobody expected"),
    ExceptionGroup("task group", [ConnectionRefusedError(111, "Connection refused")]),
    ValueError("not an exception the module knows"),
    KeyError("neither is this"),
]
PHASES = ("connect", "list", "call")


def translate(exc: BaseException, phase: str, **kwargs: Any) -> DevallError | ToolResult:
    assert phase in PHASES
    return translate_exception(
        exc, source_id="web", target=URL, phase=cast(Phase, phase), tool_name="tool_x", **kwargs
    )


def test_samples_cover_every_handled_type() -> None:
    for handled in handled_types():
        assert any(isinstance(s, handled) for s in SAMPLES), f"no sample for {handled.__name__}"


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("exc", SAMPLES, ids=lambda e: f"{type(e).__name__}:{str(e)[:30]}")
def test_every_exception_maps_to_a_devall_error_or_a_tool_result(
    exc: BaseException, phase: str
) -> None:
    outcome = translate(exc, phase)
    if phase == "call":
        assert isinstance(outcome, DevallError | ToolResult)
    else:
        assert isinstance(outcome, DevallError)
    if isinstance(outcome, ToolResult):
        assert outcome.is_error and outcome.error_class
        assert all(isinstance(b, TextBlock) and b.tool_name == "tool_x" for b in outcome.blocks)
    else:
        assert outcome.message and SECRET not in outcome.message
        if not isinstance(exc, DevallError):
            assert URL in outcome.message or "tool_x" in outcome.message


def test_connection_refused_is_unreachable_and_names_the_url() -> None:
    error = translate(refused(), "connect")
    assert isinstance(error, ServerUnreachableError) and error.status == "unreachable"
    assert error.exit_code == ExitCode.CONNECTION
    assert error.message == f"cannot reach MCP server 'web' ({URL}): connection refused"


@pytest.mark.parametrize("phase", PHASES)
def test_an_oauth_failure_is_an_auth_error_naming_the_server(phase: str) -> None:
    flow = translate(OAuthFlowError("issuer mismatch: a != b"), phase)
    assert isinstance(flow, AuthError) and flow.exit_code == ExitCode.CONNECTION
    assert flow.message.startswith("MCP server 'web'") and URL in flow.message
    assert flow.message.endswith("authorization failed: issuer mismatch: a != b")
    ours = AuthError("needs a sign-in in the browser first", status="http_401")
    wrapped = translate(caused(RuntimeError("Client failed to connect"), ours), phase)
    assert isinstance(wrapped, AuthError) and wrapped.status == "http_401"
    assert URL in wrapped.message and "needs a sign-in" in wrapped.message


def test_dns_failure_is_unreachable() -> None:
    error = translate(socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "connect")
    assert isinstance(error, ServerUnreachableError) and error.status == "unreachable"
    assert "host name not resolved" in error.message


@pytest.mark.parametrize(
    ("code", "status"),
    [(401, "http_401"), (403, "http_403"), (404, "http_error"), (500, "http_error")],
)
def test_http_status_errors(code: int, status: str) -> None:
    error = translate(status_error(code), "connect")
    assert isinstance(error, ServerUnreachableError) and error.status == status
    assert f"HTTP {code}" in error.message and SECRET not in error.message


def test_streamable_http_status_comes_from_the_recorded_response() -> None:
    # the streamable HTTP client turns a 401 into a bare JSON-RPC error; the status is passed in
    generic = MCPError(code=mcp_types.INTERNAL_ERROR, message="Server returned an error response")
    error = translate(generic, "connect", http_status=401)
    assert isinstance(error, ServerUnreachableError) and error.status == "http_401"
    during_call = translate(generic, "call", http_status=403)
    assert isinstance(during_call, ServerUnreachableError) and during_call.status == "http_403"
    assert isinstance(translate(generic, "list", http_status=None), ProtocolError)


def test_handshake_timeout() -> None:
    error = translate(handshake_timed_out(), "connect", timeout=3)
    assert isinstance(error, ServerUnreachableError) and error.status == "handshake_timeout"
    assert "within 3s" in error.message
    assert is_handshake_timeout(handshake_timed_out())
    assert not is_handshake_timeout(refused())
    assert not is_handshake_timeout(httpx2.ConnectTimeout("connect timed out"))


def test_call_timeout_is_a_timeout_result() -> None:
    exc = MCPError(code=mcp_types.REQUEST_TIMEOUT, message="Request 'tools/call' timed out")
    result = translate(exc, "call", timeout=2.5)
    assert isinstance(result, ToolResult) and result.error_class == "timeout"
    assert result.blocks == (
        TextBlock(text="tool 'tool_x' timed out after 2.5s", tool_name="tool_x"),
    )


def test_tool_errors_are_results() -> None:
    result = translate(ToolError("disk full"), "call")
    assert isinstance(result, ToolResult) and result.error_class == "tool_error"
    unknown = translate(ToolError("Unknown tool: 'tool_x'"), "call")
    assert isinstance(unknown, ToolResult) and unknown.error_class == "unknown_tool"


@pytest.mark.parametrize("code", [mcp_types.METHOD_NOT_FOUND, mcp_types.INVALID_PARAMS, -32700])
def test_json_rpc_errors_are_protocol_errors_except_for_calls(code: int) -> None:
    exc = MCPError(code=code, message="nope")
    for phase in ("connect", "list"):
        error = translate(exc, phase)
        assert isinstance(error, ProtocolError) and error.exit_code == ExitCode.REMOTE
        assert str(code) in error.message
    assert isinstance(translate(exc, "call"), ToolResult)


@pytest.mark.parametrize(
    "exc",
    [
        MCPError(code=mcp_types.CONNECTION_CLOSED, message="Connection closed"),
        MCPError(code=mcp_types.INVALID_REQUEST, message="Session terminated"),
        anyio.ClosedResourceError(),
        anyio.BrokenResourceError(),
        anyio.EndOfStream(),
        ConnectionResetError(104, "Connection reset by peer"),
        httpx2.RemoteProtocolError("peer closed connection"),
        RuntimeError("Server session was closed unexpectedly"),
    ],
)
def test_lost_sessions_are_server_died(exc: BaseException) -> None:
    assert is_session_lost(exc)
    for phase in ("list", "call"):
        error = translate(exc, phase)
        assert isinstance(error, ServerDiedError), (phase, error)
        assert error.exit_code == ExitCode.CONNECTION


def test_not_every_error_is_a_lost_session() -> None:
    assert not is_session_lost(MCPError(code=mcp_types.INVALID_REQUEST, message="Bad request"))
    assert not is_session_lost(TimeoutError())
    assert not is_session_lost(ToolError("boom"))
    assert not is_session_lost(status_error(401))


def test_invalid_results_are_error_results_for_calls() -> None:
    result = translate(validation_error(), "call")
    assert isinstance(result, ToolResult) and result.error_class == "invalid_result"
    assert isinstance(translate(validation_error(), "list"), ProtocolError)


def test_unexpected_exceptions_name_their_type() -> None:
    error = translate(ValueError("odd"), "call")
    assert isinstance(error, ProtocolError) and "ValueError" in error.message


def test_devall_errors_pass_through() -> None:
    original = ServerDiedError("gone")
    assert translate(original, "call") is original


def test_translate_failure_never_returns_a_result() -> None:
    error = translate_failure(ToolError("boom"), source_id="web", target=URL, phase="list")
    assert isinstance(error, DevallError)


def test_every_library_type_is_handled_once_its_library_is_loaded() -> None:
    # This module imported fastmcp, the SDK, httpx2, anyio and pydantic: all of them count.
    names = {kind.__name__ for kind in handled_types()}
    for name in ("MCPError", "ToolError", "OAuthFlowError", "HTTPStatusError", "EndOfStream"):
        assert name in names


def test_the_sdk_codes_it_names_are_the_sdks() -> None:
    assert mcp_errors.CONNECTION_CLOSED == mcp_types.CONNECTION_CLOSED
    assert mcp_errors.REQUEST_TIMEOUT == mcp_types.REQUEST_TIMEOUT
    assert mcp_errors.INVALID_REQUEST == mcp_types.INVALID_REQUEST


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize(
    "code", [mcp_types.INVALID_PARAMS, mcp_types.INTERNAL_ERROR, mcp_types.REQUEST_TIMEOUT]
)
def test_a_server_error_reads_the_same_from_either_client(phase: str, code: int) -> None:
    sdk = translate(MCPError(code=code, message="Unknown tool: 'x'"), phase, timeout=3.0)
    direct = translate(RpcError(code, "Unknown tool: 'x'"), phase, timeout=3.0)
    assert type(sdk) is type(direct)
    if isinstance(sdk, ToolResult):
        assert isinstance(direct, ToolResult)
        assert (sdk.blocks, sdk.error_class) == (direct.blocks, direct.error_class)
    else:
        assert isinstance(direct, DevallError)
        assert (sdk.message, sdk.status) == (direct.message, direct.status)


@pytest.mark.parametrize("phase", PHASES)
def test_a_closed_session_reads_the_same_from_either_client(phase: str) -> None:
    sdk = translate(MCPError(code=mcp_types.CONNECTION_CLOSED, message="Connection closed"), phase)
    direct = translate(SessionClosed(SERVER_CLOSED), phase)
    assert isinstance(sdk, ServerDiedError) and isinstance(direct, ServerDiedError)
    assert sdk.message == direct.message
    assert is_session_lost(SessionClosed(SERVER_CLOSED))
    assert not is_session_lost(RpcError(mcp_types.CONNECTION_CLOSED, "a server's own -32000"))


def test_importing_it_loads_no_client_library() -> None:
    code = (
        "import sys, devall_cli.tools.mcp_errors;"
        "print(sorted(m for m in ('fastmcp', 'mcp', 'mcp_types', 'httpx2', 'anyio')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
