"""What every tool source speaks: tool descriptions, result blocks and the source protocol."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from devall_cli.config.model import EMPTY

SourceKind = str  # the name of the tooling type: function, mcp_remote, mcp_local, ...


# The start of a warning devall writes into a server's log (a tool left out of its listing);
# a command without a trace shows it on stderr (ToolManager's `on_warning`).
WARNING_LINE = "[devall] warning: "


@dataclass(frozen=True)
class RawTool:
    """A tool as its source lists it, before prefixes and filters."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = EMPTY
    meta: Mapping[str, Any] = EMPTY
    title: str | None = None
    annotations: Mapping[str, Any] | None = None  # readOnlyHint, destructiveHint, ...
    output_schema: Mapping[str, Any] | None = None
    task_support: str | None = None  # `execution.taskSupport`: forbidden | optional | required
    # `icons` as listed: {"src", "mimeType"?, "sizes"?, "theme"?} each (shown, never fetched).
    icons: tuple[Mapping[str, Any], ...] | None = None


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
    title: str | None = None
    annotations: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] = EMPTY  # the listed tool's `_meta`
    task_support: str | None = None  # `execution.taskSupport`: forbidden | optional | None
    icons: tuple[Mapping[str, Any], ...] | None = None  # the listed tool's `icons`


# --- result blocks (SPEC.md §6) ------------------------------------------------------------


@dataclass(frozen=True)
class TextBlock:
    """Text content, or an embedded text resource (then `uri`/`mime_type` are set).

    `annotations` and `meta` are the content item's own (`annotations`, `_meta`);
    `resource_meta` is the `_meta` of an embedded resource's contents.
    """

    text: str
    tool_name: str = ""
    uri: str | None = None
    mime_type: str | None = None
    source: str = "mcp_tool"
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    resource_meta: Mapping[str, Any] | None = None
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
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    resource_meta: Mapping[str, Any] | None = None
    type: Literal["attachment"] = "attachment"


@dataclass(frozen=True)
class ResourceLinkBlock:
    """A link to a resource the server did not inline (`resource_link` content)."""

    uri: str
    name: str | None = None
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: tuple[Mapping[str, Any], ...] | None = None
    tool_name: str = ""
    source: str = "mcp_tool"
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    type: Literal["resource_link"] = "resource_link"


@dataclass(frozen=True)
class DataBlock:
    """Structured data: a tool's `structuredContent` (or what a function returned as data)."""

    data: Mapping[str, Any]
    tool_name: str = ""
    source: str = "mcp_tool"
    type: Literal["data"] = "data"


Block = TextBlock | AttachmentBlock | ResourceLinkBlock | DataBlock


@dataclass(frozen=True)
class ToolResult:
    """The normalized outcome of one tool call; errors are data, not exceptions."""

    blocks: tuple[Block, ...]
    is_error: bool = False
    error_class: str | None = None  # tool_error | unknown_tool | timeout | server_exited | ...
    duration_ms: float = 0.0
    meta: Mapping[str, Any] | None = None  # the result's `_meta`, as the server sent it


@dataclass(frozen=True)
class ServerInfo:
    """What a connected MCP server told us about itself."""

    protocol_version: str | None = None
    server_name: str | None = None
    connect_ms: float = 0.0
    # How a local server runs confined (procs/sandbox.py `Sandbox.describe()`); None: it does not.
    sandbox: Mapping[str, Any] | None = None


LogCallback = Callable[[str, str], None]  # (source_id, line)


@dataclass(frozen=True)
class AuthNotice:
    """What a server's OAuth authorization tells the user (never a token or a secret)."""

    step: str  # authorize | authorized | refreshed
    message: str
    url: str | None = None  # the authorization URL to open (step authorize)


AuthCallback = Callable[[str, AuthNotice], None]  # (source_id, notice)
# --- what a server may ask during a call (MCP sampling and elicitation) ------------------------


