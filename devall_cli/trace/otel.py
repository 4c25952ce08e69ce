"""`OtelSink`: the events of one run as OpenTelemetry spans (docs/otel.md).

One trace per run. The run's span is the root; under it, a span per server start and per node
visit; under a node visit's span, its model calls (`chat {model}`), its tool calls
(`execute_tool {tool}`), and the visits of its subgraph's nodes or its map's units. Every span
gets the times of the events that opened and closed it, and spans are never made current: a
node visit is found by its path, a model call by node, stage and round, a tool call by node and
call id, so parallel nodes and parallel tool calls nest as they ran. Attributes follow the GenAI
and MCP semantic conventions; content (the task, node inputs and outputs, model replies, tool
arguments and results) is recorded only when asked for. Every text goes through the run's
redactor before it becomes an attribute.

`request_meta` gives the W3C trace context of a running tool call's span, which the tool layer
sends in the call's `_meta` so that the server's own spans join the trace. Only the OpenTelemetry
API is used here; otel_export.py builds the SDK's tracer and imports this module when on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import (
    Span,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
    set_span_in_context,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from devall_cli.events import (
    Event,
    ModelReplyEvent,
    ModelRequestEvent,
    NodeFinishedEvent,
    NodeStartedEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ServerExitedEvent,
    ServerReadyEvent,
    ServerStartingEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from devall_cli.node_paths import declared_path
from devall_cli.redaction import Redactor
from devall_cli.trace.otel_attributes import (
    Attributes,
    NodeInfo,
    enclosing,
    error_text,
    mcp_attributes,
    output_messages,
    provider_name,
)

CONTENT_CHARS = 16_000  # the most characters of one content attribute (masked, then cut)
ERROR_CHARS = 1_000
_PROPAGATOR = TraceContextTextMapPropagator()


def _ns(ts: float) -> int:
    return int(ts * 1_000_000_000)


class OtelSink:
    """Turns the events of one run into spans of one trace (an EventBus sink)."""

    def __init__(
        self,
        tracer: Tracer,
        redactor: Redactor,
        nodes: Mapping[str, NodeInfo] | None = None,
        *,
        content: bool = False,
    ) -> None:
        self._tracer = tracer
        self._redactor = redactor
        self._nodes = dict(nodes or {})
        self._content = content
        self._lock = threading.Lock()  # function tools may report from a worker thread
        self._run: Span | None = None
        self._visits: dict[str, Span] = {}  # node path -> the span of its running visit
        self._models: dict[tuple[str, str, int], Span] = {}
        self._tools: dict[tuple[str, str], list[Span]] = {}  # the same id twice: in order
        self._servers: dict[str, ServerStartingEvent] = {}
        self._started: list[tuple[ServerStartingEvent | None, Event]] = []  # before the run
        self._handlers: dict[type[Event], Callable[[Any], None]] = {
            RunStartedEvent: self._run_started,
            RunFinishedEvent: self._run_finished,
            NodeStartedEvent: self._node_started,
            NodeFinishedEvent: self._node_finished,
            ModelRequestEvent: self._model_request,
            ModelReplyEvent: self._model_reply,
            ToolCallEvent: self._tool_call,
            ToolResultEvent: self._tool_result,
            ServerStartingEvent: self._server_starting,
            ServerReadyEvent: self._server_done,
            ServerExitedEvent: self._server_done,
        }

    def __call__(self, event: Event) -> None:
        """Handle one event (those that open or close no span are ignored)."""
        handler = self._handlers.get(type(event))
        if handler is None and isinstance(event, ToolResultEvent):  # tool.error
            handler = self._tool_result
        if handler is not None:
            with self._lock:
                handler(event)

    def request_meta(self, node_id: str, call_id: str) -> Mapping[str, str]:
        """The trace context (`traceparent`, `tracestate` if set) of a running tool call."""
        with self._lock:
            spans = self._tools.get((node_id, call_id))
            if not spans:
                return {}
            carrier: dict[str, str] = {}
            _PROPAGATOR.inject(carrier, context=set_span_in_context(spans[-1]))
            return carrier

    # --- spans -----------------------------------------------------------------------------

    def _open(
        self,
        name: str,
        parent: Span | None,
        ts: float,
        attributes: Attributes,
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        # An empty context for the root: a new trace, whatever the process made current.
        context = set_span_in_context(parent) if parent is not None else Context()
        return self._tracer.start_span(
            self._redactor.text(name),
            context=context,
            kind=kind,
            attributes=self._masked(attributes),
            start_time=_ns(ts),
        )

    def _close(
        self, span: Span, ts: float, attributes: Attributes, error: str | None = None
    ) -> None:
        span.set_attributes(self._masked(attributes))
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, self._redactor.preview(error, ERROR_CHARS)))
        span.end(end_time=_ns(ts))

    def _masked(self, attributes: Attributes) -> Attributes:
        """The attributes without None values, every text masked."""
        masked: Attributes = {}
        for key, value in attributes.items():
            if value is None:
                continue
            if isinstance(value, str):
                value = self._redactor.text(value)
            elif isinstance(value, list | tuple):
                value = [self._redactor.text(v) if isinstance(v, str) else v for v in value]
            masked[key] = value
        return masked

    def _text(self, value: Any) -> str | None:
        """Content, when it is recorded: text as it is, anything else as JSON; masked, cut."""
        if not self._content or value is None:
            return None
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return self._redactor.preview(text, CONTENT_CHARS)

    # --- run -------------------------------------------------------------------------------

    def _run_started(self, event: RunStartedEvent) -> None:
        if self._run is not None:
            return
        # Servers started ahead of the run (a head start) belong to it: it starts with them.
        earliest = min(
            [
                event.ts,
                *(done.ts for _, done in self._started),
                *(starting.ts for starting, _ in self._started if starting is not None),
            ]
        )
        self._run = self._open(
            f"run {event.workflow}",
            None,
            earliest,
            {
                "devall.run.id": event.run_id,
                "devall.workflow": event.workflow,
                "devall.task": self._text(event.task),
            },
        )
        pending, self._started = self._started, []
        for starting, done in pending:
            self._server_span(starting, done)

    def _run_finished(self, event: RunFinishedEvent) -> None:
        run = self._run
        if run is None:
            return
        error = None if event.status == "ok" else event.error or event.status
        for span in self._open_spans():
            self._close(span, event.ts, {}, error=f"unfinished: the run ended ({event.status})")
        self._visits.clear()
        self._models.clear()
        self._tools.clear()
        attributes = {
            "devall.run.status": event.status,
            "devall.exit_code": event.exit_code,
            "devall.output": self._text(event.output),
        }
        self._close(run, event.ts, attributes, error=error)
        self._run = None

    def _open_spans(self) -> Iterable[Span]:
        """Tool calls, then model calls, then node visits still open (innermost first)."""
        for spans in self._tools.values():
            yield from spans
        yield from self._models.values()
        yield from reversed(list(self._visits.values()))

    # --- nodes -----------------------------------------------------------------------------

    def _info(self, path: str) -> NodeInfo:
        info = self._nodes.get(declared_path(path, self._nodes))
        return info if info is not None else NodeInfo(type="")

    def _parent_of(self, path: str) -> Span | None:
        """The visit a node's visit runs inside (its map's, its subgraph node's), else the run."""
        outer = enclosing(path)
        while outer is not None:
            if outer in self._visits:
                return self._visits[outer]
            outer = enclosing(outer)
        return self._run

    def _node_started(self, event: NodeStartedEvent) -> None:
        if self._run is None:
            return
        info = self._info(event.node_id)
        attributes: Attributes = {
            "devall.node.id": event.node_id,
            "devall.node.type": info.type or None,
            "devall.node.visit": event.visit,
            "devall.node.inputs": self._text(list(event.inputs)),
        }
        name = f"node {event.node_id}"
        if info.provider is not None:
            name = f"invoke_agent {event.node_id}"
            attributes.update(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": event.node_id,
                    "gen_ai.provider.name": provider_name(info.provider),
                    "gen_ai.request.model": info.model,
                }
            )
        parent = self._parent_of(event.node_id)
        self._visits[event.node_id] = self._open(name, parent, event.ts, attributes)

    def _node_finished(self, event: NodeFinishedEvent) -> None:
        span = self._visits.pop(event.node_id, None)
        if span is None:
            return  # skipped: never ran
        attributes = {
            "devall.node.status": event.status,
            "devall.node.output": self._text(event.output),
        }
        error = None if event.status == "ok" else event.error or event.status
        self._close(span, event.ts, attributes, error=error)

    # --- model -----------------------------------------------------------------------------

    def _model_request(self, event: ModelRequestEvent) -> None:
        parent = self._visits.get(event.node_id)
        if parent is None:
            return
        info = self._info(event.node_id)
        model = info.model or ""
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(info.provider or ""),
            "gen_ai.request.model": model or None,
            "devall.node.id": event.node_id,
            "devall.model.stage": event.stage,
            "devall.model.round": event.round,
            "devall.model.messages": event.messages,
        }
        span = self._open(f"chat {model}".strip(), parent, event.ts, attributes, SpanKind.CLIENT)
        self._models[(event.node_id, event.stage, event.round)] = span

    def _model_reply(self, event: ModelReplyEvent) -> None:
        span = self._models.pop((event.node_id, event.stage, event.round), None)
        if span is None:
            return
        # The providers do not hand the finish reason on; the reply shows which it was.
        reason = "tool_call" if event.tool_calls else "stop"
        attributes = {
            "gen_ai.usage.input_tokens": event.usage.get("prompt_tokens", 0),
            "gen_ai.usage.output_tokens": event.usage.get("completion_tokens", 0),
            "gen_ai.response.finish_reasons": [reason],
            "gen_ai.output.messages": self._text(output_messages(event, reason)),
        }
        if event.model:
            attributes["gen_ai.request.model"] = event.model
        self._close(span, event.ts, attributes)

    # --- tools -----------------------------------------------------------------------------

    def _tool_call(self, event: ToolCallEvent) -> None:
        parent = self._visits.get(event.node_id)
        if parent is None:
            return
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool,
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.call.arguments": self._text(dict(event.arguments)),
            "devall.node.id": event.node_id,
            "devall.tool.original_name": event.original_name or None,
            "devall.tool.source": event.source or None,
        }
        mcp = event.source.startswith("mcp_")
        if mcp:
            attributes.update(mcp_attributes(event.source, self._redactor.text(event.server)))
        kind = SpanKind.CLIENT if mcp else SpanKind.INTERNAL
        span = self._open(f"execute_tool {event.tool}", parent, event.ts, attributes, kind)
        self._tools.setdefault((event.node_id, event.call_id), []).append(span)

    def _tool_result(self, event: ToolResultEvent) -> None:
        spans = self._tools.get((event.node_id, event.call_id))
        if not spans:
            return
        span = spans.pop(0)
        if not spans:
            del self._tools[(event.node_id, event.call_id)]
        attributes = {
            "gen_ai.tool.call.result": self._text([dict(b) for b in event.blocks]),
            "error.type": event.error_class if event.is_error else None,
            "devall.tool.is_error": event.is_error,
        }
        error = error_text(event.blocks, event.error_class) if event.is_error else None
        self._close(span, event.ts, attributes, error=error)

    # --- servers ---------------------------------------------------------------------------

    def _server_starting(self, event: ServerStartingEvent) -> None:
        self._servers[event.server_id] = event

    def _server_done(self, event: ServerReadyEvent | ServerExitedEvent) -> None:
        starting = self._servers.pop(event.server_id, None)
        if isinstance(event, ServerExitedEvent) and starting is None:
            return  # a server that was up ended (the end of the run): no start to trace
        if self._run is None:
            self._started.append((starting, event))
            return
        self._server_span(starting, event)

    def _server_span(self, starting: ServerStartingEvent | None, done: Event) -> None:
        ready = done if isinstance(done, ServerReadyEvent) else None
        start = starting.ts if starting is not None else done.ts
        if starting is None and ready is not None:
            start = done.ts - ready.connect_ms / 1000
        server_id = getattr(done, "server_id", "")
        attributes: Attributes = {"devall.server.id": server_id}
        if starting is not None:
            attributes["devall.server.source"] = starting.source
            attributes["devall.server.target"] = starting.target
            if starting.source.startswith("mcp_"):
                masked = self._redactor.text(starting.target)
                attributes.update(mcp_attributes(starting.source, masked, method=None))
        error = None
        if ready is not None:
            attributes["mcp.protocol.version"] = ready.protocol_version
            attributes["devall.server.name"] = ready.server_name
            attributes["devall.server.tools"] = ready.tools
            attributes["devall.server.pid"] = ready.pid
        elif isinstance(done, ServerExitedEvent):
            error = done.message or done.status
        span = self._open(f"start_server {server_id}", self._run, start, attributes)
        self._close(span, done.ts, {}, error=error)
