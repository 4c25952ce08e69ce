"""Events: the only seam between the engine and everything that renders or records a run.

The engine and the tool layer emit frozen event objects on an `EventBus`; sinks (console,
JSONL, result builder) subscribe. Nothing here imports Rich.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar


def now() -> float:
    """The timestamp events carry (seconds since the epoch)."""
    return time.time()


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event: when it happened and in which run."""

    kind: ClassVar[str] = "event"
    ts: float = field(default_factory=now)
    run_id: str = ""


# --- run -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RunStartedEvent(Event):
    """A run begins."""

    kind: ClassVar[str] = "run.started"
    workflow: str
    task: str
    # The graph's shape (graphview.shape.to_dict): what a report draws, without the workflow.
    graph: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class RunFinishedEvent(Event):
    """A run ended: `ok`, `failed`, `interrupted` or `budget` (its budget stopped it)."""

    kind: ClassVar[str] = "run.finished"
    status: str
    output: str = ""
    duration_ms: float = 0.0
    error: str | None = None
    exit_code: int = 0
    # What `devall run` prints under the error (a server's last log lines) and its hint.
    details: Sequence[str] = ()
    hint: str | None = None
    # Set when the run stopped at its budget: {"kind", "limit", "spent", "scope"}.
    budget: Mapping[str, Any] | None = None


# --- servers ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ServerStartingEvent(Event):
    """A tool source is being spawned or connected."""

    kind: ClassVar[str] = "server.starting"
    server_id: str
    source: str  # function | mcp_remote | mcp_local (named like ToolSpec.source)
    target: str


@dataclass(frozen=True, kw_only=True)
class ServerReadyEvent(Event):
    """A tool source finished its handshake."""

    kind: ClassVar[str] = "server.ready"
    server_id: str
    protocol_version: str | None = None
    server_name: str | None = None
    tools: int = 0
    connect_ms: float = 0.0
    pid: int | None = None  # local servers only
    sandbox: Mapping[str, Any] | None = None  # how a local server runs confined (None: it does not)


@dataclass(frozen=True, kw_only=True)
class ServerLogEvent(Event):
    """One log line of a server: a local server's stderr or non-JSON stdout, or a log message
    it sent (`notifications/message`, any transport; then `level` and `logger` are set)."""

    kind: ClassVar[str] = "server.log"
    server_id: str
    line: str
    level: str | None = None
    logger: str | None = None


@dataclass(frozen=True, kw_only=True)
class ServerExitedEvent(Event):
    """A server process exited or a session was lost."""

    kind: ClassVar[str] = "server.exited"
    server_id: str
    status: str
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class ServerRestartedEvent(Event):
    """A local server that died was started again."""

    kind: ClassVar[str] = "server.restarted"
    server_id: str
    attempt: int


@dataclass(frozen=True, kw_only=True)
class ServerAuthEvent(Event):
    """A step of a remote server's OAuth authorization: `authorize` (a URL to open), `authorized`
    or `refreshed`. Never carries a token or a secret."""

    kind: ClassVar[str] = "server.auth"
    server_id: str
    step: str
    message: str
    url: str | None = None


# --- nodes and model -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class NodeStartedEvent(Event):
    """A node starts a visit with these inputs (`node_id` is its path: `outer/inner`)."""

    kind: ClassVar[str] = "node.started"
    node_id: str
    inputs: Sequence[str] = ()
    visit: int = 1


@dataclass(frozen=True, kw_only=True)
class NodeFinishedEvent(Event):
    """A node visit ended: `ok`, `failed` or `skipped` (never triggered).

    `outputs` are the texts of every message it emitted (none: nothing went downstream);
    `output` is the last of them.
    """

    kind: ClassVar[str] = "node.finished"
    node_id: str
    status: str
    output: str | None = None
    outputs: Sequence[str] = ()
    duration_ms: float = 0.0
    error: str | None = None
    visit: int = 1


