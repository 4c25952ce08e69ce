"""`validate` finds every problem of a file in one pass: an error never hides another."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devall_cli.workflow.loader import validate_workflow


def errors(tmp_path: Path, text: str) -> list[tuple[str, str]]:
    path = tmp_path / "flow.yaml"
    path.write_text(textwrap.dedent(text))
    workflow, issues = validate_workflow(path, environ={})
    assert workflow is None
    return [(i.path, i.message) for i in issues if i.severity == "error"]


def test_every_cycle_is_checked_also_through_edges_that_have_errors(tmp_path: Path) -> None:
    found = errors(
        tmp_path,
        """\
        graph:
          start: [a, b, c, d]
          nodes:
            - {id: a, type: passthrough}
            - {id: b, type: passthrough}
            - {id: c, type: passthrough}
            - {id: d, type: passthrough}
          edges:
            - {from: a, to: b}
            - {from: b, to: a, condition: no_such_function}
            - {from: c, to: d, process: {type: regex_extract, config: {pattern: "("}}}
            - {from: d, to: c}
        """,
    )
    assert [path for path, _ in found] == [
        "graph.start",
        "graph.start",
        "graph.edges[1].condition",
        "graph.edges[2].process.config.pattern",
    ]
    assert "start names a, b, which are in one cycle" in found[0][1]
    assert "start names c, d, which are in one cycle" in found[1][1]


def test_every_bad_entry_of_a_tools_list_is_reported(tmp_path: Path) -> None:
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "tools.py").write_text("def ok(x: int) -> int:\n    return x\n")
    found = errors(
        tmp_path,
        """\
        graph:
          start: a
          nodes:
            - id: a
              type: agent
              config:
                provider: scripted
                script: [hi]
                tooling:
                  - type: function
                    config:
                      tools: [{name: one}, {name: ok}, {}, {name: two}, {name: "tools:three"}]
        """,
    )
    where = "graph.nodes[0].config.tooling[0].config.tools"
    assert [path for path, _ in found] == [
        f"{where}[0].name",
        f"{where}[2].name",
        f"{where}[3].name",
        f"{where}[4].name",
    ]
