"""The graph model: typed, frozen objects the loader builds (SPEC.md §1-§5).

A node's, a tooling entry's or a condition's `config` is the settings object its kind parsed
(defined in the kind's own module). Mappings are read-only so that every object is immutable.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from devall_cli.config.dynamic import DynamicConfig
from devall_cli.errors import ConfigIssue
from devall_cli.redaction import Redactor

if TYPE_CHECKING:
    from devall_cli.config.pricing import PriceEntry


class _EmptyMapping(Mapping[str, Any]):
    """The empty read-only mapping; hashable, because dataclasses refuse unhashable defaults."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"


EMPTY: Mapping[str, Any] = _EmptyMapping()


def frozen_mapping(data: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy of `data`."""
    return MappingProxyType(dict(data or {}))


@dataclass(frozen=True)
class MemoryStoreConfig:
    """One entry of `graph.memory`: a named store of a registered type."""

    name: str
    type: str
    config: Any  # the type's settings object
    path: str = ""  # where it is declared: graph.memory[0]


# --- tooling entries ----------------------------------------------------------------------


@dataclass(frozen=True)
class ToolingConfig:
    """One `tooling` entry of an agent node."""

    type: str  # the name of a registered tooling type
    config: Any  # that type's settings object (McpRemoteConfig, McpLocalConfig, ...)
    prefix: str | None = None
    path: str = ""  # e.g. graph.nodes[1].config.tooling[0]
    name: str | None = None  # a readable source id (a server's name in an mcpServers file)

    def final_name(self, name: str) -> str:
        """The tool name the model sees: `<prefix>_<name>`, or `name` without a prefix."""
        return f"{self.prefix}_{name}" if self.prefix else name


# --- nodes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeConfig:
    """One node of the graph; `config` is the settings object its node type parsed."""

    id: str
    type: str
    config: Any
    description: str | None = None
    context_window: int = 0  # 0: only kept messages survive a visit; -1: all; N: the newest N
    log_output: bool = True
    path: str = ""


# --- edges and graph -----------------------------------------------------------------------


@dataclass(frozen=True)
class KeywordCondition:
    """`condition: {type: keyword, config: {...}}`."""

    any: tuple[str, ...] = ()
    none: tuple[str, ...] = ()
    regex: tuple[str, ...] = ()
    case_sensitive: bool = True


@dataclass(frozen=True)
class FunctionCondition:
    """`condition: {type: function, config: {name}}`; `true` and `false` are built in."""

    name: str = "true"
    file: str = ""  # the module defining it (absolute), found by the loader; "" when built in


@dataclass(frozen=True)
class ConditionConfig:
    """An edge condition: the name of a registered condition type and its settings."""

    type: str = "function"
    config: Any = FunctionCondition()

    @property
    def always(self) -> bool:
        """Whether the condition is the built-in `true`."""
        return self.type == "function" and getattr(self.config, "name", None) == "true"


ALWAYS = ConditionConfig()


@dataclass(frozen=True)
class ProcessorConfig:
    """An edge `process` block: the name of a registered processor type and its settings."""

    type: str
    config: Any


@dataclass(frozen=True)
class EdgeConfig:
    """One edge; `source`/`target` are the YAML `from`/`to`."""

    source: str
    target: str
    condition: ConditionConfig = ALWAYS
    carry_data: bool = True
    trigger: bool = True
    keep_message: bool = False  # the delivered copy survives the target's context reset
    clear_context: bool = False  # first drop the target's queued messages (not kept ones)
    clear_kept_context: bool = False  # first drop the target's kept messages
    process: ProcessorConfig | None = None
    dynamic: DynamicConfig | None = None  # run the target once per part of the payload
    path: str = ""


@dataclass(frozen=True)
class GraphConfig:
    """The `graph` block."""

    nodes: tuple[NodeConfig, ...]
    start: tuple[str, ...]
    end: tuple[str, ...] = ()
    edges: tuple[EdgeConfig, ...] = ()
    id: str | None = None
    description: str | None = None
    is_majority_voting: bool = False
    path: str = "graph"  # where the graph sits: `graph`, or a subgraph node's config
    memory: tuple[MemoryStoreConfig, ...] = ()  # the graph's memory stores
    # The graph's `tool_policy` (a tools.policy.ToolPolicy; None: none). Typed loosely: the
    # config layer sits below the tool layer that defines it.
    tool_policy: Any = None
    # The graph's `tool_warning` (a config.tool_warning.ToolWarningConfig; None: the defaults).
    tool_warning: Any = None

    def node(self, node_id: str) -> NodeConfig:
        """The node with this id (KeyError if there is none)."""
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)


@dataclass(frozen=True)
class Workflow:
    """A loaded, resolved and validated workflow file."""

    graph: GraphConfig
    path: Path
    version: str | None = None
    vars: Mapping[str, Any] = EMPTY
    pricing: tuple[PriceEntry, ...] = ()  # the file's `pricing:` table, over the built-in one
    # Masks this workflow's secrets in everything devall prints or writes (built by the loader).
    redactor: Redactor = field(default_factory=Redactor, compare=False)
    warnings: tuple[ConfigIssue, ...] = field(default=())

    @property
    def directory(self) -> Path:
        """The folder of the workflow file (relative paths resolve against it)."""
        return self.path.parent

    @property
    def name(self) -> str:
        """The graph id, or the file stem."""
        return self.graph.id or self.path.stem


@runtime_checkable
class HoldsTooling(Protocol):
    """Node settings that use tooling (an agent's): the node's entries."""

    def tooling_entries(self) -> tuple[ToolingConfig, ...]: ...


@runtime_checkable
class HoldsGraphs(Protocol):
    """Node settings that hold graphs of their own (a subgraph node's)."""

    def child_graphs(self) -> tuple[GraphConfig, ...]: ...


def node_tooling(node: NodeConfig) -> tuple[ToolingConfig, ...]:
    """The tooling entries a node uses (none for most node types)."""
    config = node.config
    return config.tooling_entries() if isinstance(config, HoldsTooling) else ()


def node_graphs(node: NodeConfig) -> tuple[GraphConfig, ...]:
    """The graphs a node holds (a subgraph node's child graph)."""
    config = node.config
    return config.child_graphs() if isinstance(config, HoldsGraphs) else ()


def walk_nodes(graph: GraphConfig, prefix: str = "") -> Iterator[tuple[str, NodeConfig]]:
    """Every node of a graph and of its subgraphs, with its path (`outer/inner/node`)."""
    for node in graph.nodes:
        path = prefix + node.id
        yield path, node
        for child in node_graphs(node):
            yield from walk_nodes(child, f"{path}/")