@dataclass(frozen=True, kw_only=True)
class EdgeEvent(Event):
    """An edge looked at a message: whether its condition held and what it did with it."""

    kind: ClassVar[str] = "edge"
    source: str  # node paths
    target: str
    condition: str = "true"
    met: bool = True
    delivered: bool = False  # a payload reached the target's queue
    dropped: bool = False  # the processor dropped the payload (nothing delivered, no trigger)
    triggered: bool = False


@dataclass(frozen=True, kw_only=True)
class GraphNoteEvent(Event):
    """Something the scheduler decided that a reader of the trace should know about."""

    kind: ClassVar[str] = "graph.note"
    graph: str  # "" for the workflow's graph, else the subgraph node's path
    note: str  # cycle_limit | vote
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ModelRequestEvent(Event):
    """A request to the model: how many messages, which tools are offered."""

    kind: ClassVar[str] = "model.request"
    node_id: str
    round: int
    messages: int
    tools: Sequence[str] = ()
    stage: str = "gen"  # gen, or the thinking stage that asked (pre_gen_thinking, ...)


@dataclass(frozen=True, kw_only=True)
class ModelReplyEvent(Event):
    """The model's answer to one request."""

    kind: ClassVar[str] = "model.reply"
    node_id: str
    round: int
    content: str | None = None
    tool_calls: Sequence[Mapping[str, Any]] = ()  # {id, name, arguments}
    usage: Mapping[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0
    stage: str = "gen"
    model: str = ""  # the agent's model name (`name`), which its price is looked up by


# --- memory ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MemoryLoadedEvent(Event):
    """A memory store of a graph is ready: read from its file, or (file memory) indexed."""

    kind: ClassVar[str] = "memory.loaded"
    store: str
    type: str
    graph: str = ""  # "" for the workflow's graph, else the subgraph node's path
    items: int = 0
    path: str | None = None  # the file it lives in (None: this run only, in memory)
    duration_ms: float = 0.0


@dataclass(frozen=True, kw_only=True)
class MemoryRetrievedEvent(Event):
    """A node asked its memories before a stage; `text` is what was put into the prompt."""

    kind: ClassVar[str] = "memory.retrieve"
    node_id: str
    stage: str
    stores: Sequence[str] = ()
    items: int = 0
    text: str = ""
    duration_ms: float = 0.0


@dataclass(frozen=True, kw_only=True)
class MemoryWrittenEvent(Event):
    """A node wrote its visit to one store (`added` 0: nothing new worth keeping)."""

    kind: ClassVar[str] = "memory.write"
    node_id: str
    store: str
    added: int = 0
    items: int = 0  # items in the store afterwards
    path: str | None = None
    duration_ms: float = 0.0


@dataclass(frozen=True, kw_only=True)
class EmbeddingsEvent(Event):
    """One request to the embeddings endpoint of a memory store."""

    kind: ClassVar[str] = "memory.embeddings"
    store: str
    graph: str = ""
    node_id: str = ""  # "" while a store is loaded
    inputs: int = 0
    usage: Mapping[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0


# --- human and code nodes ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HumanAskedEvent(Event):
    """A `human` node asks the operator for a reply (`channel`: terminal, answers or none)."""

    kind: ClassVar[str] = "human.asked"
    node_id: str
    visit: int = 1
    description: str = ""
    channel: str = ""


@dataclass(frozen=True, kw_only=True)
class HumanRepliedEvent(Event):
    """The operator's reply to a `human` node (typed, or taken from the answers file)."""

    kind: ClassVar[str] = "human.replied"
    node_id: str
    visit: int = 1
    reply: str = ""
    channel: str = ""


@dataclass(frozen=True, kw_only=True)
class CodeStartedEvent(Event):
    """A `python` node starts its script (`script`: its path in the run directory)."""

    kind: ClassVar[str] = "code.started"
    node_id: str
    visit: int = 1
    script: str = ""
    command: Sequence[str] = ()
    sandbox: Mapping[str, Any] | None = None  # how the script runs confined (None: it does not)


@dataclass(frozen=True, kw_only=True)
class CodeFinishedEvent(Event):
    """A `python` node's script ended: `ok`, `failed`, `timeout`, `not_started` or `no_code`."""

    kind: ClassVar[str] = "code.finished"
    node_id: str
    visit: int = 1
    script: str = ""
    status: str = "ok"
    exit_code: int | None = None
    stderr: str = ""
    duration_ms: float = 0.0


# --- tools -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ToolCallEvent(Event):
    """A tool call is about to be executed."""

    kind: ClassVar[str] = "tool.call"
    node_id: str
    call_id: str
    tool: str  # final name
    original_name: str = ""
    source: str = ""
    server: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    icons: Sequence[Mapping[str, Any]] = ()  # the tool's listed icons (tools/icons.py)


@dataclass(frozen=True, kw_only=True)
class ToolResultEvent(Event):
    """A tool call finished (possibly as an error result, which is data)."""

    kind: ClassVar[str] = "tool.result"
    node_id: str
    call_id: str
    tool: str
    original_name: str = ""
    source: str = ""
    server: str = ""
    blocks: Sequence[Mapping[str, Any]] = ()
    is_error: bool = False
    error_class: str | None = None
    duration_ms: float = 0.0
    meta: Mapping[str, Any] | None = None  # the result's `_meta` (MCP), as the server sent it


@dataclass(frozen=True, kw_only=True)
class ToolErrorEvent(ToolResultEvent):
    """A tool call failed in the infrastructure (server unreachable, died, protocol error)."""

    kind: ClassVar[str] = "tool.error"
    is_error: bool = True


@dataclass(frozen=True, kw_only=True)
class ToolsDeniedEvent(Event):
    """Tools the policy kept from a node's model (once per node, when its tool list is built).

    Each item: `{"tool", "original_name", "server_id", "rule", "layer"}`.
    """

    kind: ClassVar[str] = "tool.denied"
    node_id: str
    tools: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True, kw_only=True)
class ToolsOversize(Event):
    """A node visit sends its model more tools, or more bytes of tool definitions, than the
    graph's `tool_warning` limits (0: not checked); once per visit, before its first request."""

    kind: ClassVar[str] = "tools.oversize"
    node: str
    tools: int
    schema_bytes: int
    tool_limit: int
    bytes_limit: int
    hint: str = ""


@dataclass(frozen=True, kw_only=True)
class ToolApprovalEvent(Event):
    """The decision on a call the policy did not allow outright (verdict ask or refuse).

    `by`: policy (approve: never, or a call of a tool the node was not offered), terminal,
    answers, no_terminal, remembered (an earlier "always" for this tool).
    """

    kind: ClassVar[str] = "tool.approval"
    node_id: str
    call_id: str = ""
    tool: str
    server_id: str = ""
    approved: bool
    by: str
    reason: str = ""  # the verdict in words (`approve: ask (cli)`) and, if refused, why


@dataclass(frozen=True, kw_only=True)
class AttachmentSavedEvent(Event):
    """A binary tool result was saved under the run directory."""

    kind: ClassVar[str] = "attachment.saved"
    node_id: str
    tool: str
    path: str
    mime_type: str
    size: int
    sha256: str


# --- bus -------------------------------------------------------------------------------------

EventSink = Callable[[Event], None]
ErrorReporter = Callable[[EventSink, BaseException], None]


# What MCP servers ask and report during calls: progress, elicitation, sampling and roots.


@dataclass(frozen=True, kw_only=True)
class ToolProgressEvent(Event):
    """A server reported progress on a running call (`notifications/progress`)."""

    kind: ClassVar[str] = "tool.progress"
    node_id: str
    call_id: str
    tool: str
    server_id: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class ElicitationRequestedEvent(Event):
    """A server asks the operator for input (`elicitation/create`) during a call."""

    kind: ClassVar[str] = "elicitation.requested"
    server_id: str
    node_id: str = ""
    call_id: str = ""
    tool: str = ""
    message: str = ""
    mode: str = "form"  # form | url
    schema: Mapping[str, Any] = field(default_factory=dict)
    url: str | None = None
    policy: str = ""  # prompt | accept_defaults | decline | cancel


@dataclass(frozen=True, kw_only=True)
class ElicitationAnsweredEvent(Event):
    """The answer devall sent: `accept` (with `content`), `decline` or `cancel`."""

    kind: ClassVar[str] = "elicitation.answered"
    server_id: str
    node_id: str = ""
    call_id: str = ""
    tool: str = ""
    action: str = ""
    content: Mapping[str, Any] | None = None
    channel: str = ""  # terminal (the operator typed it), config (the policy), none


@dataclass(frozen=True, kw_only=True)
class SamplingRequestedEvent(Event):
    """A server asks the calling node's model for a reply (`sampling/createMessage`)."""

    kind: ClassVar[str] = "sampling.requested"
    server_id: str
    node_id: str = ""
    call_id: str = ""
    tool: str = ""
    messages: Sequence[Mapping[str, Any]] = ()
    system_prompt: str | None = None
    max_tokens: int = 0  # after the `sampling_max_tokens` cap
    temperature: float | None = None
    model_hints: Sequence[str] = ()


@dataclass(frozen=True, kw_only=True)
class SamplingAnsweredEvent(Event):
    """How a sampling request ended: `ok` (the reply went back) or `failed` (an error did)."""

    kind: ClassVar[str] = "sampling.answered"
    server_id: str
    node_id: str = ""
    call_id: str = ""
    tool: str = ""
    status: str = "ok"
    text: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    error: str | None = None
    duration_ms: float = 0.0


@dataclass(frozen=True, kw_only=True)
class ServerRootsEvent(Event):
    """Roots given to a server: it asked (`listed`), or devall told it they changed."""

    kind: ClassVar[str] = "server.roots"
    server_id: str
    roots: Sequence[str] = ()
    reason: str = "listed"


class EventBus:
    """Delivers every event to every subscribed sink, in subscription order."""

    def __init__(self, *, on_sink_error: ErrorReporter | None = None) -> None:
        self._sinks: list[EventSink] = []
        self._failed: set[int] = set()
        self._on_sink_error = on_sink_error
        self.sink_errors: list[str] = []

    def subscribe(self, sink: EventSink) -> None:
        """Add a sink; it receives every later event."""
        self._sinks.append(sink)

    def emit(self, event: Event) -> None:
        """Give `event` to every sink; a sink that raises never breaks the run."""
        for sink in list(self._sinks):
            try:
                sink(event)
            except Exception as exc:  # a broken renderer must not stop the workflow
                self._report(sink, exc)

    def _report(self, sink: EventSink, exc: Exception) -> None:
        # Report once per sink so a sink failing on every event does not flood the output.
        if id(sink) in self._failed:
            return
        self._failed.add(id(sink))
        self.sink_errors.append(f"{_sink_name(sink)}: {type(exc).__name__}: {exc}")
        if self._on_sink_error is not None:
            # The reporter itself must not break the run either.
            with contextlib.suppress(Exception):
                self._on_sink_error(sink, exc)


def _sink_name(sink: EventSink) -> str:
    owner = getattr(sink, "__self__", None)
    if owner is not None:
        return type(owner).__name__
    return getattr(sink, "__qualname__", None) or type(sink).__name__


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """JSON-friendly copy: mappings → dicts, sequences → lists."""
    if type(value) in _SCALARS:  # most values; skips the slower ABC checks below
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


_PAYLOAD_FIELDS: dict[type[Event], tuple[str, ...]] = {}


def _payload_fields(kind: type[Event]) -> tuple[str, ...]:
    """The fields of an event class other than `ts` and `run_id` (computed once per class)."""
    names = _PAYLOAD_FIELDS.get(kind)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(kind) if f.name not in ("ts", "run_id"))
        _PAYLOAD_FIELDS[kind] = names
    return names


def event_to_dict(event: Event) -> dict[str, Any]:
    """`{"kind", "ts", "run_id", ...fields}` with plain JSON-able values."""
    data: dict[str, Any] = {"kind": event.kind, "ts": event.ts, "run_id": event.run_id}
    for name in _payload_fields(type(event)):
        data[name] = _plain(getattr(event, name))
    return data
