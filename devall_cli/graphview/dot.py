"""A graph shape as Graphviz DOT text (`devall graph --format dot`).

Subgraphs are clusters; an edge to or from a subgraph node is drawn to the cluster's border
(`compound=true` with `lhead`/`ltail` on an inner node). A majority vote is a hexagon its
voters feed into. Nodes are `n1`, `n2`, ... (any node id is safe), their labels the id and the
type; every text is escaped.
"""

from __future__ import annotations

from devall_cli.graphview.layout import VOTE, edge_label, node_caption
from devall_cli.graphview.shape import VOTE_RULE, VOTE_TITLE, GraphShape, ShapeNode

_MARK = 'shape=oval, style=filled, fillcolor="#eaeef2"'
_VOTE = 'shape=hexagon, style=filled, fillcolor="#fbefff", color="#8250df"'


def dot_string(text: str) -> str:
    """A quoted DOT string: backslashes and quotes escaped, newlines as `\\n`."""
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{body}"'


def render_dot(shape: GraphShape) -> str:
    """`digraph` text for the graph and its subgraphs."""
    lines = [
        f"digraph {dot_string(shape.id or 'workflow')} {{",
        "  rankdir=TB; compound=true;",
        '  node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    ids: dict[str, str] = {}
    if shape.entries:
        lines.append(f'  task [label="task", {_MARK}];')
    _nodes(lines, shape, "", ids, "  ")
    if shape.end or shape.majority_vote:
        lines.append(f'  output [label="output", {_MARK}];')
    _edges(lines, shape, "", ids)
    for entry in shape.entries:
        lines.append(
            _link("task", _point(shape, "", entry, ids), _clips(shape, "", ids, None, entry))
        )
    if shape.majority_vote:
        lines.append(_link(ids[VOTE], "output", []))
    for end in () if shape.majority_vote else shape.end:
        lines.append(
            _link(_point(shape, "", end, ids), "output", _clips(shape, "", ids, end, None))
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def _nodes(
    lines: list[str], shape: GraphShape, prefix: str, ids: dict[str, str], indent: str
) -> None:
    for node in shape.nodes:
        path = prefix + node.id
        ids[path] = f"n{len(ids) + 1}"
        if node.graph is not None:
            lines.append(f"{indent}subgraph cluster_{ids[path]} {{")
            lines.append(f"{indent}  label={dot_string(f'{node.id} · {node_caption(node)}')};")
            lines.append(f'{indent}  style="rounded,dashed";')
            _nodes(lines, node.graph, path + "/", ids, indent + "  ")
            lines.append(f"{indent}}}")
        else:
            label = f"{node.id}\n{node_caption(node)}"
            lines.append(f"{indent}{ids[path]} [label={dot_string(label)}];")
    if shape.majority_vote:  # the box the voters feed into
        ids[prefix + VOTE] = f"n{len(ids) + 1}"
        label = dot_string(f"{VOTE_TITLE}\n{VOTE_RULE}")
        lines.append(f"{indent}{ids[prefix + VOTE]} [label={label}, {_VOTE}];")


def _edges(lines: list[str], shape: GraphShape, prefix: str, ids: dict[str, str]) -> None:
    for node in shape.nodes:
        if node.graph is not None:
            _edges(lines, node.graph, f"{prefix}{node.id}/", ids)
    for edge in shape.edges:
        attributes = _clips(shape, prefix, ids, edge.source, edge.target)
        label = "\n".join(edge_label(edge))
        if label:
            attributes.append(f"label={dot_string(label)}")
        if not edge.trigger:
            attributes.append("style=dashed")
        source = _point(shape, prefix, edge.source, ids)
        lines.append(_link(source, _point(shape, prefix, edge.target, ids), attributes))
    if shape.majority_vote:
        for node in shape.nodes:
            source = _point(shape, prefix, node.id, ids)
            clips = _clips(shape, prefix, ids, node.id, None)
            lines.append(_link(source, ids[prefix + VOTE], clips))


def _point(shape: GraphShape, prefix: str, node_id: str, ids: dict[str, str]) -> str:
    """The DOT node an edge attaches to: the node, or inside a subgraph its first start node."""
    node: ShapeNode | None = shape.node(node_id)
    path = prefix + node_id
    while node is not None and node.graph is not None:
        inner = node.graph.node(node.graph.start[0]) if node.graph.start else None
        node = inner or node.graph.nodes[0]
        path = f"{path}/{node.id}"
    return ids[path]


def _clips(
    shape: GraphShape, prefix: str, ids: dict[str, str], source: str | None, target: str | None
) -> list[str]:
    """`ltail`/`lhead` for the ends that are subgraph nodes: the edge stops at the cluster."""
    found = []
    for end, clip in ((source, "ltail"), (target, "lhead")):
        node = shape.node(end) if end is not None else None
        if node is not None and node.graph is not None:
            found.append(f"{clip}=cluster_{ids[prefix + node.id]}")
    return found


def _link(source: str, target: str, attributes: list[str]) -> str:
    suffix = f" [{', '.join(attributes)}]" if attributes else ""
    return f"  {source} -> {target}{suffix};"
