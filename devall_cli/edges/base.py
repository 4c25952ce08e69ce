"""Edge condition types and edge payload processors: registered descriptors, one module each.

A condition decides, from the text of the message a node emitted, whether an edge delivers it
(and fires its trigger). A processor rewrites the payload on its way, or drops it (None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from devall_cli.config.json_shapes import Schema, no_shapes
from devall_cli.config.schema import Checker, KeySpec
from devall_cli.config.yaml_source import KeyPath
from devall_cli.kinds import Registry
from devall_cli.messages import Message

Condition = Callable[[str], bool]
Processor = Callable[[Message], "Message | None"]


class EdgeEnv(Protocol):
    """What conditions and processors may use from the run when they are built."""

    def function(self, name: str, file: str) -> Callable[..., Any]:
        """The user function `name` of the module `file` (found when the workflow was loaded),
        its module imported; a module that cannot be imported raises ConfigError."""
        ...

    def state(self) -> dict[str, Any]:
        """The run's shared state handed to processor functions (ChatDev's global_state)."""
        ...


@dataclass(frozen=True)
class ConditionType:
    """One condition type: `condition: {type: <name>, config: {...}}`."""

    name: str
    summary: str
    keys: KeySpec
    parse: Callable[[Checker, dict[str, Any], KeyPath], Any]  # settings, None after issues
    build: Callable[[Any, EdgeEnv], Condition]
    label: Callable[[Any], str] = lambda settings: ""  # how the trace and graphs name it
    shapes: Callable[[], dict[str, Schema]] = no_shapes  # `devall schema`: nested blocks


@dataclass(frozen=True)
class ProcessorType:
    """One processor type: `process: {type: <name>, config: {...}}`."""

    name: str
    summary: str
    keys: KeySpec
    parse: Callable[[Checker, dict[str, Any], KeyPath], Any]
    build: Callable[[Any, EdgeEnv], Processor]
    label: Callable[[Any], str] = lambda settings: ""
    shapes: Callable[[], dict[str, Schema]] = no_shapes  # `devall schema`: nested blocks


# Every module of this package is imported on first use: a new condition or processor type is
# one module that registers itself.
CONDITION_TYPES: Registry[ConditionType] = Registry("condition type", package="devall_cli.edges")
PROCESSOR_TYPES: Registry[ProcessorType] = Registry("processor type", package="devall_cli.edges")
