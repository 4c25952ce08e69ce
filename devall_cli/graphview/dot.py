"""A graph shape as Graphviz DOT text (`devall graph --format dot`).

Subgraphs are clusters; an edge to or from a subgraph node is drawn to the cluster's border
(`compound=true` with `lhead`/`ltail` on an inner node). Nodes are `n1`, `n2`, ... (any node
id is safe), their labels the id and the type; every text is escaped.
"""

from __future__ import annotations

from devall_cli.graphview.layout import edge_label, node_caption
from devall_cli.graphview.shape import GraphShape, ShapeNode

_MARK = 'shape=oval, style=filled, fillcolor="#eaeef2"'


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
    if shape.start:
        lines.append(f'  task [label="task", {_MARK}];')
    _nodes(lines, shape, "", ids, "  ")
    if shape.end:
        lines.append(f'  output [label="output", {_MARK}];')
    _edges(lines, shape, "", ids)
    for start in shape.start:
        lines.append(
            _link("task", _point(shape, "", start, ids), _clips(shape, "", ids, None, start))
        )
    for end in shape.end:
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
