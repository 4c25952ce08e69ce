"""What a report shows of a run, read back from its records: nodes, visits and their steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli.graphview.shape import GraphShape


@dataclass
class ModelTurn:
    """One request to a model and its reply (None while it never came)."""

    round: int
    stage: str
    started: float
    ended: float | None = None
    messages: int = 0
    tools: list[str] = field(default_factory=list)
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    replied: bool = False


@dataclass
class ToolCall:
    """One tool call and its result (`finished` False: the run stopped while it ran)."""

    call_id: str
    tool: str
    started: float
    ended: float | None = None
    original_name: str = ""
    source: str = ""
    server: str = ""
    arguments: Any = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    is_error: bool = False
    error_class: str | None = None
    finished: bool = False
    approval: dict[str, Any] | None = None  # the policy's decision on it (`tool.approval`)
    icon: str | None = None  # the `data:` image of the tool's icons the page shows (render.py)


@dataclass
class Step:
    """One thing a visit did, in time order: `model`, `tool`, `human`, `code` or `memory`."""

    kind: str
    started: float
    ended: float | None = None
    turn: ModelTurn | None = None
    call: ToolCall | None = None
    data: dict[str, Any] = field(default_factory=dict)  # human, code and memory events

    @property
    def end(self) -> float | None:
        """When it ended (None: never)."""
        if self.turn is not None:
            return self.turn.ended
        if self.call is not None:
            return self.call.ended
        return self.ended


@dataclass
class Visit:
    """One visit of a node (`status` running: it never finished)."""

    path: str
    visit: int
    started: float
    ended: float | None = None
    inputs: list[str] = field(default_factory=list)
    status: str = "running"
    outputs: list[str] = field(default_factory=list)
    error: str | None = None
    duration_ms: float | None = None
    steps: list[Step] = field(default_factory=list)


@dataclass
class NodeView:
    """A node (by its run-time path: `outer/inner`, `node#2`) and all its visits."""

    path: str
    declared: str  # the path of the node the workflow declares (`node` for `node#2`)
    type: str = ""
    status: str = "not_run"
    visits: list[Visit] = field(default_factory=list)
    model_calls: int = 0
    tool_calls: int = 0
    tokens: int = 0
    duration_ms: float = 0.0
    error: str | None = None
    anchor: str = ""


@dataclass
class ServerSpan:
    """A tool source starting: from `server.starting` to ready (or never)."""

    server_id: str
    source: str
    target: str
    started: float
    ready: float | None = None
    status: str = "starting"
    sandbox: dict[str, Any] | None = None  # how a local server ran confined (server.ready)


@dataclass
class PolicyView:
    """What the tool policy did: tools kept from nodes, decisions on calls, calls refused."""

    denied: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by node path
    approvals: list[dict[str, Any]] = field(default_factory=list)
    refused_calls: int = 0

    @property
    def empty(self) -> bool:
        """Whether there is nothing to show."""
        return not self.denied and not self.approvals and not self.refused_calls


@dataclass
class RunLog:
    """Everything a report shows of one run directory."""

    run_dir: Path
    run_id: str = ""
    workflow: str = ""
    task: str = ""
    status: str = "unknown"  # ok | failed | interrupted | budget | running (no end) | unknown
    exit_code: int | None = None
    error: str | None = None
    details: list[str] = field(default_factory=list)  # under the error (a server's log lines)
    hint: str | None = None  # how to fix the error, where devall could tell
    output: str = ""
    started_at: str | None = None
    duration_ms: float | None = None
    start_ts: float = 0.0
    end_ts: float = 0.0
    shape: GraphShape | None = None
    nodes: list[NodeView] = field(default_factory=list)
    servers: list[ServerSpan] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    policy: PolicyView = field(default_factory=PolicyView)
    fired: set[tuple[str, str]] = field(default_factory=set)  # declared paths of used edges
    result: dict[str, Any] = field(default_factory=dict)  # result.json as written
    problems: list[str] = field(default_factory=list)  # what could not be read

    def node(self, path: str) -> NodeView | None:
        """The node with this run-time path, or None."""
        return next((node for node in self.nodes if node.path == path), None)
