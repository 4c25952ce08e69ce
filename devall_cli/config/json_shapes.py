"""JSON Schema fragments for `devall schema`: the pieces every kind builds its shapes from.

A kind's `shapes` hook returns, for some keys of its `config`, the schema of their values
(nested blocks); the workflow assembler (workflow/json_schema.py) puts the fragments together.
Scalar values are not typed: `${NAME}` placeholders may stand for any of them.
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




def no_shapes() -> dict[str, Schema]:
    """The `shapes` of a kind whose config holds no nested block."""
    return {}
