"""The workflow picture: shape records, the layered layout (loops, subgraphs, labels), drawings."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from devall_cli.graphview.dot import render_dot
from devall_cli.graphview.layout import TASK, Box, edge_label, layout
from devall_cli.graphview.mermaid import render_mermaid
from devall_cli.graphview.shape import GraphShape, ShapeEdge, ShapeNode, from_dict, to_dict, walk
from devall_cli.graphview.svg import NodeState, RunMarks, render_svg


def agent(node_id: str, graph: GraphShape | None = None) -> ShapeNode:
    return ShapeNode(node_id, "subgraph" if graph else "agent", detail="m", graph=graph)


INNER = GraphShape(
    "inner",
    (agent("x"), agent("y")),
    (ShapeEdge("x", "y"),),
    start=("x",),
    end=("y",),
)
LOOP = GraphShape(
    "loop",
    (agent("writer"), agent("critic"), agent("sub", INNER), agent("done")),
    (
        ShapeEdge("writer", "critic"),
        ShapeEdge("critic", "writer", label="keyword(none=['OK'])"),
        ShapeEdge("critic", "sub", label="keyword(any=['OK'])", carry_data=False),
        ShapeEdge("sub", "done"),
        ShapeEdge("done", "done", label="again"),
        ShapeEdge("writer", "done", trigger=False),
    ),
    start=("writer",),
    end=("done",),
)


def overlap(a: Box, b: Box) -> bool:
    return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h


def test_a_loop_is_drawn_with_one_edge_turned_round() -> None:
    drawn = layout(LOOP)
    back = [r for r in drawn.routes if r.back]
    assert [(r.edge.source, r.edge.target) for r in back if r.edge] == [("critic", "writer")]
    assert drawn.boxes["writer"].y < drawn.boxes["critic"].y < drawn.boxes["sub"].y
    assert drawn.boxes[TASK].y < drawn.boxes["writer"].y
    assert [e.label for e in drawn.boxes["done"].loops] == ["again"]  # an edge to itself
    boxes = list(drawn.boxes.values())
    assert not any(overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    assert all(b.x >= -1e-6 and b.x + b.w <= drawn.width + 1e-6 for b in boxes)


def test_a_subgraph_is_a_box_holding_its_laid_out_graph() -> None:
    box = layout(LOOP).boxes["sub"]
    assert box.child is not None and set(box.child.boxes) == {"x", "y"}
    assert box.w >= box.child.width and box.h >= box.child.height
    assert [path for path, _ in walk(LOOP)] == ["writer", "critic", "sub", "sub/x", "sub/y", "done"]


def test_edge_labels_say_condition_and_what_the_edge_does_not_do() -> None:
    assert edge_label(LOOP.edges[2]) == ["keyword(any=['OK'])", "no data"]
    assert edge_label(LOOP.edges[5]) == ["no trigger"]
    long = edge_label(ShapeEdge("a", "b", label="w" * 500))
    assert all(len(line) <= 30 for line in long) and len("".join(long)) < 100


def test_the_shape_record_round_trips_and_rejects_junk() -> None:
    assert from_dict(to_dict(LOOP)) == LOOP
    assert from_dict(None) is None and from_dict("graph") is None
    deep: dict[str, object] = {"id": "g", "nodes": []}
    for _ in range(50):  # a record nested beyond reason is cut, not followed
        deep = {"id": "g", "nodes": [{"id": "s", "type": "subgraph", "graph": deep}]}
    assert from_dict(deep) is not None


def test_svg_marks_the_run_and_stays_well_formed() -> None:
    states = {
        "writer": NodeState("ok", visits=2),
        "critic": NodeState("failed"),
        "sub": NodeState("interrupted"),
        "sub/x": NodeState("ok"),
        "done": NodeState("not_run"),
    }
    svg = render_svg(layout(LOOP), marks=RunMarks(states, set()), prefix="t")
    root = ET.fromstring(svg)
    classes = {g.get("data-node"): g.get("class") for g in root.iter() if g.get("data-node")}
    assert "st-ok" in (classes["writer"] or "") and "st-failed" in (classes["critic"] or "")
    assert "st-not_run" in (classes["done"] or "")
    assert "\u00d72" in svg  # writer's two visits


def test_no_name_adds_a_mermaid_statement() -> None:
    """A line break in a graph id, node id or label would end the comment or the statement."""
    evil = "g\n  n9[\"injected\"] --> n1\r\u2028x"
    shape = GraphShape(
        evil,
        (ShapeNode(evil, "agent", description=evil), ShapeNode("c", "agent")),
        (ShapeEdge(evil, "c", label=evil),),
        start=(evil,),
    )
    lines = render_mermaid(shape).splitlines()
    assert lines[1].startswith("  %% workflow g ") and "n9" in lines[1]
    assert not any(line.lstrip().startswith("n9") for line in lines)
    assert len(lines) == len(render_mermaid(GraphShape(
        "g", (ShapeNode("a", "agent"), ShapeNode("c", "agent")), (ShapeEdge("a", "c", label="l"),),
        start=("a",))).splitlines())  # fmt: skip


def test_mermaid_and_dot_escape_what_the_workflow_says() -> None:
    shape = GraphShape(
        "g",
        (ShapeNode('a"b', "agent", description="<x>"), ShapeNode("c", "agent")),
        (ShapeEdge('a"b', "c", label='say "hi" | -->'),),
        start=('a"b',),
    )
    mermaid = render_mermaid(shape)
    assert 'say "hi"' not in mermaid and "-->|" in mermaid
    dot = render_dot(shape)
    assert 'label="say \\"hi\\" | -->"' in dot