@dataclass(frozen=True)
class SamplingRequest:
    """A server asks the calling node's model for a reply (`sampling/createMessage`).

    `messages` are OpenAI Chat Completions messages (the providers' own format);
    `max_tokens` is already capped by `sampling_max_tokens`.
    """

    messages: tuple[Mapping[str, Any], ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()  # names from `modelPreferences.hints` (advice only)


@dataclass(frozen=True)
class SamplingReply:
    """The model's answer to a sampling request."""

    text: str
    model: str
    stop_reason: str = "endTurn"


class Sampler(Protocol):
    """Answers sampling requests with the model of the node whose tool call is running."""

    async def sample(self, request: SamplingRequest) -> SamplingReply:
        """The model's reply; a DevallError when the model cannot be reached."""
        ...


@dataclass(frozen=True)
class ElicitationRequest:
    """A server asks the operator for input (`elicitation/create`): a form, or a URL to visit."""

    server_id: str
    message: str
    mode: str = "form"  # form | url
    schema: Mapping[str, Any] = EMPTY  # the requested schema of a form
    url: str | None = None  # the page of a URL elicitation
    node_id: str = ""
    tool: str = ""


@dataclass(frozen=True)
class ElicitationAnswer:
    """What the operator (or the config) answered: accept with content, decline or cancel."""

    action: str  # accept | decline | cancel
    content: Mapping[str, Any] | None = None


class Elicitor(Protocol):
    """Asks the operator: the terminal form of `devall run` and `devall tools call`."""

    @property
    def channel(self) -> str:
        """Where the answer comes from (`terminal`), recorded with it."""
        ...

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        """The operator's answer."""
        ...


@dataclass(frozen=True)
class CallContext:
    """The tool call a request from a server belongs to, and who answers for it.

    The node running the call supplies it: its model answers sampling requests, and the
    operator's terminal (when there is one) answers elicitation requests. `request_meta` goes
    into the `_meta` of the call's request beside the progress token: the W3C trace context
    (`traceparent`, `tracestate`) of the call's span when the run is traced, so that the
    server's own spans join the run's trace.
    """

    node_id: str = ""
    call_id: str = ""
    tool: str = ""  # the final name the node called
    sampler: Sampler | None = None
    elicitor: Elicitor | None = None
    request_meta: Mapping[str, str] = EMPTY


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

    def server_message(self, server_id: str, level: str, logger: str | None, text: str) -> None:
        """A `notifications/message` log message of a server (any transport)."""
        ...

    def tool_progress(
        self,
        server_id: str,
        call: CallContext,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        """A `notifications/progress` for a running call."""
        ...

    def elicitation_requested(
        self, server_id: str, call: CallContext | None, request: ElicitationRequest, policy: str
    ) -> None:
        """A server asks the operator; `policy` says how devall will answer."""
        ...

    def elicitation_answered(
        self, server_id: str, call: CallContext | None, answer: ElicitationAnswer, channel: str
    ) -> None:
        """The answer sent back (`channel`: terminal, config or none)."""
        ...

    def sampling_requested(
        self, server_id: str, call: CallContext | None, request: SamplingRequest
    ) -> None:
        """A server asks the calling node's model."""
        ...

    def sampling_answered(
        self,
        server_id: str,
        call: CallContext | None,
        status: str,
        reply: SamplingReply | None,
        error: str | None,
        duration_ms: float,
    ) -> None:
        """The sampling outcome: `ok` with the reply, or `failed` with the reason."""
        ...

    def roots_sent(self, server_id: str, roots: Sequence[str], reason: str) -> None:
        """The roots a server was given (`listed`) or told have changed (`changed`)."""
        ...

    def tool_denied(self, node_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        """The tool policy kept these tools from a node's model (`{"tool", "original_name",
        "server_id", "rule", "layer"}` each)."""
        ...

    def tool_approval(
        self,
        node_id: str,
        call_id: str,
        tool: str,
        server_id: str,
        approved: bool,
        by: str,
        reason: str,
    ) -> None:
        """The decision on a call the tool policy does not allow outright (`by`: policy,
        terminal, answers, no_terminal or remembered)."""
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

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, context: CallContext | None = None
    ) -> ToolResult:
        """Call by original name; tool failures come back as `is_error` results.

        `context` names the calling node and who answers the server's requests during the call.
        """
        ...

    async def close(self) -> None:
        """Release everything (idempotent)."""
        ...
