"""What every tool source speaks: tool descriptions, result blocks and the source protocol."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from devall_cli.config.model import EMPTY

SourceKind = str  # the name of the tooling type: function, mcp_remote, mcp_local, ...


@dataclass(frozen=True)
class RawTool:
    """A tool as its source lists it, before prefixes and filters."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = EMPTY
    meta: Mapping[str, Any] = EMPTY


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a node offers it to the model: final name plus where calls go."""

    name: str  # final name (prefix applied, made safe for the model API)
    original_name: str  # the name the source knows
    description: str
    input_schema: Mapping[str, Any]
    source: SourceKind
    server: str  # display target: URL, command line or functions directory (secrets masked later)
    source_id: str  # key of the ToolSource that executes it


# --- result blocks (SPEC.md §6) ------------------------------------------------------------


@dataclass(frozen=True)
class TextBlock:
    """Text content, or an embedded text resource (then `uri`/`mime_type` are set)."""

    text: str
    tool_name: str = ""
    uri: str | None = None
    mime_type: str | None = None
    source: str = "mcp_tool"
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class AttachmentBlock:
    """Binary content saved by the AttachmentStore."""

    path: str  # relative to the run directory, e.g. attachments/x_image_1.png
    mime_type: str
    size: int
    sha256: str
    kind: str  # image | audio | video | file
    tool_name: str = ""
    uri: str | None = None
    source: str = "mcp_tool"
    type: Literal["attachment"] = "attachment"


@dataclass(frozen=True)
class DataBlock:
    """Structured data: a resource link, or structured content without content blocks."""

    data: Mapping[str, Any]
    tool_name: str = ""
    source: str = "mcp_tool"
    type: Literal["data"] = "data"


Block = TextBlock | AttachmentBlock | DataBlock


@dataclass(frozen=True)
class ToolResult:
    """The normalized outcome of one tool call; errors are data, not exceptions."""

    blocks: tuple[Block, ...]
    is_error: bool = False
    error_class: str | None = None  # tool_error | unknown_tool | timeout | server_exited | ...
    duration_ms: float = 0.0


@dataclass(frozen=True)
class ServerInfo:
    """What a connected MCP server told us about itself."""

    protocol_version: str | None = None
    server_name: str | None = None
    connect_ms: float = 0.0


LogCallback = Callable[[str, str], None]  # (source_id, line)


@dataclass(frozen=True)
class AuthNotice:
    """What a server's OAuth authorization tells the user (never a token or a secret)."""

    step: str  # authorize | authorized | refreshed
    message: str
    url: str | None = None  # the authorization URL to open (step authorize)


AuthCallback = Callable[[str, AuthNotice], None]  # (source_id, notice)


class ToolEvents(Protocol):
    """What the tool layer reports about its servers; the engine turns these into events."""

    def server_starting(self, server_id: str, source: str, target: str) -> None:
        """A source is being spawned or connected."""
        ...

    def server_ready(
        self, server_id: str, info: ServerInfo, tools: int, pid: int | None
    ) -> None:
        """A source finished its handshake and listed `tools` tools."""
        ...

    def server_exited(self, server_id: str, status: str, message: str) -> None:
        """A source could not start, or its process ended."""
        ...

    def server_log(self, server_id: str, line: str) -> None:
        """One log line of a local server."""
        ...

    def server_restarted(self, server_id: str, attempt: int) -> None:
        """A local server that died was started again."""
        ...

    def server_auth(self, server_id: str, notice: AuthNotice) -> None:
        """A step of a remote server's OAuth authorization."""
        ...


class ToolSource(Protocol):
    """One place tools come from: an MCP session or a functions directory."""

    @property
    def id(self) -> str:
        """Unique within a run; names the server's log file."""
        ...

    @property
    def kind(self) -> SourceKind:
        """function, mcp_remote or mcp_local."""
        ...

    @property
    def target(self) -> str:
        """URL, command line or functions directory."""
        ...

    async def start(self) -> ServerInfo:
        """Connect or spawn; raise a DevallConnectionError when that fails."""
        ...

    async def list_tools(self) -> list[RawTool]:
        """The tools as the source lists them."""
        ...

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call by original name; tool failures come back as `is_error` results."""
        ...

    async def close(self) -> None:
        """Release everything (idempotent)."""
        ...
