"""The graph's `tool_warning` block: when a node's tool surface is big enough to warn about.

    graph:
      tool_warning:
        tools: 128           # more tools than this sent to the model in one request: a warning
        schema_bytes: 262144  # more bytes of tool definitions (name, description, schema)

0 turns a check off. The warning itself is `nodes/surface_size.py`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devall_cli.config.json_shapes import Schema, keys_object
from devall_cli.config.schema import Checker, KeySpec, get_mapping, opt_int, unknown_key_message
from devall_cli.config.yaml_source import KeyPath

WARNING_KEY = "tool_warning"
DEFAULT_TOOLS = 128
DEFAULT_SCHEMA_BYTES = 256 * 1024
WARNING_KEYS = KeySpec(known=frozenset({"tools", "schema_bytes"}))


@dataclass(frozen=True)
class ToolWarningConfig:
    """The limits of one request's tools; 0: that limit is not checked."""

    tools: int = DEFAULT_TOOLS
    schema_bytes: int = DEFAULT_SCHEMA_BYTES


DEFAULT_WARNING = ToolWarningConfig()


def parse_tool_warning(ck: Checker, raw: Any, path: KeyPath) -> ToolWarningConfig:
    """The block at `path` (`graph.tool_warning`); the defaults when absent or unusable."""
    block = get_mapping(ck, raw, path, WARNING_KEY) if raw is not None else None
    if block is None:
        return DEFAULT_WARNING
    for key in block:
        if key not in WARNING_KEYS.known:  # an error: a misspelt limit would silently not apply
            message = unknown_key_message(str(key), WARNING_KEYS, ignored=False)
            ck.error((*path, key), message, at_key=True)
    tools = opt_int(ck, block, "tools", path, DEFAULT_TOOLS, minimum=0)
    schema_bytes = opt_int(ck, block, "schema_bytes", path, DEFAULT_SCHEMA_BYTES, minimum=0)
    return ToolWarningConfig(tools, schema_bytes)


def warning_shape() -> Schema:
    """The schema of a `tool_warning` block (`devall schema`)."""
    return keys_object(WARNING_KEYS, strict=True)
