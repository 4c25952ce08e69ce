"""The shape of a loaded graph (graphview.shape), read by asking the node and edge kinds.

Subgraphs are nested in their nodes, edge conditions shown by the label the trace uses; every
text goes through the workflow's mask.
"""

from __future__ import annotations

from devall_cli.config.dynamic import describe_split
from devall_cli.config.model import EdgeConfig, GraphConfig, NodeConfig, node_graphs
from devall_cli.edges.base import CONDITION_TYPES, PROCESSOR_TYPES
from devall_cli.graphview.shape import GraphShape, Mask, ShapeEdge, ShapeNode
from devall_cli.nodes.base import NODE_TYPES


def shape_of(graph: GraphConfig, mask: Mask = lambda text: text) -> GraphShape:
    """The shape of a loaded graph; every text goes through `mask` (the workflow's secrets)."""
    return GraphShape(
        id=mask(graph.id or ""),
        nodes=tuple(_node(node, mask) for node in graph.nodes),
        edges=tuple(_edge(edge, mask) for edge in graph.edges),
        start=graph.start,
        end=graph.end,
        majority_vote=graph.is_majority_voting,
    )


def _node(node: NodeConfig, mask: Mask) -> ShapeNode:
    kind = NODE_TYPES.get(node.type)
    children = node_graphs(node)
    return ShapeNode(
        id=node.id,
        type=node.type,
        detail=mask(kind.label(node.config) if kind is not None else ""),
        description=mask(node.description or ""),
        graph=shape_of(children[0], mask) if children else None,
    )


def _edge(edge: EdgeConfig, mask: Mask) -> ShapeEdge:
    label = ""
    if not edge.condition.always:
        kind = CONDITION_TYPES.get(edge.condition.type)
        label = (kind.label(edge.condition.config) if kind else "") or edge.condition.type
    notes: list[str] = []
    if edge.dynamic is not None:
        notes.append(f"{edge.dynamic.type} over {describe_split(edge.dynamic.split)}")
    if edge.process is not None:
        processor = PROCESSOR_TYPES.get(edge.process.type)
        text = (processor.label(edge.process.config) if processor else "") or edge.process.type
        notes.append(f"process {text}")
    return ShapeEdge(
        source=edge.source,
        target=edge.target,
        label=mask(label),
        trigger=edge.trigger,
        carry_data=edge.carry_data,
        notes=tuple(mask(note) for note in notes),
    )
