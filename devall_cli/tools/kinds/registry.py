"""Tooling entries: the registry of tooling types (descriptors), and the parser of `tooling:`.

A tooling type is one descriptor: it parses its `config` block into a settings object and
makes the ToolSource that serves it at run time, and says how to name, list and probe it. A new
tooling type is one module that registers a descriptor; nothing else needs to change.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from devall_cli.config.json_shapes import Schema, no_shapes
from devall_cli.config.model import ToolingConfig
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    opt_number,
    opt_str,
)
from devall_cli.config.yaml_source import KeyPath, format_path
from devall_cli.kinds import Registry
from devall_cli.text import suggest

if TYPE_CHECKING:
    from devall_cli.tools.base import ToolSource
    from devall_cli.tools.kinds.client_settings import RootConfig
    from devall_cli.tools.plan import SourceContext

# Parses a type's `config` mapping; returns None after recording issues when it is unusable.
ToolingParser = Callable[[Checker, dict[str, Any], KeyPath], Any]
# Makes (does not start) the source serving a settings object: (source id, settings, context).
SourceFactory = Callable[[str, Any, "SourceContext"], "ToolSource"]


def opt_cache_ttl(ck: Checker, config: Mapping[str, Any], path: KeyPath) -> float | None:
    """`cache_ttl` (seconds >= 0) as the workflow sets it; None when it does not."""
    unset = config.get("cache_ttl") in (None, UNRESOLVED)
    ttl = opt_number(ck, config, "cache_ttl", path, 0.0, minimum=0)
    return None if unset else ttl


def _no_source(source_id: str, settings: Any, ctx: SourceContext) -> ToolSource:
    raise NotImplementedError("this tooling type has no runtime")


_NO_KEYS = KeySpec(known=frozenset())


@dataclass(frozen=True)
class ToolingType:
    """One registered tooling type."""

    name: str
    parse: ToolingParser
    summary: str = ""
    keys: KeySpec = _NO_KEYS  # the keys of its `config` (for `devall schema`)
    make_source: SourceFactory = _no_source
    base_name: Callable[[Any], str] = lambda settings: "tools"  # a readable source id
    # Seconds a listing is kept; None: as the server's cache hint says (tools/cache_hints.py).
    cache_ttl: Callable[[Any], float | None] = lambda settings: math.inf
    is_server: bool = True  # probed by `devall probe` (function tooling has no server)
    # The status `devall probe` reports when a server is not ready in time.
    timeout_status: str = "handshake_timeout"
    # How to fix a source that did not start: (settings, error, where its config is) -> hint.
    start_hint: Callable[[Any, Any, str], str] = lambda settings, error, where: ""
    # Set for a type that stands for several entries (one per server of an mcpServers file):
    # the entries that replace it, each served by its own type.
    expand: Callable[[ToolingConfig], tuple[ToolingConfig, ...]] | None = None
    # A process to spawn before the MCP client stack is imported (see tools/head_start.py).
    early_process: Callable[[str, Any, SourceContext], Any] | None = None
    shapes: Callable[[], dict[str, Schema]] = no_shapes  # `devall schema`: nested blocks
    # The roots its server is configured to be offered (`roots:`); none for a type without.
    roots: Callable[[Any], tuple[RootConfig, ...]] = lambda settings: ()


# Every module of tools/kinds/ is imported when a tooling type is first asked for (importing
# them here would form a cycle: they make sources with the tool layer, which plans with this
# module). A new tooling type is one module there that registers its descriptor.
TOOLING_TYPES: Registry[ToolingType] = Registry("tooling type", package="devall_cli.tools.kinds")

ENTRY_KEYS = KeySpec(known=frozenset({"type", "prefix", "config"}))
_PREFIX = re.compile(r"[A-Za-z0-9_-]+")
DUPLICATE_TOOL_MESSAGE = (
    "Duplicate tool name '{name}' detected. "
    "Please use a unique 'prefix' in your tooling configuration."
)


def parse_tooling(ck: Checker, raw: Any, path: KeyPath) -> tuple[ToolingConfig, ...]:
    """An agent's `tooling`: a list of entries, or a single mapping (ChatDev's documented form)."""
    if raw is None or raw is UNRESOLVED:
        return ()
    if isinstance(raw, dict):
        entries = [(raw, path)]
    elif isinstance(raw, list):
        entries = [(item, (*path, index)) for index, item in enumerate(raw)]
    else:
        ck.error(path, f"tooling must be a list of tooling entries, got {describe(raw)}")
        return ()
    parsed: list[tuple[KeyPath, ToolingConfig]] = []
    for item, where in entries:
        entry = parse_tooling_entry(ck, item, where)
        if entry is not None:
            parsed.append((where, entry))
    _check_duplicates(ck, parsed)
    return tuple(entry for _, entry in parsed)


def parse_tooling_entry(ck: Checker, raw: Any, path: KeyPath) -> ToolingConfig | None:
    """One `{type, prefix, config}` entry; an unknown key in it is an error."""
    with ck.strict_keys():
        return _parse_tooling_entry(ck, raw, path)


def _parse_tooling_entry(ck: Checker, raw: Any, path: KeyPath) -> ToolingConfig | None:
    entry = get_mapping(ck, raw, path, "a tooling entry")
    if entry is None:
        return None
    check_keys(ck, entry, path, ENTRY_KEYS)
    type_name = opt_str(ck, entry, "type", path, required=True)
    prefix = _prefix(ck, entry, path)
    if type_name is None:
        return None
    tooling_type = _lookup_type(ck, type_name, entry, path)
    if tooling_type is None:
        return None
    config_path = (*path, "config")
    if entry.get("config") is None and "config" not in entry:
        ck.error(config_path, f"config is required for tooling type '{type_name}'")
        return None
    config = get_mapping(ck, entry.get("config") or {}, config_path, "config")
    if config is None:
        return None
    settings = tooling_type.parse(ck, config, config_path)
    if settings is None:
        return None
    return ToolingConfig(type=type_name, config=settings, prefix=prefix, path=format_path(path))


def _prefix(ck: Checker, entry: Mapping[str, Any], path: KeyPath) -> str | None:
    prefix = opt_str(ck, entry, "prefix", path)
    if not prefix:  # absent, null or '': no prefix, as in ChatDev
        return None
    if not _PREFIX.fullmatch(prefix):
        ck.error(
            (*path, "prefix"),
            f"prefix may only use letters, digits, '_' and '-', got {prefix!r}",
        )
        return None
    return prefix


def _lookup_type(
    ck: Checker, type_name: str, entry: Mapping[str, Any], path: KeyPath
) -> ToolingType | None:
    registry = TOOLING_TYPES.all()
    if type_name in registry:
        return registry[type_name]
    here = (*path, "type")
    if type_name == "mcp":
        ck.error(here, _legacy_mcp_message(entry.get("config")))
        return None
    known = ", ".join(sorted(registry))
    message = f"unknown tooling type '{type_name}' (known types: {known})"
    guess = suggest(type_name, sorted(registry))
    ck.error(here, f"{message}; did you mean '{guess}'?" if guess else message)
    return None


def _legacy_mcp_message(config: Any) -> str:
    """How to migrate the retired `type: mcp`, tailored to what the entry's config holds."""
    base = "tooling type 'mcp' is no longer supported"
    keys = set(config) if isinstance(config, dict) else set()
    if "server" in keys or "url" in keys:
        return f"{base}: use 'type: mcp_remote' with 'server: <http(s) URL>' for an HTTP server"
    if "command" in keys:
        return f"{base}: use 'type: mcp_local' with 'command' and 'args' to start a local server"
    return (
        f"{base}: use 'type: mcp_remote' (config: server: <http(s) URL>) for an HTTP server, "
        "or 'type: mcp_local' (config: command, args) for a local program"
    )


def _check_duplicates(ck: Checker, entries: list[tuple[KeyPath, ToolingConfig]]) -> None:
    """Report final tool names that two of a node's tooling entries would both offer.

    Only names known before any server starts (function tools) are checked here; MCP tool
    names are known at run time and checked there.
    """
    seen: set[str] = set()
    for path, entry in entries:
        for name in ck.static_tool_names.get(path, []):
            final = entry.final_name(name)
            if final in seen:
                where = (*path, "prefix") if entry.prefix else path
                ck.error(where, DUPLICATE_TOOL_MESSAGE.format(name=final))
            seen.add(final)
