"""A tool's JSON Schema as Gemini's function `parameters` accept it (an OpenAPI 3.0 subset).

Gemini refuses a request whose schema holds a key it does not know (`$defs`, `$ref`,
`additionalProperties`, `const`, `exclusiveMinimum`...), a list as `type`, an enum of non-strings
or an object type without properties. So:

- `$ref` to `#/$defs/...` or `#/definitions/...` is replaced by what it points to (a recursive
  reference, after 8 levels, by a schema without type);
- `type: [T, "null"]` and `anyOf`/`oneOf` with a `{"type": "null"}` branch become `nullable`;
  an `anyOf` left with one branch is that branch; `oneOf` becomes `anyOf`; `allOf` is merged;
- `const` becomes a one-value `enum`; an enum of other values than strings is dropped and its
  values are named in the description;
- `title` becomes the description when there is none;
- `format` is kept only where Gemini accepts it; an object without properties or an array
  without items loses its type (a free-form value); a tool without parameters sends none;
- every other key Gemini does not know is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devall_cli.providers.base import dump_json

_KEPT = frozenset(
    {
        "description",
        "nullable",
        "default",
        "example",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
    }
)
_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
_FORMATS = {
    "STRING": frozenset({"enum", "date-time"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}
_MAX_REF_DEPTH = 8


def function_parameters(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The `parameters` of a function declaration, or None for a tool without parameters."""
    if not schema:
        return None
    definitions = _definitions(schema)
    converted = _Converter(definitions).convert(schema, 0)
    if not converted.get("properties"):
        return None
    converted["type"] = "OBJECT"
    return converted


def _definitions(schema: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        defs = schema.get(key)
        if isinstance(defs, Mapping):
            found.update({f"#/{key}/{name}": value for name, value in defs.items()})
    return found


class _Converter:
    """Converts one schema tree; `definitions` are what its local `$ref`s point to."""

    def __init__(self, definitions: dict[str, Any]) -> None:
        self._definitions = definitions

    def convert(self, schema: Any, depth: int) -> dict[str, Any]:
        if not isinstance(schema, Mapping):
            return {}
        schema = self._resolve(schema, depth)
        if schema is None:
            return {}
        if "allOf" in schema:
            schema = _merge_all_of(
                schema, [self._resolve(p, depth) for p in _list(schema["allOf"])]
            )
        out: dict[str, Any] = {k: schema[k] for k in _KEPT if k in schema}
        title = schema.get("title")
        if not out.get("description") and isinstance(title, str) and title:
            out["description"] = title
        self._type(schema, out)
        self._enum(schema, out)
        self._children(schema, out, depth)
        self._alternatives(schema, out, depth)
        return self._finish(out)

    def _resolve(self, schema: Mapping[str, Any], depth: int) -> Mapping[str, Any] | None:
        seen = 0
        while isinstance(schema.get("$ref"), str):
            target = self._definitions.get(schema["$ref"])
            seen += 1
            if not isinstance(target, Mapping) or depth + seen > _MAX_REF_DEPTH:
                description = schema.get("description")
                return {"description": description} if isinstance(description, str) else None
            # Keys beside `$ref` (a description) win over those of the definition.
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return schema

    def _type(self, schema: Mapping[str, Any], out: dict[str, Any]) -> None:
        kind = schema.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if "null" in kinds:
            out["nullable"] = True
        chosen = next((k for k in kinds if isinstance(k, str) and k in _TYPES), None)
        if chosen is not None:
            out["type"] = chosen.upper()
            fmt = schema.get("format")
            if isinstance(fmt, str) and fmt in _FORMATS.get(out["type"], ()):
                out["format"] = fmt

    def _enum(self, schema: Mapping[str, Any], out: dict[str, Any]) -> None:
        values = schema.get("enum")
        if "const" in schema:
            values = [schema["const"]]
        if not isinstance(values, list) or not values:
            return
        if all(isinstance(v, str) for v in values):
            out["enum"] = list(values)
            out.setdefault("type", "STRING")
            return
        shown = ", ".join(dump_json(v) for v in values)
        note = f"One of: {shown}."
        out["description"] = f"{out['description']} {note}" if out.get("description") else note

    def _children(self, schema: Mapping[str, Any], out: dict[str, Any], depth: int) -> None:
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and properties:
            out["properties"] = {
                str(name): self.convert(value, depth + 1) for name, value in properties.items()
            }
            required = schema.get("required")
            if isinstance(required, list):
                names = [r for r in required if isinstance(r, str) and r in out["properties"]]
                if names:
                    out["required"] = names
        items = schema.get("items")
        if isinstance(items, list):  # tuple validation: the first item stands for all
            items = items[0] if items else None
        if isinstance(items, Mapping):
            out["items"] = self.convert(items, depth + 1)
            out.setdefault("type", "ARRAY")

    def _alternatives(self, schema: Mapping[str, Any], out: dict[str, Any], depth: int) -> None:
        branches = schema.get("anyOf") or schema.get("oneOf")
        if not isinstance(branches, list):
            return
        kept = []
        for branch in branches:
            if isinstance(branch, Mapping) and branch.get("type") == "null" and len(branch) == 1:
                out["nullable"] = True
                continue
            kept.append(self.convert(branch, depth + 1))
        if len(kept) == 1:
            for key, value in kept[0].items():
                out.setdefault(key, value)
        elif kept:
            out["anyOf"] = kept

    @staticmethod
    def _finish(out: dict[str, Any]) -> dict[str, Any]:
        if out.get("type") == "OBJECT" and not out.get("properties"):
            del out["type"]  # Gemini refuses an OBJECT without properties: a free-form value
        if out.get("type") == "ARRAY" and "items" not in out:
            del out["type"]  # Gemini wants the items of an array: a list of anything
        return out


def _list(value: Any) -> list[Any]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _merge_all_of(
    schema: Mapping[str, Any], parts: list[Mapping[str, Any] | None]
) -> dict[str, Any]:
    """`allOf` merged into the schema: properties and required lists joined, first value wins."""
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in parts:
        if part is None:
            continue
        for key, value in part.items():
            if key == "properties" and isinstance(value, Mapping):
                merged["properties"] = {**value, **merged.get("properties", {})}
            elif key == "required" and isinstance(value, list):
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return merged
