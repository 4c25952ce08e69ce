"""The workflow picture: shape records, the layered layout (loops, subgraphs, labels), drawings."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import pairwise

from devall_cli.engine.graph_shape import shape_of
from devall_cli.graphview.dot import render_dot
from devall_cli.graphview.layout import OUTPUT, TASK, VOTE, Box, Layout, Route, edge_label, layout
from devall_cli.graphview.mermaid import render_mermaid
from devall_cli.graphview.shape import GraphShape, ShapeEdge, ShapeNode, from_dict, to_dict, walk
from devall_cli.graphview.svg import NodeState, RunMarks, render_svg
from devall_cli.workflow.loader import load_workflow
from tests.conftest import REPO_ROOT


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


def drawn(route: Route) -> list[tuple[float, float]]:
    """Points along the route as the SVG draws it: straight lines for a loop's way back,
    otherwise curves leaving and entering each point vertically."""
    found = []
    for (x0, y0), (x1, y1) in pairwise(route.points):
        for step in range(41):
            t = step / 40
            if route.back:
                found.append((x0 + (x1 - x0) * t, y0 + (y1 - y0) * t))
            else:  # the cubic curve from (x0, y0) via (x0, m) and (x1, m) to (x1, y1)
                across, down = 3 * t * t - 2 * t**3, 1.5 * t * (1 - t) + t**3
                found.append((x0 + (x1 - x0) * across, y0 + (y1 - y0) * down))
    return found


def crossed(lay: Layout) -> list[tuple[str, str]]:
    """The (edge, node) pairs where a drawn edge runs through a node's box, in every graph."""
    found = []
    for route in lay.routes:
        name = f"{route.edge.source}->{route.edge.target}" if route.edge else "mark"
        for key, box in lay.boxes.items():
            inside = [
                (x, y)
                for x, y in drawn(route)
                if box.x + 1 < x < box.x + box.w - 1 and box.y + 1 < y < box.y + box.h - 1
            ]
            if inside:
                found.append((name, key))
    for box in lay.boxes.values():
        found.extend(crossed(box.child) if box.child is not None else [])
    return found


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


def test_a_loops_way_back_runs_beside_its_nodes_and_crosses_nothing() -> None:
    workflow = load_workflow(REPO_ROOT / "workflows" / "examples" / "critic_loop.yaml")
    for shape in (shape_of(workflow.graph), LOOP):
        lay = layout(shape)
        assert crossed(lay) == []
        routes = {(r.edge.source, r.edge.target): r for r in lay.routes if r.edge}
        back, forward = routes[("critic", "writer")], routes[("writer", "critic")]
        assert back.back and not forward.back
        # Straight lines, on one side of both nodes: never along the forward edge.
        assert all(a[0] == b[0] or a[1] == b[1] for a, b in pairwise(back.points))
        writer, critic = lay.boxes["writer"], lay.boxes["critic"]
        lane = {x for x, _ in back.points} - {writer.x, writer.x + writer.w}
        lane -= {critic.x, critic.x + critic.w}
        reach = [x for x, _ in drawn(forward)]
        assert all(x > max(reach) for x in lane) or all(x < min(reach) for x in lane)
        assert back.label == ["keyword(none=['APPROVED'])"] or shape is LOOP


def test_a_majority_vote_is_a_box_every_node_feeds_and_the_output_comes_from() -> None:
    vote = GraphShape("v", (agent("a"), agent("b"), agent("c")), start=("a",), majority_vote=True)
    assert from_dict(to_dict(vote)) == vote
    lay = layout(vote)
    task, ballot, output = lay.boxes[TASK], lay.boxes[VOTE], lay.boxes[OUTPUT]
    voters = [lay.boxes[key] for key in "abc"]
    ends = [(r.points[0], r.points[-1]) for r in lay.routes]
    for box in voters:  # each answers the task (not only the start node) and votes
        assert any(s[1] == task.y + task.h and e == (box.cx, box.y) for s, e in ends)
        assert any(s == (box.cx, box.y + box.h) and e[1] == ballot.y for s, e in ends)
    assert any(s[1] == ballot.y + ballot.h and e[1] == output.y for s, e in ends)
    assert "majority vote" in render_svg(lay) and crossed(lay) == []


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
