"""Tool schemas become what Gemini's function declarations accept."""

from __future__ import annotations

from typing import Any

from devall_cli.providers.gemini_schema import function_parameters

# What Gemini's Schema object knows (an OpenAPI 3.0 subset).
GEMINI_KEYS = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "anyOf",
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
    "propertyOrdering",
}


def keys_everywhere(schema: Any) -> set[str]:
    """Every key of every schema in the tree (property names excluded)."""
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for name, value in schema.items():
        if name == "properties":
            for child in value.values():
                found |= keys_everywhere(child)
        elif name == "items":
            found |= keys_everywhere(value)
        elif name == "anyOf":
            for child in value:
                found |= keys_everywhere(child)
    return found


def test_a_pydantic_style_schema_keeps_only_what_gemini_accepts() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "args",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "city": {"type": "string", "title": "City", "format": "hostname"},
            "when": {"type": "string", "format": "date-time"},
            "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "unit": {"$ref": "#/$defs/Unit"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "level": {"type": "integer", "exclusiveMinimum": 0, "const": 3},
        },
        "required": ["city", "ghost"],
        "$defs": {"Unit": {"enum": ["c", "f"], "type": "string", "description": "unit"}},
    }

    converted = function_parameters(schema)

    assert converted is not None
    assert keys_everywhere(converted) <= GEMINI_KEYS
    assert converted["type"] == "OBJECT"
    assert converted["required"] == ["city"]
    props = converted["properties"]
    assert props["city"] == {"type": "STRING", "description": "City"}
    assert props["when"] == {"type": "STRING", "format": "date-time"}
    assert props["count"] == {"type": "INTEGER", "nullable": True, "default": None}
    assert props["unit"] == {"type": "STRING", "enum": ["c", "f"], "description": "unit"}
    assert props["tags"] == {"type": "ARRAY", "items": {"type": "STRING"}}
    assert props["level"]["type"] == "INTEGER"
    assert "One of: 3." in props["level"]["description"]


def test_type_lists_and_nested_alternatives() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": ["string", "null"]},
            "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            "nested": {
                "type": "object",
                "properties": {"x": {"type": "number"}},
                "required": ["x"],
            },
        },
    }
    props = function_parameters(schema)["properties"]  # type: ignore[index]
    assert props["name"] == {"type": "STRING", "nullable": True}
    assert props["either"] == {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]}
    assert props["nested"] == {
        "type": "OBJECT",
        "properties": {"x": {"type": "NUMBER"}},
        "required": ["x"],
    }


def test_free_form_objects_and_arrays_lose_their_type() -> None:
    schema = {
        "type": "object",
        "properties": {
            "data": {"type": "object", "description": "any JSON object"},
            "rows": {"type": "array"},
        },
    }
    props = function_parameters(schema)["properties"]  # type: ignore[index]
    assert props == {"data": {"description": "any JSON object"}, "rows": {}}


def test_a_tool_without_parameters_sends_none() -> None:
    assert function_parameters({}) is None
    assert function_parameters({"type": "object", "properties": {}}) is None
    assert function_parameters({"type": "object"}) is None


def test_recursive_references_end() -> None:
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "description": "a node",
                "properties": {"child": {"$ref": "#/$defs/Node"}, "v": {"type": "integer"}},
            }
        },
    }
    converted = function_parameters(schema)
    depth, node = 0, converted["properties"]["tree"]  # type: ignore[index]
    while "properties" in node:
        node = node["properties"]["child"]
        depth += 1
    assert 3 <= depth <= 10
    assert keys_everywhere(converted) <= GEMINI_KEYS


def test_all_of_is_merged() -> None:
    schema = {
        "type": "object",
        "properties": {
            "p": {
                "allOf": [
                    {"$ref": "#/definitions/A"},
                    {"properties": {"b": {"type": "boolean"}}, "required": ["b"]},
                ]
            }
        },
        "definitions": {"A": {"type": "object", "properties": {"a": {"type": "string"}}}},
    }
    p = function_parameters(schema)["properties"]["p"]  # type: ignore[index]
    assert p["type"] == "OBJECT"
    assert set(p["properties"]) == {"a", "b"} and p["required"] == ["b"]
