"""`devall schema`: a JSON Schema of the workflow format, built from what the loader accepts.

The keys of every mapping come from the loader's own KeySpecs and from the descriptors of
every registered kind (node types, providers, tooling types, conditions, processors, memory
stores, thinking), so a key the loader learns is a key the schema offers. This module adds only
where the blocks nest and which names a `type:` may take. Where an unknown key is an error for
the loader (inside a node, a tooling entry) the schema forbids other keys; elsewhere, where the
loader only warns, it allows them. Scalar values are not typed: `${NAME}` placeholders may stand
for any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from devall_cli.config.schema import KeySpec

Schema = dict[str, Any]
ANY: Schema = {}


def accepted_keys(spec: KeySpec) -> set[str]:
    """Every key the loader takes without an 'unknown key' issue."""
    return set(spec.known | spec.ignored) | set(spec.noted) | set(spec.unsupported)


def keys_object(
    spec: KeySpec,
    *,
    strict: bool,
    shapes: Mapping[str, Schema] | None = None,
    required: Iterable[str] = (),
) -> Schema:
    """An object with the keys of `spec`; `shapes` describe the values of some of them."""
    shapes = shapes or {}
    keys = accepted_keys(spec)
    strays = set(shapes) - keys
    if strays:
        raise ValueError(f"shapes for keys the loader does not accept: {sorted(strays)}")
    schema: Schema = {
        "type": ["object", "null"],  # null: as if the key were absent
        "properties": {key: shapes.get(key, ANY) for key in sorted(keys)},
        "additionalProperties": not strict,
    }
    needed = sorted(required)
    if needed:
        schema["required"] = needed
    return schema


def array_of(item: Schema) -> Schema:
    """A list of `item`."""
    return {"type": ["array", "null"], "items": item}


def one_or_many(item: Schema) -> Schema:
    """One `item`, or a list of them."""
    return {"anyOf": [item, array_of(item)]}


def typed_block(
    kinds: Mapping[str, Any],
    config_of: Callable[[Any], Schema],
    spec: KeySpec,
    *,
    strict: bool,
    extra: Mapping[str, Schema] | None = None,
) -> Schema:
    """`{type: <a kind>, config: {...}}`: the config's keys follow the chosen type."""
    shapes = {"type": {"enum": sorted(kinds)}, **(extra or {})}
    schema = keys_object(spec, strict=strict, shapes=shapes, required=["type"])
    schema["allOf"] = [
        {
            "if": {"properties": {"type": {"const": name}}, "required": ["type"]},
            "then": {"properties": {"config": config_of(kind)}},
        }
        for name, kind in sorted(kinds.items())
    ]
    return schema


def ref(name: str) -> Schema:
    """A reference to one of the schema's definitions."""
    return {"$ref": f"#/$defs/{name}"}


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
    version: Schema = {"type": ["string", "number"]}
    return {"version": version, "vars": {"type": ["object", "null"]}, "graph": ref("graph")}


def _graph() -> Schema:
    from devall_cli.memory.base import MEMORY_STORES
    from devall_cli.memory.config import _STORE_KEYS
    from devall_cli.workflow.graph import _GRAPH_KEYS

    names = one_or_many({"type": "string"})
    stores = typed_block(
        MEMORY_STORES.all(),
        lambda kind: keys_object(kind.keys, strict=False, shapes=_memory_shapes(kind.keys)),
        _STORE_KEYS,
        strict=False,
    )
    shapes = {
        "nodes": array_of(ref("node")),
        "edges": array_of(ref("edge")),
        "start": names,
        "end": names,
        "vars": {"type": ["object", "null"]},
        "memory": array_of(stores),
    }
    return keys_object(_GRAPH_KEYS, strict=False, shapes=shapes)


def _memory_shapes(spec: KeySpec) -> dict[str, Schema]:
    from devall_cli.memory.config import _EMBEDDING_KEYS, _EMBEDDING_PARAMS
    from devall_cli.memory.file import _SOURCE_KEYS

    params = keys_object(_EMBEDDING_PARAMS, strict=False)
    embedding = keys_object(_EMBEDDING_KEYS, strict=False, shapes={"params": params})
    shapes = {
        "embedding": embedding,
        "file_sources": array_of(keys_object(_SOURCE_KEYS, strict=False)),
    }
    return {key: shape for key, shape in shapes.items() if key in accepted_keys(spec)}


def _node() -> Schema:
    from devall_cli.nodes import NODE_TYPES
    from devall_cli.workflow.node_entry import _NODE_KEYS

    return typed_block(
        NODE_TYPES.all(),
        lambda kind: keys_object(kind.keys, strict=True, shapes=_node_config_shapes(kind.name)),
        _NODE_KEYS,
        strict=True,
        extra={"id": {"type": "string"}},
    ) | {"required": ["id", "type"]}


