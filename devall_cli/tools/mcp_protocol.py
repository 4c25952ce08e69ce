"""What a source asks of one MCP session, whichever client speaks it.

`McpSessionSource` (mcp_session.py) holds one `McpSession` at a time and does everything around
it: connecting and reconnecting, the concurrency limit, timeouts, retries after a lost session,
turning results into ToolResults. The session itself only speaks. Two clients implement it:

- `FastmcpSession` (mcp_fastmcp.py), fastmcp's `Client`: every transport, every request.
  `batch`, `resources`, `prompts`, and remote servers under `run`.
- `DirectSession` (mcp_direct.py), devall's own small client on a supervised stdio process or
  streamable HTTP: `tools/list` and `tools/call`, started without importing fastmcp (`tools
  list`, `tools call`, `probe`, and local servers under `run`).

Both agree on the protocol alike: `server/discover` and the 2026-07-28 revision first, else the
`initialize` handshake (2025-11-25 and older), so a server is spoken to at one version whichever
client speaks (mcp_handshake.py).

A session raises what its client raises: the SDK's and fastmcp's exceptions, or the light
`RpcError` and `SessionClosed` below (and TimeoutError). mcp_errors.py is the one place that
turns any of them into a DevallError or an error ToolResult, so one failure reads the same
whichever client met it. Sessions never bound their own requests: the source does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from devall_cli.tools.base import RawTool, ToolResult

T = TypeVar("T")


class ProgressFn(Protocol):
    """What receives a call's `notifications/progress` (the SDK's ProgressFnT)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        """One progress notification."""


class RpcError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data  # the error's `data` (the versions a -32022 names)


class SessionClosed(Exception):
    """The session ended: the server closed its output, or its input cannot be written."""


@dataclass(frozen=True)
class CallOutcome:
    """A checked `tools/call` result, read by normalize.py as it reads the SDK's."""

    content: list[Any]
    structured_content: Any
    meta: Any
    is_error: bool


class CallResult(Protocol):
    """A `tools/call` result as a session hands it over (the SDK's, or a `CallOutcome`)."""

    @property
    def content(self) -> Sequence[Any]: ...

    @property
    def structured_content(self) -> Any: ...

    @property
    def is_error(self) -> bool: ...


class McpSession(Protocol):
    """One open MCP session: what it learnt in the handshake, and the requests a source sends."""

    @property
    def protocol_version(self) -> str | None:
        """The protocol version agreed (by `server/discover` or the handshake)."""
        ...

    @property
    def server_name(self) -> str | None:
        """The name in the server's `serverInfo`."""
        ...

    @property
    def logs(self) -> bool:
        """Whether the server declared the logging capability (`logging/setLevel` applies)."""
        ...

    @property
    def listing_ttl_ms(self) -> int | None:
        """The cache hint (`ttlMs`) of the last `tools/list` on a 2026-07-28 session, the
        smallest of its pages; None when the server gave none."""
        ...

    async def list_tools(self) -> list[RawTool]:
        """Every tool the server lists (all pages), as the SDK would accept them."""
        ...

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFn | None,
        meta: Mapping[str, Any] | None = None,
    ) -> CallResult | ToolResult:
        """One `tools/call` (`meta`: more `_meta` of the request, such as the trace context);
        a ToolResult where the result itself is invalid."""
        ...

    async def call_tool_task(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFn | None,
        meta: Mapping[str, Any] | None = None,
    ) -> CallResult | ToolResult:
        """`call_tool` run as an MCP task, waited for to its end, where the server takes tasks
        (mcp_tasks.py); an ordinary call where it does not."""
        ...

    async def set_log_level(self, level: str) -> None:
        """`logging/setLevel`."""
        ...

    async def send_roots_list_changed(self) -> None:
        """`notifications/roots/list_changed`."""
        ...

    async def request(self, operation: Callable[[Any], Awaitable[T]]) -> T:
        """Any other request, as an operation on fastmcp's Client (resources, prompts)."""
        ...

    async def close(self) -> None:
        """End the session; the transport below (a process) is its owner's to stop."""
        ...
