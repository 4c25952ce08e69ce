"""Graph nodes: the common keys, and the node type's own `config` (see `devall_cli.nodes`)."""

from __future__ import annotations

from typing import Any

from devall_cli.config.model import NodeConfig
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    get_mapping,
    opt_bool,
    opt_int,
    opt_str,
)
from devall_cli.config.yaml_source import KeyPath, format_path
from devall_cli.nodes import NODE_TYPES, NodeType

NODE_KEYS = KeySpec(
    known=frozenset({"id", "type", "config", "description", "context_window", "log_output"}),
    # ChatDev's undocumented pre-seeded queues, and `dynamic`, which ChatDev reads on edges only
    ignored=frozenset({"input", "output", "dynamic"}),
)


def parse_node(ck: Checker, raw: Any, path: KeyPath) -> NodeConfig | None:
    """One node: `id`, `type`, `config`, `description`, `context_window`, `log_output`.

    An unknown key in a node or anywhere in its `config` is an error (a typo such as `tolling`
    would silently drop the setting); a subgraph's own graph is checked as any graph.
    """
    with ck.strict_keys():
        return _parse_node(ck, raw, path)


def _parse_node(ck: Checker, raw: Any, path: KeyPath) -> NodeConfig | None:
    node = get_mapping(ck, raw, path, "a node")
    if node is None:
        return None
    check_keys(ck, node, path, NODE_KEYS)
    if node.get("dynamic") not in (None, UNRESOLVED):
        ck.warning(
            (*path, "dynamic"),
            "dynamic on a node has no effect (ignored); put it on the edges into the node",
            at_key=True,
        )
    node_id = opt_str(ck, node, "id", path, required=True)
    type_name = opt_str(ck, node, "type", path, required=True)
    description = opt_str(ck, node, "description", path)
    context_window = opt_int(ck, node, "context_window", path, 0, minimum=-1)
    log_output = opt_bool(ck, node, "log_output", path, True)
    node_type = _node_type(ck, type_name, path) if type_name is not None else None
    if node_type is None:
        return None
    settings = _settings(ck, node, node_type, (*path, "config"))
    if node_id is None or settings is None:
        return None
    return NodeConfig(
        id=node_id,
        type=node_type.name,
        config=settings,
        description=description,
        context_window=context_window,
        log_output=log_output,
        path=format_path(path),
    )


def _node_type(ck: Checker, name: str, path: KeyPath) -> NodeType | None:
    node_type = NODE_TYPES.get(name)
    if node_type is None:
        ck.error((*path, "type"), NODE_TYPES.unknown_message(name))
    return node_type


def _settings(ck: Checker, node: dict[str, Any], node_type: NodeType, path: KeyPath) -> Any:
    raw = node.get("config")
    if raw is None:
        if node_type.config_required:
            if "config" not in node:
                ck.error(path, f"config is required for a node of type '{node_type.name}'")
            else:
                ck.error(path, "config must be a mapping, got nothing (null)", at_key=True)
            return None
        raw = {}
    config = get_mapping(ck, raw, path, "config")
    if config is None:
        return None
    return node_type.parse(ck, config, path)
