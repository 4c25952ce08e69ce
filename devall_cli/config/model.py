"""Typed, frozen configuration objects produced by the loader (SPEC.md §1-§5).

Mappings are stored as tuples of pairs or read-only mappings so that every object is immutable;
`identity()` methods give the keys that decide when two tooling entries share one server.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from devall_cli.config.dynamic import DynamicConfig
from devall_cli.config.function_dirs import NO_FOLDER, FunctionFolder
from devall_cli.errors import ConfigIssue
from devall_cli.redaction import Redactor
from devall_cli.tools.kinds.client_settings import DEFAULT_CLIENT, McpClientConfig
from devall_cli.tools.kinds.oauth_settings import OAuthConfig

if TYPE_CHECKING:
    from devall_cli.memory.base import MemoryRefConfig, MemoryStoreConfig
    from devall_cli.skills.config import SkillsConfig
    from devall_cli.thinking.base import ThinkingConfig


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


# --- tooling -------------------------------------------------------------------------------


@dataclass(frozen=True)
class McpRemoteConfig:
    """`tooling[].config` of `type: mcp_remote`."""

    server: str
    headers: Mapping[str, str] = EMPTY
    timeout: float = 10.0
    cache_ttl: float = 0.0
    tool_sources: tuple[str, ...] = ("mcp_tools",)
    auth: OAuthConfig | None = None  # OAuth 2.1 (config/oauth.py); None: no authorization flow
    client: McpClientConfig = DEFAULT_CLIENT  # elicitation, sampling, roots, log_level

    def identity(self) -> tuple[Any, ...]:
        """Entries with the same identity share one client session per run."""
        auth = self.auth.identity() if self.auth is not None else None
        headers = tuple(sorted(self.headers.items()))
        return ("mcp_remote", self.server, headers, self.timeout, auth, self.client)

    def display_target(self) -> str:
        """The URL, as shown in tables and traces."""
        return self.server


@dataclass(frozen=True)
class McpLocalConfig:
    """`tooling[].config` of `type: mcp_local`."""

    command: str
    args: tuple[str, ...] = ()
    cwd: str | None = None  # absolute after loading (relative paths resolve against the workflow)
    env: Mapping[str, str] = EMPTY
    inherit_env: bool = True
    startup_timeout: float = 10.0
    wait_for_log: str | None = None
    cache_ttl: float = 0.0
    tool_sources: tuple[str, ...] = ("mcp_tools",)
    max_concurrency: int = 1
    call_timeout: float = 60.0
    max_restarts: int = 1
    client: McpClientConfig = DEFAULT_CLIENT  # elicitation, sampling, roots, log_level

    def identity(self) -> tuple[Any, ...]:
        """Entries with the same identity share one process per run."""
        return (
            "mcp_local",
            self.command,
            self.args,
            self.cwd,
            tuple(sorted(self.env.items())),
            self.inherit_env,
            self.startup_timeout,
            self.wait_for_log,
            self.client,
        )

    def display_target(self) -> str:
        """The command line, as shown in tables and traces."""
        import shlex

        return shlex.join([self.command, *self.args])


@dataclass(frozen=True)
class FunctionRef:
    """One entry of a function tooling's `tools` list."""

    name: str  # a function name, or `module:All`


@dataclass(frozen=True)
class FunctionToolingConfig:
    """`tooling[].config` of `type: function`."""

    tools: tuple[FunctionRef, ...]
    timeout: float = 30.0
    folder: FunctionFolder = NO_FOLDER  # where the loader found the functions

    @property
    def functions_dir(self) -> str:
        """The functions directory (absolute), as listings show it."""
        return self.folder.root

    def identity(self) -> tuple[Any, ...]:
        """Function tooling has no server; each entry is its own source."""
        return ("function", self.folder, self.tools, self.timeout)

    def display_target(self) -> str:
        """The functions directory."""
        return self.functions_dir


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
class ScriptedToolCall:
    """A tool call in a scripted turn."""

    name: str
    arguments: Mapping[str, Any] = EMPTY


@dataclass(frozen=True)
class ScriptedTurn:
    """One assistant turn of the `scripted` provider."""

    content: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()


RESERVED_PARAMS = ("tool_loop_limit", "timeout", "retries", "max_result_chars")


@dataclass(frozen=True)
class AgentConfig:
    """`config` of an agent node."""

    provider: str  # the name of a registered provider
    name: str
    base_url: str | None = None
    api_key: str | None = None
    role: str | None = None
    tooling: tuple[ToolingConfig, ...] = ()
    params: Mapping[str, Any] = EMPTY  # sent in the request body (reserved keys removed)
    provider_config: Any = None  # what the provider parsed for itself (a scripted agent's turns)
    input_mode: str = "messages"  # messages | prompt
    tool_loop_limit: int = 50
    timeout: float = 300.0
    retries: int = 5
    max_result_chars: int = 100_000
    thinking: ThinkingConfig | None = None  # a thinking stage (reflection, ...)
    memories: tuple[MemoryRefConfig, ...] = ()  # the graph's memory stores it reads and writes
    skills: SkillsConfig | None = None  # None: skills are off


@dataclass(frozen=True)
class LiteralConfig:
    """`config` of a literal node."""

    content: str
    role: str = "user"


@dataclass(frozen=True)
class PassthroughConfig:
    """`config` of a passthrough node."""

    only_last_message: bool = True


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
