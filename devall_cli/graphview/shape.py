"""The shape of a workflow's graph: what a picture of it needs, as plain data.

`engine.graph_shape.shape_of` reads it from a loaded graph (asking the kinds); `to_dict` and
`from_dict` carry it through `run.started` in events.jsonl, so a report draws the graph a run
really used without reading the workflow again.
`from_dict` accepts anything: what it cannot read is left out, never an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

Mask = Callable[[str], str]


@dataclass(frozen=True)
class ShapeNode:
    """One node: id, type, a short detail (the model, the subgraph file) and its subgraph."""

    id: str
    type: str
    detail: str = ""
    description: str = ""
    graph: GraphShape | None = None  # the graph a subgraph node runs


@dataclass(frozen=True)
class ShapeEdge:
    """One edge: its ends, the condition's label ("" when it always holds) and its options."""

    source: str
    target: str
    label: str = ""
    trigger: bool = True
    carry_data: bool = True
    notes: tuple[str, ...] = ()  # dynamic fan-out, processor


@dataclass(frozen=True)
class GraphShape:
    """A graph: nodes in declaration order, edges, start and end nodes, and whether its result
    is the majority vote of its nodes (then every node answers the task; edges and `end` play
    no part)."""

    id: str
    nodes: tuple[ShapeNode, ...]
    edges: tuple[ShapeEdge, ...] = ()
    start: tuple[str, ...] = ()
    end: tuple[str, ...] = ()
    majority_vote: bool = False

    def node(self, node_id: str) -> ShapeNode | None:
        """The node with this id, or None."""
        return self._by_id.get(node_id)

    @cached_property
    def _by_id(self) -> dict[str, ShapeNode]:
        """Nodes by id, the first of a repeated id winning (a drawing looks up every edge end)."""
        found: dict[str, ShapeNode] = {}
        for node in self.nodes:
            found.setdefault(node.id, node)
        return found

    @property
    def entries(self) -> tuple[str, ...]:
        """The nodes the task goes to: every node in a majority vote, else the start nodes."""
        return tuple(node.id for node in self.nodes) if self.majority_vote else self.start


VOTE_TITLE = "majority vote"
VOTE_RULE = "most common answer wins"
VOTE_NOTE = (
    "Every node answers the task; the answer given most often is the result "
    "(a tie: the node written first). Edges and end play no part."
)


# --- to and from JSON ------------------------------------------------------------------------


def to_dict(shape: GraphShape) -> dict[str, Any]:
    """The shape as JSON data (the `graph` of `run.started`)."""
    return {
        "id": shape.id,
        "start": list(shape.start),
        "end": list(shape.end),
        "majority_vote": shape.majority_vote,
        "nodes": [_node_dict(node) for node in shape.nodes],
        "edges": [
            {
                "from": edge.source,
                "to": edge.target,
                "label": edge.label,
                "trigger": edge.trigger,
                "carry_data": edge.carry_data,
                "notes": list(edge.notes),
            }
            for edge in shape.edges
        ],
    }


def _node_dict(node: ShapeNode) -> dict[str, Any]:
    data: dict[str, Any] = {"id": node.id, "type": node.type, "detail": node.detail}
    if node.description:
        data["description"] = node.description
    if node.graph is not None:
        data["graph"] = to_dict(node.graph)
    return data


def from_dict(data: Any, depth: int = 0) -> GraphShape | None:
    """The shape written by `to_dict`, or None when `data` holds none (an older run)."""
    if not isinstance(data, Mapping) or depth > 20:
        return None
    nodes: list[ShapeNode] = []
    for raw in _list(data.get("nodes")):
        if isinstance(raw, Mapping) and isinstance(raw.get("id"), str):
            nodes.append(
                ShapeNode(
                    id=raw["id"],
                    type=_text(raw.get("type")),
                    detail=_text(raw.get("detail")),
                    description=_text(raw.get("description")),
                    graph=from_dict(raw.get("graph"), depth + 1),
                )
            )
    if not nodes:
        return None
    ids = {node.id for node in nodes}
    edges = [
        ShapeEdge(
            source=raw["from"],
            target=raw["to"],
            label=_text(raw.get("label")),
            trigger=raw.get("trigger") is not False,
            carry_data=raw.get("carry_data") is not False,
            notes=tuple(_text(note) for note in _list(raw.get("notes"))),
        )
        for raw in _list(data.get("edges"))
        if isinstance(raw, Mapping) and raw.get("from") in ids and raw.get("to") in ids
    ]
    return GraphShape(
        id=_text(data.get("id")),
        nodes=tuple(nodes),
        edges=tuple(edges),
        start=tuple(n for n in _list(data.get("start")) if n in ids),
        end=tuple(n for n in _list(data.get("end")) if n in ids),
        majority_vote=data.get("majority_vote") is True,
    )


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def walk(shape: GraphShape, prefix: str = "") -> list[tuple[str, ShapeNode]]:
    """Every node with its path (`outer/inner`), subgraph nodes before their inner nodes."""
    found: list[tuple[str, ShapeNode]] = []
    for node in shape.nodes:
        path = prefix + node.id
        found.append((path, node))
        if node.graph is not None:
            found.extend(walk(node.graph, f"{path}/"))
    return found
