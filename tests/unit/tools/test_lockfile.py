"""The lockfile's classifier on schema pairs, its entries, and lockfiles that are not ones."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from devall_cli.errors import ConfigError
from devall_cli.tools.base import RawTool, ServerInfo
from devall_cli.tools.lock_diff import compare_surfaces, prompt_changes, tool_entry_changes
from devall_cli.tools.lockfile import lock_text, read_lock, server_entry
from devall_cli.tools.schema_diff import schema_findings


def obj(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


STRING = {"type": "string"}


@pytest.mark.parametrize(
    ("before", "after", "path", "breaking"),
    [
        (obj(q=STRING), obj(("n",), q=STRING, n=STRING), "s.properties.n", True),
        (obj(q=STRING), obj(q=STRING, n=STRING), "s.properties.n", False),
        (obj(q=STRING, n=STRING), obj(q=STRING), "s.properties.n", True),
        (obj(q=STRING), obj(("q",), q=STRING), "s.required", True),
        (obj(("q",), q=STRING), obj(q=STRING), "s.required", False),
        (obj(q={"type": ["string", "null"]}), obj(q=STRING), "s.properties.q.type", True),
        (obj(q=STRING), obj(q={"type": ["string", "null"]}), "s.properties.q.type", False),
        (obj(q=STRING), obj(q={"type": "integer"}), "s.properties.q.type", True),
        (obj(q={"type": "number"}), obj(q={"type": "integer"}), "s.properties.q.type", True),
        (obj(q={"type": "integer"}), obj(q={"type": "number"}), "s.properties.q.type", False),
        (
            obj(q={"anyOf": [STRING, {"type": "null"}]}),
            obj(q=STRING),
            "s.properties.q.type",
            True,
        ),
        (obj(q={"enum": ["a", "b"]}), obj(q={"enum": ["a"]}), "s.properties.q.enum", True),
        (obj(q={"enum": ["a"]}), obj(q={"enum": ["a", "b"]}), "s.properties.q.enum", False),
        (obj(q={"maxLength": 9}), obj(q={"maxLength": 3}), "s.properties.q.maxLength", True),
        (obj(q={"minimum": 3}), obj(q={"minimum": 1}), "s.properties.q.minimum", False),
        (obj(q={"pattern": "x"}), obj(q={}), "s.properties.q.pattern", False),
        (obj(q={}), obj(q={"pattern": "x"}), "s.properties.q.pattern", True),
        (obj(q=STRING), obj(q={**STRING, "title": "Q"}), "s.properties.q.title", False),
        ({**obj(), "additionalProperties": False}, obj(), "s.additionalProperties", False),
        (obj(), {**obj(), "additionalProperties": False}, "s.additionalProperties", True),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": obj(("x",))}}},
            {"type": "object", "properties": {"a": {"type": "array", "items": obj(("x", "y"))}}},
            "s.properties.a.items.required",
            True,
        ),
    ],
)
def test_input_schema_changes_are_classified(
    before: dict[str, Any], after: dict[str, Any], path: str, breaking: bool
) -> None:
    found = schema_findings(before, after, "s")
    assert [(f.path, f.breaking) for f in found] == [(path, breaking)], found


def test_output_schemas_break_the_other_way() -> None:
    def breaks(before: dict[str, Any], after: dict[str, Any]) -> list[bool]:
        return [f.breaking for f in schema_findings(before, after, "o", direction="output")]

    assert breaks(obj(q=STRING), obj(q=STRING, n=STRING)) == [False]  # a new field to read
    assert breaks(obj(q=STRING, n=STRING), obj(q=STRING)) == [True]  # a field gone
    assert breaks(obj(("q",), q=STRING), obj(q=STRING)) == [True]  # may be missing now
    assert breaks(obj(q=STRING), obj(q={"type": ["string", "null"]})) == [True]  # widened
    assert breaks(obj(q={"type": ["string", "null"]}), obj(q=STRING)) == [False]


def tool(**fields: Any) -> dict[str, Any]:
    entry = {"title": None, "description": "D.", "description_sha256": "d", "task_support": None,
             "input_schema": obj(), "output_schema": None, "annotations": None}
    return {**entry, **fields}


@pytest.mark.parametrize(
    ("before", "after", "breaking"),
    [
        ({"readOnlyHint": True}, None, True),
        ({"readOnlyHint": True}, {"readOnlyHint": False}, True),
        ({"destructiveHint": False}, {"destructiveHint": True}, True),
        ({"destructiveHint": False}, {}, True),
        (None, {"readOnlyHint": True}, False),
        ({"destructiveHint": True}, {"destructiveHint": False}, False),
        ({"idempotentHint": True}, {"idempotentHint": False}, False),
    ],
)
def test_annotations_break_only_toward_destructive(before: Any, after: Any, breaking: bool) -> None:
    changes = tool_entry_changes("t", tool(annotations=before), tool(annotations=after))
    assert [(c.kind, c.breaking) for c in changes] == [("annotations", breaking)]


def test_titles_descriptions_and_task_support_are_classified() -> None:
    changes = tool_entry_changes(
        "t", tool(), tool(title="T", description="E.", description_sha256="e",
                         task_support="required")
    )
    assert [(c.kind, c.breaking) for c in changes] == [
        ("title", False), ("description", False), ("task_support", True)
    ]


def server(**tools: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "mcp_local", "protocol_version": "1", "server": {"name": "s"}, "tools": tools}


def test_tools_removed_added_and_renamed_looking() -> None:
    locked = {"s": server(a=tool(), old=tool(input_schema=obj(("x",), x=STRING))),
              "gone": server()}
    live = {"s": server(b=tool(description_sha256="b"),
                        new=tool(input_schema=obj(("x",), x=STRING))), "fresh": server()}
    drift = compare_surfaces("devall.lock", locked, live)
    statuses = {s.id: s.status for s in drift.servers}
    assert statuses == {"s": "changed", "gone": "removed", "fresh": "added"}
    found = [(c.kind, c.tool, c.after, c.breaking) for s in drift.servers for c in s.changes]
    assert ("tool_renamed", "old", "new", True) in found
    assert ("tool_removed", "a", None, True) in found
    assert ("tool_added", "b", "b", False) in found
    assert ("server_removed", None, None, True) in found
    assert ("server_added", None, None, False) in found
    assert (drift.breaking, drift.compatible) == (3, 2)
    assert compare_surfaces("x", locked, locked).fails(strict=True) is False


def test_prompts_removed_or_newly_required_arguments_break() -> None:
    def prompt(*arguments: tuple[str, bool]) -> dict[str, Any]:
        listed = [{"name": name, "required": required} for name, required in arguments]
        return {"description_sha256": "p", "arguments": listed}

    changes = prompt_changes(
        {"p": prompt(("a", True), ("b", False)), "gone": prompt()},
        {"p": prompt(("a", True), ("b", True), ("c", False)), "new": prompt()},
    )
    assert [(c.path, c.breaking) for c in changes] == [
        ('prompts["gone"]', True),
        ('prompts["new"]', False),
        ('prompts["p"].arguments.b.required', True),
        ('prompts["p"].arguments.c', False),
    ]


def test_an_entry_keeps_the_first_line_and_the_hash_of_the_masked_description() -> None:
    plan: Any = SimpleNamespace(kind="mcp_local", target="cmd")
    listed = RawTool("t", "Use key s3cr3t.\nMore.", {"type": "object"}, task_support="optional")
    entry = server_entry(
        plan,
        ServerInfo(protocol_version="2025-06-18", server_name="n"),
        [listed],
        lambda text: text.replace("s3cr3t", "***"),
        version="1",
        listings={"prompts": [{"name": "p", "arguments": [{"name": "a", "required": True}]}]},
    )
    assert entry["tools"]["t"]["description"] == "Use key ***."
    assert "s3cr3t" not in lock_text(entry)
    assert entry["prompts"] == {
        "p": {"description": "", "description_sha256": entry["prompts"]["p"]["description_sha256"],
              "arguments": [{"name": "a", "required": True}]}
    }


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('{\n  "version": 1,\n  oops\n}', "devall.lock:3:3: not valid JSON: "),
        ('{"version": 2, "servers": {}}', "devall.lock: version: must be 1"),
        ('{"version": 1, "servers": {"s": {"tools": []}}}', "devall.lock: servers.s.tools: must"),
        ('{"version": 1, "servers": {"s": {"tools": {"t": {"input_schema": 1}}}}}',
         "devall.lock: servers.s.tools.t.input_schema: must be an object or null"),
    ],
)
def test_a_lockfile_that_is_not_one_is_a_located_config_error(
    text: str, shown: str
) -> None:
    Path("devall.lock").write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_lock(Path("devall.lock"))
    assert caught.value.issues[0].headline().startswith(shown)
