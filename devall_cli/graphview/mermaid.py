"""A graph shape as Mermaid flowchart text (what `devall graph` prints by default).

The same content as the SVG drawing: nodes with their type and detail, subgraphs as Mermaid
subgraphs, the task and output marks, a majority vote's box, conditions as edge labels, edges
that do not trigger dotted. Node ids become `n1`, `n2`, ... so any id is safe; every text is
escaped.
"""

from __future__ import annotations

from devall_cli.graphview.layout import VOTE, edge_label, node_caption
from devall_cli.graphview.shape import VOTE_RULE, VOTE_TITLE, GraphShape

_ESCAPES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "`": "#96;"}
# Every character Python (and so a reader of the text) takes as the end of a line: in Mermaid
# text one would end a `%%` comment or a statement, and what follows would be read as code.
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label or a comment: entity codes for the characters
    Mermaid reads, a space for every line break (a name can never add a statement)."""
    return "".join(" " if ch in _LINE_BREAKS else _ESCAPES.get(ch, ch) for ch in text)


def render_mermaid(shape: GraphShape) -> str:
    """`flowchart TD` text for the graph and its subgraphs."""
    lines = ["flowchart TD"]
    if shape.id:
        lines.append(f"  %% workflow {mermaid_text(shape.id)}")
    ids: dict[str, str] = {}
    if shape.entries:
        lines.append('  task_(["task"])')
    _nodes(lines, shape, "", ids, "  ")
    ends = [VOTE] if shape.majority_vote else list(shape.end)
    if ends:
        lines.append('  output_(["output"])')
    _edges(lines, shape, "", ids)
    lines.extend(f"  task_ --> {ids[entry]}" for entry in shape.entries)
    lines.extend(f"  {ids[end]} --> output_" for end in ends)
    return "\n".join(lines) + "\n"


def _nodes(
    lines: list[str], shape: GraphShape, prefix: str, ids: dict[str, str], indent: str
) -> None:
    for node in shape.nodes:
        path = prefix + node.id
        ids[path] = f"n{len(ids) + 1}"
        if node.graph is not None:
            title = mermaid_text(f"{node.id} · {node_caption(node)}")
            lines.append(f'{indent}subgraph {ids[path]} ["{title}"]')
            lines.append(f"{indent}  direction TB")
            _nodes(lines, node.graph, path + "/", ids, indent + "  ")
            lines.append(f"{indent}end")
        else:
            text = f"{mermaid_text(node.id)}<br/>{mermaid_text(node_caption(node))}"
            lines.append(f'{indent}{ids[path]}["{text}"]')
    if shape.majority_vote:  # the box the voters feed into (a hexagon)
        ids[prefix + VOTE] = f"n{len(ids) + 1}"
        lines.append(f'{indent}{ids[prefix + VOTE]}{{{{"{VOTE_TITLE}<br/>{VOTE_RULE}"}}}}')


def _edges(lines: list[str], shape: GraphShape, prefix: str, ids: dict[str, str]) -> None:
    for node in shape.nodes:
        if node.graph is not None:
            _edges(lines, node.graph, f"{prefix}{node.id}/", ids)
    for edge in shape.edges:
        arrow = "-->" if edge.trigger else "-.->"
        label = "<br/>".join(mermaid_text(line) for line in edge_label(edge))
        link = f'{arrow}|"{label}"|' if label else arrow
        lines.append(f"  {ids[prefix + edge.source]} {link} {ids[prefix + edge.target]}")
    if shape.majority_vote:
        lines.extend(f"  {ids[prefix + node.id]} --> {ids[prefix + VOTE]}" for node in shape.nodes)
