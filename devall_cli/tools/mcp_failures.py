"""How MCP session failures are worded: one wording, whichever client met them.

Light on purpose (no SDK import): mcp_errors.py, the one place where a session's exceptions
(fastmcp's, the SDK's, or the direct client's `RpcError` and `SessionClosed`) become devall's,
words what it found with these functions, so one failure reads the same under either client
(tests/cli/test_session_edges_cli.py runs the same failing server under both and compares).
"""

from __future__ import annotations

from devall_cli.errors import ProtocolError, ServerDiedError

# Why a session ended when the server's output did (an exit, a crash, a closed stdout).
SERVER_CLOSED = "the server closed the connection"


def lost_connection(server: str, why: str) -> ServerDiedError:
    """The session with `server` is gone (`why`: SERVER_CLOSED, a write failure, ...)."""
    return ServerDiedError(f"lost the connection to {server}: {why}")


def closed_during_handshake(server: str) -> ServerDiedError:
    """The server went away before the handshake ended."""
    return ServerDiedError(f"{server} closed the connection during the handshake")


def answered_with_error(server: str, method: str, code: int, message: str) -> ProtocolError:
    """The server answered `method` (`tools/list`, `the handshake`) with a JSON-RPC error."""
    return ProtocolError(f"{server} answered {method} with error {code}: {message}")


def not_answered(server: str, method: str, timeout: float | None) -> ProtocolError:
    """The server did not answer `method` within `timeout` seconds."""
    limit = f" after {timeout:g}s" if timeout is not None else ""
    return ProtocolError(f"{server} did not answer {method}{limit}")
