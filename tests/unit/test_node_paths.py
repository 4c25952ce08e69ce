"""Run-time node paths: units of dynamic nodes, their declared node, and where result.json puts
them; the tool layer gives a unit its node's tools."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devall_cli.node_paths import declared_path, unit_path
from devall_cli.tools.manager import ToolManager
from devall_cli.trace.recorder import NodeRecord, RunResult
from devall_cli.trace.result import ordered_nodes
from devall_cli.workflow.loader import load_workflow


@pytest.mark.parametrize(
    ("path", "declared"),
    [
        ("writer", "writer"),
        ("writer#2", "writer"),
        ("writer#1-3", "writer"),
        ("team#3/critic", "team/critic"),
        ("team#1-2/critic#4", "team/critic"),
        ("step#1", "step#1"),  # a node whose id holds a '#' is itself
        ("step#x", "step#x"),
    ],
)
def test_a_units_path_stands_for_its_declared_node(path: str, declared: str) -> None:
    assert declared_path(path, {"writer", "team/critic", "step#1"}) == declared


def test_a_unit_path_is_the_node_path_and_the_label() -> None:
    assert unit_path("team/writer", "1-2") == "team/writer#1-2"


def test_result_json_lists_the_units_of_a_node_right_after_it() -> None:
    records = ("a", "b", "a#1", "b#1-1", "a#2", "b/inner", "b#1-1/inner", "x")
    result = RunResult("r", "w", "ok", nodes=tuple(NodeRecord(n, status="ok") for n in records))
    ordered = [r.node_id for r in ordered_nodes(result, ["a", "b", "b/inner", "c"])]
    assert ordered == ["a", "a#1", "a#2", "b", "b#1-1", "b/inner", "b#1-1/inner", "c", "x"]


async def test_every_unit_of_a_node_is_offered_and_can_call_the_nodes_tools(
    tmp_path: Path,
) -> None:
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "text.py").write_text(
        'def shout(text: str) -> str:\n    """Upper-case the text."""\n    return text.upper()\n'
    )
    path = tmp_path / "wf.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            graph:
              start: [src]
              nodes:
                - {id: src, type: literal, config: {content: "a"}}
                - id: a
                  type: agent
                  config:
                    provider: scripted
                    script: [{content: done}]
                    tooling: [{type: function, config: {tools: [{name: shout}]}}]
              edges:
                - {from: src, to: a, dynamic: {type: map}}
            """
        )
    )
    async with ToolManager(load_workflow(path, environ={})) as manager:
        assert [s.name for s in await manager.specs_for("a#2")] == ["shout"]
        assert [s.name for s in await manager.specs_for("src#1")] == []
        result = await manager.call("a#1-3", "shout", {"text": "hi"})
    assert not result.is_error and result.blocks[0].text == "HI"  # type: ignore[union-attr]
