"""What a node type is (its descriptor), and what a node gets from the run while it runs.

A node type is one module of this package: it parses and validates its `config` block, says
what the validate summary shows of it, which tooling and subgraphs it uses, and runs one visit
of a node (a runtime imported only then). The engine never switches on node types; it asks the
descriptor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from devall_cli.config.json_shapes import Schema, no_shapes
from devall_cli.config.schema import Checker, KeySpec
from devall_cli.config.yaml_source import KeyPath
from devall_cli.kinds import Registry
from devall_cli.messages import Message

if TYPE_CHECKING:
    from devall_cli.config.model import GraphConfig, NodeConfig
    from devall_cli.events import Event
    from devall_cli.memory.bank import MemoryBank
    from devall_cli.memory.base import MemoryRefConfig
    from devall_cli.providers.base import Provider
    from devall_cli.tools.base import CallContext, ToolResult, ToolSpec


class ToolDispatcher(Protocol):
    """What nodes need from the ToolManager."""

    async def specs_for(self, node_id: str) -> list[ToolSpec]:
        """The tools offered to this node's model."""
        ...

    async def call(
        self,
        node_id: str,
        name: str,
        arguments: Mapping[str, Any],
        *,
        context: CallContext | None = None,
    ) -> ToolResult:
        """Call a tool by final name; tool failures come back as `is_error` results.

        `context` is who answers what the server asks during the call (the node's model).
        """
        ...


SubgraphRunner = Callable[["GraphConfig", Sequence[Message], str], Awaitable[list[Message]]]


@dataclass
class NodeRun:
    """One visit of one node: its inputs and everything it may use from the run around it."""

    node: NodeConfig
    inputs: list[Message]
    visit: int  # 1 for the first time the node runs, 2 for the second, ...
    path: str  # the node's id, prefixed by its subgraph nodes: `outer/inner/node`
    run_id: str
    emit: Callable[[Event], None]
    tools: ToolDispatcher
    make_provider: Callable[..., Provider]  # (agent config, node state) -> a provider
    state: dict[str, Any]  # kept across the visits of this node (a loop counter's count)
    run_dir: Path | None = None
    workflow_dir: Path | None = None
    # Runs a graph as a subgraph of this node (the run's servers, secrets and guards apply).
    run_subgraph: SubgraphRunner | None = None
    memory: MemoryBank | None = None  # the memory stores of the node's graph
    # Shared by every node of the run: what the command gives nodes (the human reply source),
    # and what nodes of one type keep run-wide (the python scripts written so far).
    extras: dict[str, Any] = field(default_factory=dict)


NodeParser = Callable[[Checker, dict[str, Any], KeyPath], Any]
NodeRunner = Callable[[NodeRun], Awaitable[list[Message]]]


def _no_details(settings: Any) -> dict[str, Any]:
    return {}


def _no_memory_refs(settings: Any) -> tuple[MemoryRefConfig, ...]:
    return ()


def _no_text(settings: Any) -> str:
    return ""


@dataclass(frozen=True)
class NodeType:
    """One node type: how its `config` is read and how a visit runs."""

    name: str
    summary: str
    keys: KeySpec  # the keys of its `config` block
    parse: NodeParser  # settings object, or None after recording issues
    run: NodeRunner
    config_required: bool = True  # False: a missing `config` means `{}`
    serial: bool = False  # True: visits of nodes of this type never overlap within a run
    details: Callable[[Any], dict[str, Any]] = _no_details  # extra fields for validate --json
    # The graph's memory stores a node uses (checked against `graph.memory` by the loader).
    memory_refs: Callable[[Any], tuple[MemoryRefConfig, ...]] = _no_memory_refs
    shapes: Callable[[], dict[str, Schema]] = no_shapes  # `devall schema`: nested blocks
    # What the node runs, in a few words: the model, the subgraph file, the limit (pictures).
    label: Callable[[Any], str] = _no_text
    # The note `devall validate` prints after the type: `openai: gpt-4o`, `file: x.yaml`.
    note: Callable[[Any], str] = _no_text
    asks_operator: bool = False  # True: a visit asks a person (answered with --answers)
    # True: a visit may emit nothing (a loop gate), so a cycle through the node can end there.
    may_hold_output: bool = False


def may_hold_output(node: NodeConfig) -> bool:
    """Whether a visit of this node may emit nothing (loop_counter, loop_timer)."""
    kind = NODE_TYPES.get(node.type)
    return kind is not None and kind.may_hold_output


def asks_operator(node: NodeConfig) -> bool:
    """Whether visits of this node ask a person (a human node)."""
    kind = NODE_TYPES.get(node.type)
    return kind is not None and kind.asks_operator


# The modules of the built-in node types, imported when a node type is first asked for. Each
# registers a light descriptor: parsing a workflow imports no runtime (its `run` is named with
# `kinds.runtime` and imported when a node first runs). A new node type is one such module.
NODE_TYPES: Registry[NodeType] = Registry(
    "node type",
    tuple(
        f"devall_cli.nodes.{name}"
        for name in (
            "agent_config",
            "human",
            "literal",
            "loop_counter",
            "loop_timer",
            "passthrough",
            "python",
            "subgraph",
        )
    ),
)
