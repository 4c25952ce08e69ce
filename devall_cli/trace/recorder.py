"""The summary of a run, built from its events: node outcomes, counts, tool stats, attachments,
and the cost of its model calls (per node, per model and in total)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from devall_cli.config.cost import CostTotals
from devall_cli.config.pricing import PriceTable
from devall_cli.events import (
    AttachmentSavedEvent,
    CodeFinishedEvent,
    CodeStartedEvent,
    EmbeddingsEvent,
    Event,
    GraphNoteEvent,
    HumanRepliedEvent,
    MemoryLoadedEvent,
    MemoryRetrievedEvent,
    MemoryWrittenEvent,
    ModelReplyEvent,
    NodeFinishedEvent,
    NodeStartedEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ServerExitedEvent,
    ServerReadyEvent,
    ServerStartingEvent,
    ToolResultEvent,
)
from devall_cli.trace.cost_record import CostRecording
from devall_cli.trace.policy_record import PolicyRecord, PolicyRecording


@dataclass(frozen=True)
class TokenCounts:
    """Tokens reported by the model endpoint."""

    prompt: int = 0
    completion: int = 0
    total: int = 0

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            self.prompt + other.prompt,
            self.completion + other.completion,
            self.total + other.total,
        )


@dataclass(frozen=True)
class VisitRecord:
    """One run of a node (a node in a loop runs many times)."""

    visit: int
    status: str = "running"  # running | ok | failed
    outputs: tuple[str, ...] = ()
    error: str | None = None
    duration_ms: float = 0.0


@dataclass(frozen=True)
class NodeRecord:
    """One node of a run (`node_id` is its path): status, output, timing, what it consumed."""

    node_id: str
    status: str = "pending"  # pending | running | ok | failed | skipped
    output: str | None = None  # the last output of the last visit that had one
    error: str | None = None
    duration_ms: float = 0.0  # of all visits
    model_calls: int = 0
    tool_calls: int = 0
    tokens: TokenCounts = field(default_factory=TokenCounts)
    visits: tuple[VisitRecord, ...] = ()
    cost: CostTotals = field(default_factory=CostTotals)


@dataclass(frozen=True)
class ToolStats:
    """Calls of one tool (final name) during a run."""

    tool: str
    original_name: str = ""
    source: str = ""
    server: str = ""
    calls: int = 0
    errors: int = 0
    total_ms: float = 0.0


@dataclass(frozen=True)
class AttachmentRecord:
    """A binary tool result saved under the run directory."""

    path: str
    mime_type: str
    size: int
    sha256: str
    tool: str = ""
    node_id: str = ""


@dataclass(frozen=True)
class ServerRecord:
    """A tool source used by the run."""

    server_id: str
    source: str = ""
    target: str = ""
    status: str = "starting"  # starting | ready | exited
    protocol_version: str | None = None
    server_name: str | None = None
    tools: int = 0
    connect_ms: float = 0.0
    sandbox: Mapping[str, Any] | None = None  # how a local server runs confined (None: it does not)


@dataclass(frozen=True)
class MemoryRecord:
    """A memory store of a graph, and what the run did with it."""

    store: str
    graph: str = ""  # "" for the workflow's graph, else the subgraph node's path
    type: str = ""
    path: str | None = None
    loaded_items: int = 0  # items it held when the graph started
    items: int = 0  # items it holds now
    retrievals: int = 0
    writes: int = 0
    added: int = 0
    embedding_calls: int = 0
    embedding_tokens: int = 0


@dataclass(frozen=True)
class RunResult:
    """The outcome of a run, as result.json and the summary table show it."""

    run_id: str
    workflow: str
    status: str  # running | ok | failed | interrupted
    output: str = ""
    task: str = ""
    error: str | None = None
    details: tuple[str, ...] = ()  # what the error's message leaves out (a server's log lines)
    hint: str | None = None
    exit_code: int = 0
    started_at: float = 0.0
    duration_ms: float = 0.0
    nodes: tuple[NodeRecord, ...] = ()
    tools: tuple[ToolStats, ...] = ()
    attachments: tuple[AttachmentRecord, ...] = ()
    servers: tuple[ServerRecord, ...] = ()
    notes: tuple[dict[str, Any], ...] = ()  # what the scheduler decided (a vote, a cycle limit)
    human_replies: tuple[dict[str, Any], ...] = ()  # {node, visit, channel, reply}
    code_runs: tuple[dict[str, Any], ...] = ()  # {node, visit, script, status, exit_code, ...}
    memory: tuple[MemoryRecord, ...] = ()
    policy: PolicyRecord = field(default_factory=PolicyRecord)
    models: tuple[tuple[str, CostTotals], ...] = ()  # (model name, its calls), first call first
    budget: Mapping[str, Any] | None = None  # the budget that stopped the run, if one did
    warnings: tuple[dict[str, Any], ...] = ()  # {kind: tools_oversize, node, ...}

    @property
    def node_outputs(self) -> dict[str, str]:
        """The output of every node that produced one."""
        return {n.node_id: n.output for n in self.nodes if n.output is not None}

    @property
    def model_calls(self) -> int:
        """Model requests answered during the run."""
        return sum(n.model_calls for n in self.nodes)

    @property
    def tool_calls(self) -> int:
        """Tool calls finished during the run (errors included)."""
        return sum(t.calls for t in self.tools)

    @property
    def tool_errors(self) -> int:
        """Tool calls that ended with an error result (a failure the model saw, as data)."""
        return sum(t.errors for t in self.tools)

    @property
    def tokens(self) -> TokenCounts:
        """Tokens of all model calls."""
        total = TokenCounts()
        for node in self.nodes:
            total = total + node.tokens
        return total

    @property
    def cost(self) -> CostTotals:
        """Tokens and cost of all model calls."""
        total = CostTotals()
        for _, model in self.models:
            total = total + model
        return total


class RunRecorder(PolicyRecording, CostRecording):
    """An event sink that keeps the running summary of one run (its model calls priced by
    `pricing`; None: the built-in prices)."""

    def __init__(self, pricing: PriceTable | None = None) -> None:
        self._result = RunResult(run_id="", workflow="", status="running")
        self._nodes: dict[str, NodeRecord] = {}
        self._tools: dict[str, ToolStats] = {}
        self._servers: dict[str, ServerRecord] = {}
        self._attachments: list[AttachmentRecord] = []
        self._notes: list[dict[str, Any]] = []
        self._replies: list[dict[str, Any]] = []
        self._code_runs: list[dict[str, Any]] = []
        self._memory: dict[tuple[str, str], MemoryRecord] = {}
        self._sandboxes: dict[tuple[str, int], Mapping[str, Any]] = {}  # of scripts running
        self._start_policy()
        self._start_cost(pricing)

    def __call__(self, event: Event) -> None:
        """Take one event into account."""
        handler = getattr(self, "_on_" + event.kind.replace(".", "_"), None)
        if handler is not None:
            handler(event)

    def result(self) -> RunResult:
        """The summary so far (final once `run.finished` was seen)."""
        return replace(
            self._result,
            nodes=tuple(self._nodes.values()),
            tools=tuple(self._tools.values()),
            attachments=tuple(self._attachments),
            servers=tuple(self._servers.values()),
            notes=tuple(self._notes),
            human_replies=tuple(self._replies),
            code_runs=tuple(self._code_runs),
            memory=tuple(self._memory.values()),
            policy=self._policy_record(),
            warnings=self._warnings_record(),
            models=self._cost_models(),
        )

    def node(self, node_id: str) -> NodeRecord:
        """The record of one node (a pending one if it has not started)."""
        return self._nodes.get(node_id, NodeRecord(node_id))

    # --- handlers (named after event kinds) --------------------------------------------------

    def _on_run_started(self, event: RunStartedEvent) -> None:
        self._result = replace(
            self._result,
            run_id=event.run_id,
            workflow=event.workflow,
            task=event.task,
            started_at=event.ts,
        )

    def _on_run_finished(self, event: RunFinishedEvent) -> None:
        self._result = replace(
            self._result,
            status=event.status,
            output=event.output,
            error=event.error,
            details=tuple(event.details),
            hint=event.hint,
            exit_code=event.exit_code,
            duration_ms=event.duration_ms,
            budget=dict(event.budget) if event.budget is not None else None,
        )

    def _on_node_started(self, event: NodeStartedEvent) -> None:
        node = self.node(event.node_id)
        visits = (*node.visits, VisitRecord(event.visit))
        self._update_node(event.node_id, status="running", visits=visits)

    def _on_node_finished(self, event: NodeFinishedEvent) -> None:
        node = self.node(event.node_id)
        if event.status == "skipped":
            if not node.visits:
                self._update_node(event.node_id, status="skipped")
            return
        visit = VisitRecord(
            event.visit, event.status, tuple(event.outputs), event.error, event.duration_ms
        )
        earlier = tuple(v for v in node.visits if v.visit != event.visit)
        self._update_node(
            event.node_id,
            status=event.status,
            output=event.output if event.output is not None else node.output,
            error=event.error,
            duration_ms=round(node.duration_ms + event.duration_ms, 3),
            visits=(*earlier, visit),
        )

    def _on_graph_note(self, event: GraphNoteEvent) -> None:
        self._notes.append(
            {"graph": event.graph, "note": event.note, "message": event.message, **event.details}
        )

    def _on_human_replied(self, event: HumanRepliedEvent) -> None:
        self._replies.append(
            {
                "node": event.node_id,
                "visit": event.visit,
                "channel": event.channel,
                "reply": event.reply,
            }
        )

    def _on_code_started(self, event: CodeStartedEvent) -> None:
        if event.sandbox is not None:
            self._sandboxes[(event.node_id, event.visit)] = event.sandbox

    def _on_code_finished(self, event: CodeFinishedEvent) -> None:
        sandbox = self._sandboxes.pop((event.node_id, event.visit), None)
        self._code_runs.append(
            {
                "node": event.node_id,
                "visit": event.visit,
                "script": event.script,
                "status": event.status,
                "exit_code": event.exit_code,
                "duration_ms": event.duration_ms,
                "sandbox": dict(sandbox) if sandbox is not None else None,
            }
        )

    def _on_model_reply(self, event: ModelReplyEvent) -> None:
        node = self.node(event.node_id)
        usage = event.usage
        tokens = TokenCounts(
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
            int(usage.get("total_tokens", 0)),
        )
        self._update_node(
            event.node_id,
            model_calls=node.model_calls + 1,
            tokens=node.tokens + tokens,
            cost=node.cost + self._priced_call(event),
        )

    def _on_tool_result(self, event: ToolResultEvent) -> None:
        self._count_refused(event)
        node = self.node(event.node_id)
        self._update_node(event.node_id, tool_calls=node.tool_calls + 1)
        stats = self._tools.get(event.tool) or ToolStats(
            event.tool, event.original_name, event.source, event.server
        )
        self._tools[event.tool] = replace(
            stats,
            calls=stats.calls + 1,
            errors=stats.errors + int(event.is_error),
            total_ms=round(stats.total_ms + event.duration_ms, 3),
        )

    _on_tool_error = _on_tool_result

    def _on_attachment_saved(self, event: AttachmentSavedEvent) -> None:
        self._attachments.append(
            AttachmentRecord(
                event.path, event.mime_type, event.size, event.sha256, event.tool, event.node_id
            )
        )

    def _on_server_starting(self, event: ServerStartingEvent) -> None:
        self._servers[event.server_id] = ServerRecord(event.server_id, event.source, event.target)

    def _on_server_ready(self, event: ServerReadyEvent) -> None:
        record = self._servers.get(event.server_id) or ServerRecord(event.server_id)
        self._servers[event.server_id] = replace(
            record,
            status="ready",
            protocol_version=event.protocol_version,
            server_name=event.server_name,
            tools=event.tools,
            connect_ms=event.connect_ms,
            sandbox=dict(event.sandbox) if event.sandbox is not None else None,
        )

    def _on_server_exited(self, event: ServerExitedEvent) -> None:
        record = self._servers.get(event.server_id) or ServerRecord(event.server_id)
        self._servers[event.server_id] = replace(record, status="exited")

    def _on_memory_loaded(self, event: MemoryLoadedEvent) -> None:
        key = (event.graph, event.store)
        record = self._memory.get(key) or MemoryRecord(event.store, event.graph)
        self._memory[key] = replace(
            record, type=event.type, path=event.path, loaded_items=event.items, items=event.items
        )

    def _on_memory_retrieve(self, event: MemoryRetrievedEvent) -> None:
        graph = _graph_of(event.node_id)
        for store in event.stores:
            record = self._store(graph, store)
            self._memory[(graph, store)] = replace(record, retrievals=record.retrievals + 1)

    def _on_memory_write(self, event: MemoryWrittenEvent) -> None:
        graph = _graph_of(event.node_id)
        record = self._store(graph, event.store)
        self._memory[(graph, event.store)] = replace(
            record, writes=record.writes + 1, added=record.added + event.added, items=event.items
        )

    def _on_memory_embeddings(self, event: EmbeddingsEvent) -> None:
        record = self._store(event.graph, event.store)
        tokens = int(event.usage.get("total_tokens", event.usage.get("prompt_tokens", 0)))
        self._memory[(event.graph, event.store)] = replace(
            record,
            embedding_calls=record.embedding_calls + 1,
            embedding_tokens=record.embedding_tokens + tokens,
        )

    def _store(self, graph: str, store: str) -> MemoryRecord:
        return self._memory.get((graph, store)) or MemoryRecord(store, graph)

    def _update_node(self, node_id: str, **changes: Any) -> None:
        self._nodes[node_id] = replace(self.node(node_id), **changes)


def _graph_of(node_path: str) -> str:
    """The graph a node belongs to: its subgraph node's path, or "" for the workflow's graph."""
    return node_path.rpartition("/")[0]
