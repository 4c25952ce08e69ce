"""How a graph ends: several sinks without `end` (ChatDev refuses them) and cycles with no way out.

ChatDev's check_workflow.py wants exactly one node without outgoing edges unless `end` is named;
devall runs such graphs (answering with the first sink that produced output) and warns. A cycle
that nothing can stop runs to the iteration limit in both: devall says so at validate time.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devall_cli.errors import ConfigIssue
from devall_cli.workflow.loader import validate_workflow
from tests.helpers import invoke

CHATDEV = (
    "ChatDev refuses the file (\"graph lacks a unique natural end; specify 'end' explicitly\")"
)


def warnings_of(tmp_path: Path, graph: str) -> list[ConfigIssue]:
    path = tmp_path / "flow.yaml"
    path.write_text("graph:\n" + textwrap.indent(textwrap.dedent(graph), "  "))
    workflow, issues = validate_workflow(path, environ={}, advice=True)
    assert workflow is not None, issues
    assert all(issue.severity == "warning" for issue in issues), issues
    return issues


FAN_OUT = """\
start: a
nodes:
  - {id: a, type: passthrough}
  - {id: b, type: literal, config: {content: B}}
  - {id: c, type: literal, config: {content: C}}
edges:
  - {from: a, to: b}
  - {from: a, to: c}
"""


def test_several_sinks_without_end_are_a_warning_naming_them_and_the_answer(
    tmp_path: Path,
) -> None:
    (issue,) = warnings_of(tmp_path, FAN_OUT)
    assert issue.path == "graph" and issue.line == 2
    assert issue.message == (
        "2 nodes have no outgoing edge (b, c) and the graph names no end: devall answers with the "
        f"first of them that produced output, in node order (b when it did), while {CHATDEV}; "
        "name the answering node in `end`"
    )


@pytest.mark.parametrize(
    "graph",
    [
        FAN_OUT + "end: c\n",
        FAN_OUT + "is_majority_voting: true\n",  # a vote has no ending to choose
        FAN_OUT.replace("  - {from: a, to: c}\n", "  - {from: b, to: c}\n"),  # a chain: one sink
    ],
    ids=["end named", "majority voting", "one sink"],
)
def test_one_sink_a_named_end_or_a_vote_needs_no_warning(tmp_path: Path, graph: str) -> None:
    assert warnings_of(tmp_path, graph) == []


def test_a_graph_where_every_node_has_an_outgoing_edge_and_no_end_is_a_warning(
    tmp_path: Path,
) -> None:
    issues = warnings_of(
        tmp_path,
        """\
        start: a
        nodes:
          - {id: a, type: passthrough}
          - {id: b, type: passthrough}
        edges:
          - {from: a, to: b}
          - {from: b, to: a, condition: {type: keyword, config: {none: [stop]}}}
        """,
    )
    assert [issue.message for issue in issues] == [
        "every node has an outgoing edge and the graph names no end: the run answers nothing, "
        f"and {CHATDEV}; name the answering node in `end`"
    ]


LOOP = """\
start: a
end: [out]
nodes:
  - {id: a, type: passthrough}
  - {id: b, type: passthrough}
  - {id: out, type: passthrough}
edges:
  - {from: a, to: b}
  - {from: b, to: a}
"""
NO_WAY_OUT = (
    "the cycle a, b has no way out: no edge leaves it, every edge in it always fires and no "
    "loop_counter or loop_timer holds it back, so it ends only after 100 iterations (or at "
    "--max-steps)"
)


def test_a_cycle_no_edge_leaves_whose_edges_always_fire_is_a_warning(tmp_path: Path) -> None:
    (issue,) = warnings_of(tmp_path, LOOP)
    assert (issue.path, issue.message) == ("graph", NO_WAY_OUT)


def test_a_node_looping_on_itself_for_ever_is_a_warning(tmp_path: Path) -> None:
    issues = warnings_of(
        tmp_path,
        """\
        start: a
        end: a
        nodes:
          - {id: a, type: passthrough}
        edges:
          - {from: a, to: a}
        """,
    )
    assert [issue.message.split(":")[0] for issue in issues] == ["the cycle a has no way out"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (  # an edge leaving the cycle stops it when it fires
            "  - {from: b, to: a}\n",
            "  - {from: b, to: a}\n  - {from: b, to: out, condition: {type: keyword, "
            "config: {any: [done]}}}\n",
        ),
        (  # a condition inside: the entry may not be triggered again
            "  - {from: b, to: a}\n",
            "  - {from: b, to: a, condition: {type: keyword, config: {none: [done]}}}\n",
        ),
        ("  - {from: b, to: a}\n", "  - {from: b, to: a, trigger: false}\n"),
        (  # a gate holds its output back until its limit
            "  - {id: b, type: passthrough}\n",
            "  - {id: b, type: loop_counter, config: {max_iterations: 3}}\n",
        ),
        ("  - {id: b, type: passthrough}\n", "  - {id: b, type: loop_timer, config: {}}\n"),
    ],
    ids=["edge out", "condition inside", "trigger false", "loop_counter", "loop_timer"],
)
def test_a_cycle_with_a_way_out_needs_no_warning(tmp_path: Path, old: str, new: str) -> None:
    assert old in LOOP
    assert warnings_of(tmp_path, LOOP.replace(old, new)) == []


def test_validate_prints_the_warning_located_and_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text("graph:\n" + textwrap.indent(FAN_OUT, "  "))
    code, _, err = invoke("validate", str(path))
    assert code == 0, err
    assert f"{path}:2:3: graph: 2 nodes have no outgoing edge (b, c)" in err
    assert "warning" in err


def test_other_commands_load_the_graph_without_the_advice(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text("graph:\n" + textwrap.indent(LOOP.replace("end: [out]\n", ""), "  "))
    workflow, issues = validate_workflow(path, environ={})
    assert workflow is not None and issues == []
    _, _, err = invoke("tools", "list", str(path))
    assert "warning" not in err, err


def test_a_graph_with_errors_gets_no_advice_about_its_ending(tmp_path: Path) -> None:
    # The edge without `to` leaves a as a sink only because it is broken: one error, no advice.
    broken = FAN_OUT.replace("  - {from: a, to: b}\n", "  - {from: a}\n")
    path = tmp_path / "flow.yaml"
    path.write_text("graph:\n" + textwrap.indent(broken, "  "))
    _, issues = validate_workflow(path, environ={}, advice=True)
    assert [issue.severity for issue in issues] == ["error"], issues
