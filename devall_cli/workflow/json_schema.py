"""`devall schema`: a JSON Schema of the workflow format, built from what the loader accepts.

The keys of every mapping come from the loader's own KeySpecs and from the descriptors of
every registered kind (node types, providers, tooling types, conditions, processors, memory
stores, thinking), so a key the loader learns is a key the schema offers; each kind's `shapes`
hook describes its own nested blocks. This module adds only where the graph's blocks nest and
which names a `type:` may take. Where an unknown key is an error for
the loader (inside a node, a tooling entry) the schema forbids other keys; elsewhere, where the
loader only warns, it allows them. Scalar values are not typed: `${NAME}` placeholders may stand
for any of them.
"""

from __future__ import annotations

from typing import Any

from devall_cli.config.dynamic import dynamic_shape
from devall_cli.config.json_shapes import (
    Schema,
    array_of,
    keys_object,
    one_or_many,
    ref,
    typed_block,
)


def workflow_schema() -> Schema:
    """The JSON Schema (draft 2020-12) of a workflow file."""
    from devall_cli.workflow.includes import TOP_KEYS

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "devall workflow (ChatDev 2.0 / DevAll format)",
        **keys_object(TOP_KEYS, strict=False, shapes=_top_shapes(), required=["graph"]),
        "type": "object",
        "$defs": {
            "graph": _graph(),
            "node": _node(),
            "edge": _edge(),
            "tooling_entry": _tooling_entry(),
        },
    }


def _top_shapes() -> dict[str, Schema]:
    from devall_cli.config.pricing import PRICE_KEYS

    version: Schema = {"type": ["string", "number"]}
    number: Schema = {"type": "number", "minimum": 0}
    shapes = dict.fromkeys(PRICE_KEYS.known, number)
    price = keys_object(PRICE_KEYS, strict=True, shapes=shapes, required=["input", "output"])
    pricing: Schema = {"type": ["object", "null"], "additionalProperties": price}
    return {
        "version": version,
        "vars": {"type": ["object", "null"]},
        "graph": ref("graph"),
        "pricing": pricing,
    }


def _config_of(*, strict: bool) -> Any:
    """A kind's `config`: its keys, and the shapes its own `shapes` hook gives."""
    return lambda kind: keys_object(kind.keys, strict=strict, shapes=kind.shapes())


def _graph() -> Schema:
    from devall_cli.config.tool_warning import warning_shape
    from devall_cli.memory.base import MEMORY_STORES
    from devall_cli.memory.config import STORE_KEYS
    from devall_cli.tools.policy_config import policy_shape
    from devall_cli.workflow.graph import GRAPH_KEYS

    names = one_or_many({"type": "string"})
    stores = typed_block(MEMORY_STORES.all(), _config_of(strict=False), STORE_KEYS, strict=False)
    shapes = {
        "nodes": array_of(ref("node")),
        "edges": array_of(ref("edge")),
        "start": names,
        "end": names,
        "vars": {"type": ["object", "null"]},
        "memory": array_of(stores),
        "tool_policy": policy_shape(),
        "tool_warning": warning_shape(),
    }
    return keys_object(GRAPH_KEYS, strict=False, shapes=shapes)


def _node() -> Schema:
    from devall_cli.nodes import NODE_TYPES
    from devall_cli.workflow.node_entry import NODE_KEYS

    return typed_block(
        NODE_TYPES.all(),
        _config_of(strict=True),
        NODE_KEYS,
        strict=True,
        extra={"id": {"type": "string"}},
    ) | {"required": ["id", "type"]}


def _tooling_entry() -> Schema:
    from devall_cli.tools.kinds.registry import ENTRY_KEYS, TOOLING_TYPES

    return typed_block(TOOLING_TYPES.all(), _config_of(strict=True), ENTRY_KEYS, strict=True)


def _edge() -> Schema:
    from devall_cli.edges import CONDITION_TYPES, PROCESSOR_TYPES
    from devall_cli.workflow.graph import EDGE_KEYS, TYPED_KEYS

    config_of = _config_of(strict=False)
    condition = typed_block(CONDITION_TYPES.all(), config_of, TYPED_KEYS, strict=False)
    shapes: dict[str, Schema] = {
        "from": {"type": "string"},
        "to": {"type": "string"},
        "condition": {"anyOf": [{"type": ["boolean", "string", "null"]}, condition]},
        "process": typed_block(PROCESSOR_TYPES.all(), config_of, TYPED_KEYS, strict=False),
        "dynamic": dynamic_shape(),
    }
    return keys_object(EDGE_KEYS, strict=False, shapes=shapes, required=["from", "to"])