def _node_config_shapes(node_type: str) -> dict[str, Schema]:
    if node_type == "agent":
        return _agent_shapes()
    if node_type == "subgraph":
        return _subgraph_shapes()
    return {}


def _agent_shapes() -> dict[str, Schema]:
    from devall_cli.memory.config import _REF_KEYS
    from devall_cli.nodes.agent import INPUT_MODES
    from devall_cli.providers.registry import PROVIDERS
    from devall_cli.providers.scripted import _CALL_KEYS, _TURN_KEYS
    from devall_cli.skills.config import _ALLOW_KEYS, _SKILLS_KEYS
    from devall_cli.thinking.base import _THINKING_KEYS, THINKING_TYPES

    call = keys_object(_CALL_KEYS, strict=True)
    turn = keys_object(_TURN_KEYS, strict=True, shapes={"tool_calls": array_of(call)})
    text_turn: Schema = {"type": "string"}  # a turn that only answers
    allow = array_of(keys_object(_ALLOW_KEYS, strict=True))
    return {
        "provider": {"enum": [*PROVIDERS.names(), None]},
        "input_mode": {"enum": list(INPUT_MODES)},
        "tooling": array_of(ref("tooling_entry")),
        "params": {"type": "object"},
        "thinking": typed_block(
            THINKING_TYPES.all(),
            lambda kind: keys_object(kind.keys, strict=True),
            _THINKING_KEYS,
            strict=True,
        ),
        "memories": array_of(keys_object(_REF_KEYS, strict=True)),
        "skills": keys_object(_SKILLS_KEYS, strict=True, shapes={"allow": allow}),
        "script": array_of({"anyOf": [text_turn, turn]}),
    }


def _subgraph_shapes() -> dict[str, Schema]:
    from devall_cli.nodes.subgraph import _FILE_KEYS, SOURCES

    file_config = keys_object(_FILE_KEYS, strict=True)
    return {
        "type": {"enum": list(SOURCES)},
        "config": {
            "if": {"required": ["path"]},
            "then": file_config,
            "else": ref("graph"),  # type: config, the subgraph's own graph
        },
    }


def _tooling_entry() -> Schema:
    from devall_cli.tools.kinds.builtin import _FUNCTION_REF_KEYS
    from devall_cli.tools.kinds.registry import _ENTRY_KEYS, tooling_types

    function_ref = keys_object(_FUNCTION_REF_KEYS, strict=True)

    from devall_cli.tools.kinds.client_settings import _ROOT_KEYS
    from devall_cli.tools.kinds.oauth_settings import _KEYS as _AUTH_KEYS

    nested = {
        "tools": array_of(function_ref),
        "auth": keys_object(_AUTH_KEYS, strict=True),
        "roots": array_of({"anyOf": [{"type": "string"}, keys_object(_ROOT_KEYS, strict=True)]}),
    }

    def config_of(kind: Any) -> Schema:
        shapes = {key: shape for key, shape in nested.items() if key in kind.keys.known}
        return keys_object(kind.keys, strict=True, shapes=shapes)

    return typed_block(tooling_types(), config_of, _ENTRY_KEYS, strict=True)


def _edge() -> Schema:
    from devall_cli.edges import CONDITION_TYPES, PROCESSOR_TYPES
    from devall_cli.workflow.graph import _EDGE_KEYS, _TYPED_KEYS

    def config_of(kind: Any) -> Schema:
        return keys_object(kind.keys, strict=False)

    condition = typed_block(CONDITION_TYPES.all(), config_of, _TYPED_KEYS, strict=False)
    shapes: dict[str, Schema] = {
        "from": {"type": "string"},
        "to": {"type": "string"},
        "condition": {"anyOf": [{"type": ["boolean", "string", "null"]}, condition]},
        "process": typed_block(PROCESSOR_TYPES.all(), config_of, _TYPED_KEYS, strict=False),
        "dynamic": _dynamic(),
    }
    return keys_object(_EDGE_KEYS, strict=False, shapes=shapes, required=["from", "to"])


def _dynamic() -> Schema:
    from devall_cli.config.dynamic import (
        _DYNAMIC_KEYS,
        _JSON_PATH_KEYS,
        _MODE_KEYS,
        _REGEX_KEYS,
        _SPLIT_KEYS,
    )

    split_configs: dict[str, Schema] = {
        "message": {"type": ["object", "null"]},
        "regex": keys_object(_REGEX_KEYS, strict=False),
        "json_path": keys_object(_JSON_PATH_KEYS, strict=False),
    }
    split = typed_block(split_configs, lambda schema: schema, _SPLIT_KEYS, strict=False)
    del split["required"]  # no type: one unit per message
    modes = {mode: keys_object(spec, strict=False) for mode, spec in _MODE_KEYS.items()}
    return typed_block(
        modes, lambda schema: schema, _DYNAMIC_KEYS, strict=False, extra={"split": split}
    )
