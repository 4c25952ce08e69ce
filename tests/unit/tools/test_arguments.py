"""The one argument checker: JSON Schema keywords worded one line each, and schemas it cannot
read never block a call."""

from __future__ import annotations

from typing import Any

import pytest

from devall_cli.tools.arguments import ArgumentChecker, describe_parameters


def problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """What the checker finds, with the schema's own rule for other arguments (an MCP tool's)."""
    return ArgumentChecker({"type": "object", **schema}).problems(arguments)


def prop(**schema: Any) -> dict[str, Any]:
    return {"properties": {"x": schema}}


@pytest.mark.parametrize(
    ("schema", "arguments", "expected"),
    [
        (prop(type="integer"), {"x": 1.5}, "'x' must be an integer, got 1.5"),
        (prop(type="integer"), {"x": 2.0}, None),  # 2.0 is an integer in JSON Schema
        (prop(type="number"), {"x": True}, "'x' must be a number, got true"),
        (prop(type=["string", "null"]), {"x": 3}, "'x' must be a string or null, got 3"),
        (prop(enum=["a", "b"]), {"x": "c"}, "'x' must be one of \"a\", \"b\", got \"c\""),
        (prop(const="on"), {"x": "off"}, "'x' must be \"on\", got \"off\""),
        (prop(minimum=1), {"x": 0}, "'x' must be at least 1, got 0"),
        (prop(exclusiveMaximum=10), {"x": 10}, "'x' must be less than 10, got 10"),
        (prop(minLength=2), {"x": "a"}, "'x' must be at least 2 characters long, got \"a\""),
        (prop(maxLength=1), {"x": "ab"}, "'x' must be at most 1 character long, got \"ab\""),
        (
            prop(type="array", items={"type": "integer"}),
            {"x": [1, "2"]},
            "'x[1]' must be an integer, got \"2\"",
        ),
        (
            prop(type="object", properties={"y": {"type": "boolean"}}),
            {"x": {"y": "no"}},
            "'x[\"y\"]' must be a boolean, got \"no\"",
        ),
        (
            prop(type="object", required=["y"], additionalProperties=False),
            {"x": {"z": 1}},
            "'x' lacks required key(s) 'y'; 'x' has unknown key(s) 'z'",
        ),
        (
            {"required": ["x"], **prop(type="string")},
            {},
            "missing required argument 'x' (a string)",
        ),
        (
            {"additionalProperties": False, **prop()},
            {"x": 1, "c": 2},
            "unknown argument 'c' (parameters: x)",
        ),
        ({**prop()}, {"x": 1, "c": 2}, None),  # other arguments are allowed unless refused
        (
            {"additionalProperties": False, "patternProperties": {"^opt_": {}}, **prop()},
            {"opt_a": 1},
            None,
        ),
    ],
)
def test_each_keyword_is_one_line(
    schema: dict[str, Any], arguments: dict[str, Any], expected: str | None
) -> None:
    assert "; ".join(problems(schema, arguments)) == (expected or "")


@pytest.mark.parametrize(
    "schema",
    [
        prop(type="integr"),  # an unknown type
        prop(**{"$ref": "#/$defs/missing"}),  # a $ref that leads nowhere
        prop(pattern="(unclosed"),
        prop(format="no-such-format", **{"x-vendor": {"anything": True}}),  # unknown keywords
        {"$schema": 42, **prop(type="integer")},
        {"properties": ["x"], "required": "x"},  # not even the shape of a schema
    ],
)
def test_a_schema_devall_cannot_read_never_blocks_a_call(schema: dict[str, Any]) -> None:
    assert problems(schema, {"x": "anything"}) == []


def test_the_dialect_the_schema_names_is_used() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **prop(exclusiveMinimum=0)}
    assert problems(draft7, {"x": 0}) == ["'x' must be greater than 0, got 0"]


def test_parameters_are_described_for_a_hint() -> None:
    schema = {
        "properties": {"a": {"type": "integer"}, "mode": {"enum": ["fast"]}, "any": {}},
        "required": ["a"],
    }
    assert describe_parameters(schema) == 'a* (an integer), mode (one of "fast"), any'
    assert describe_parameters({"type": "object"}) == "none"


def test_a_null_for_an_optional_parameter_that_takes_none_means_not_given() -> None:
    schema = {
        "type": "object",
        "properties": {
            "flag": {"type": "boolean"},
            "maybe": {"type": ["string", "null"]},
            "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "choice": {"enum": ["a", None]},
            "free": {},
            "needed": {"type": "integer"},
        },
        "required": ["needed"],
    }
    given = {"flag": None, "maybe": None, "either": None, "choice": None, "free": None}
    checker = ArgumentChecker(schema)
    kept = checker.unset_nulls_dropped({**given, "needed": None, "other": None})
    assert kept == {**{k: None for k in given if k != "flag"}, "needed": None, "other": None}
    assert checker.problems(kept) == ["'needed' must be an integer, got null"]
