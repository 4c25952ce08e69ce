"""A laid out graph as SVG: nodes coloured by status, loops and subgraphs visible.

Self-contained (its own `<style>`, no fonts or images to fetch), so the same drawing works as a
file of its own (`devall graph --format svg`) and inline in a report, where nodes link to their
section. Every text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from html import escape

from devall_cli.graphview.layout import (
    LOOP_W,
    OUTPUT,
    PAD,
    TASK,
    TITLE_H,
    VOTE,
    Box,
    Layout,
    Route,
    edge_label,
    node_caption,
    short,
)
from devall_cli.graphview.shape import VOTE_NOTE, VOTE_RULE, VOTE_TITLE

MARGIN = 12.0
STYLE = """
.dg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;fill:#1f2328}
.dg .node rect{fill:#fff;stroke:#57606a;stroke-width:1.2}
.dg .node .id{font-size:13px;font-weight:600}
.dg .node .cap{font-size:11px;fill:#57606a}
.dg .mark rect{fill:#eaeef2;stroke:#8c959f}
.dg .mark text{font-size:11px;fill:#57606a}
.dg .vote rect{fill:#fbefff;stroke:#8250df}
.dg .vote .id{font-size:13px;font-weight:600;fill:#1f2328}
.dg .cluster>rect{fill:#f6f8fa;stroke:#8c959f;stroke-dasharray:5 3}
.dg .cluster>.title{font-size:12px;font-weight:600;fill:#57606a}
.dg .edge{fill:none;stroke:#6e7781;stroke-width:1.3}
.dg .edge.back{stroke:#8250df}
.dg .edge.notrigger{stroke-dasharray:5 4}
.dg .edge.idle{stroke:#c7ccd1}
.dg .edge.fired{stroke-width:2}
.dg .elabel{font-size:11px;fill:#57606a;paint-order:stroke;stroke:#fff;stroke-width:3px}
.dg .st-ok rect{fill:#dafbe1;stroke:#1a7f37}
.dg .st-failed rect{fill:#ffebe9;stroke:#cf222e;stroke-width:2}
.dg .st-running rect,.dg .st-interrupted rect{fill:#fff8c5;stroke:#bf8700;stroke-width:2}
.dg .st-skipped rect,.dg .st-not_run rect{fill:#f6f8fa;stroke:#afb8c1;stroke-dasharray:4 3}
.dg .st-skipped text,.dg .st-not_run text{fill:#8c959f}
.dg .cluster.st-ok>rect{fill:#f4fbf6;stroke:#1a7f37}
.dg .cluster.st-failed>rect{fill:#fff7f6;stroke:#cf222e}
.dg .cluster.st-running>rect,.dg .cluster.st-interrupted>rect{fill:#fffdf0;stroke:#bf8700}
.dg a .node:hover rect{stroke-width:2.5}
.dg g.badge rect{fill:#57606a;stroke:none;stroke-dasharray:none}
.dg g.badge text{font-size:10px;fill:#fff;font-weight:600}
"""
_ARROWS = (("", "#6e7781"), ("back", "#8250df"), ("idle", "#c7ccd1"))


@dataclass(frozen=True)
class NodeState:
    """How a node fared in a run: status, visits, dynamic units, and the report's anchor."""

    status: str
    visits: int = 0
    units: int = 0
    anchor: str = ""


@dataclass(frozen=True)
class RunMarks:
    """What a report adds to the drawing: node states by path, and the edges that fired."""

    states: Mapping[str, NodeState]
    fired: Collection[tuple[str, str]]


def render_svg(lay: Layout, *, marks: RunMarks | None = None, prefix: str = "dg") -> str:
    """The whole drawing as one `<svg>` element (ids in it start with `prefix`)."""
    width, height = lay.width + 2 * MARGIN, lay.height + 2 * MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="dg" viewBox="0 0 {width:.0f} '
        f'{height:.0f}" width="{width:.0f}" height="{height:.0f}" role="img" '
        f'aria-label="{escape(f"graph {lay.shape.id}".strip())}">',
        f"<style>{STYLE}</style>",
        "<defs>",
        *(
            f'<marker id="{prefix}-arrow{name and "-" + name}" viewBox="0 0 10 10" refX="9" '
            f'refY="5" markerWidth="8" markerHeight="8" markerUnits="userSpaceOnUse" '
            f'orient="auto-start-reverse">'
            f'<path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
            for name, colour in _ARROWS
        ),
        "</defs>",
        f'<g transform="translate({MARGIN},{MARGIN})">',
    ]
    _graph(parts, lay, "", marks, prefix)
    parts.append("</g></svg>")
    return "\n".join(parts)


def _graph(parts: list[str], lay: Layout, path: str, marks: RunMarks | None, prefix: str) -> None:
    for route in lay.routes:
        _route(parts, route, path, marks, prefix)
    for box in lay.boxes.values():
        if box.node is None:
            _mark(parts, box)
        elif box.child is not None:
            _cluster(parts, box, path, marks, prefix)
        else:
            _node(parts, box, path, marks, prefix)


def _state(marks: RunMarks | None, node_path: str) -> NodeState | None:
    return marks.states.get(node_path) if marks is not None else None


def _open_link(parts: list[str], state: NodeState | None) -> bool:
    if state is not None and state.anchor:
        parts.append(f'<a href="#{escape(state.anchor)}">')
        return True
    return False


def _title(node_path: str, box: Box, state: NodeState | None) -> str:
    assert box.node is not None
    lines = [f"{node_path} — {node_caption(box.node)}"]
    if box.node.description:
        lines.append(box.node.description)
    if state is not None:
        extra = f", {state.visits} visits" if state.visits > 1 else ""
        extra += f", {state.units} units" if state.units else ""
        lines.append(f"{state.status}{extra}")
    return f"<title>{escape(chr(10).join(lines))}</title>"


def _node(parts: list[str], box: Box, path: str, marks: RunMarks | None, prefix: str) -> None:
    assert box.node is not None
    node_path = path + box.node.id
    state = _state(marks, node_path)
    linked = _open_link(parts, state)
    status = f" st-{escape(state.status)}" if state is not None else ""
    parts.append(f'<g class="node{status}" data-node="{escape(node_path)}">')
    parts.append(_title(node_path, box, state))
    parts.append(
        f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="6"/>'
    )
    parts.append(
        f'<text class="id" x="{box.cx:.1f}" y="{box.y + 18:.1f}" text-anchor="middle">'
        f"{escape(short(box.node.id))}</text>"
    )
    parts.append(
        f'<text class="cap" x="{box.cx:.1f}" y="{box.y + 33:.1f}" text-anchor="middle">'
        f"{escape(short(node_caption(box.node)))}</text>"
    )
    _badge(parts, box, state)
    _loops(parts, box, prefix)
    parts.append("</g>")
    if linked:
        parts.append("</a>")


def _badge(parts: list[str], box: Box, state: NodeState | None) -> None:
    if state is None or (state.visits <= 1 and not state.units):
        return
    text = f"{state.units} units" if state.units else f"\u00d7{state.visits}"  # times N
    width = 8 + 6 * len(text)
    x, y = box.x + box.w - width + 6, box.y - 8
    parts.append(
        f'<g class="badge"><rect x="{x:.1f}" y="{y:.1f}" width="{width}" height="15" rx="7"/>'
        f'<text x="{x + width / 2:.1f}" y="{y + 11:.1f}" text-anchor="middle">{text}</text></g>'
    )


def _loops(parts: list[str], box: Box, prefix: str) -> None:
    """Edges from a node to itself: an arc on its right side, label beside it."""
    right = box.x + box.w
    for index, edge in enumerate(box.loops):
        top, bottom = box.y + 8 + index * 4, box.y + box.h - 8 - index * 4
        reach = right + LOOP_W - 4
        style = "edge back" + ("" if edge.trigger else " notrigger")
        parts.append(
            f'<path class="{style}" d="M{right:.1f},{top:.1f} C{reach:.1f},{top - 6:.1f} '
            f'{reach:.1f},{bottom + 6:.1f} {right:.1f},{bottom:.1f}" '
            f'marker-end="url(#{prefix}-arrow-back)"/>'
        )
        _label(parts, edge_label(edge), reach + 6, box.y + box.h / 2 - 6)


def _cluster(parts: list[str], box: Box, path: str, marks: RunMarks | None, prefix: str) -> None:
    assert box.node is not None and box.child is not None
    node_path = path + box.node.id
    state = _state(marks, node_path)
    status = f" st-{escape(state.status)}" if state is not None else ""
    parts.append(f'<g class="cluster{status}" data-node="{escape(node_path)}">')
    parts.append(_title(node_path, box, state))
    parts.append(
        f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="8"/>'
    )
    linked = _open_link(parts, state)
    title = short(f"{box.node.id} · {node_caption(box.node)}", 60)
    parts.append(
        f'<text class="title" x="{box.x + PAD:.1f}" y="{box.y + 17:.1f}">{escape(title)}</text>'
    )
    if linked:
        parts.append("</a>")
    _badge(parts, box, state)
    inset = (box.w - box.child.width) / 2  # the inner graph centred under a wider title
    parts.append(f'<g transform="translate({box.x + inset:.1f},{box.y + TITLE_H:.1f})">')
    _graph(parts, box.child, node_path + "/", marks, prefix)
    parts.append("</g>")
    _loops(parts, box, prefix)
    parts.append("</g>")


def _mark(parts: list[str], box: Box) -> None:
    if box.key == VOTE:
        _vote(parts, box)
        return
    text = "task" if box.key == TASK else "output" if box.key == OUTPUT else ""
    parts.append(
        f'<g class="mark"><rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" '
        f'height="{box.h:.1f}" rx="{box.h / 2:.1f}"/><text x="{box.cx:.1f}" '
        f'y="{box.y + box.h / 2 + 4:.1f}" text-anchor="middle">{text}</text></g>'
    )


def _vote(parts: list[str], box: Box) -> None:
    """A majority vote's box: what it is and its rule, the details in its tooltip."""
    parts.append(
        f'<g class="mark vote"><title>{escape(VOTE_NOTE)}</title><rect x="{box.x:.1f}" '
        f'y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="6"/>'
        f'<text class="id" x="{box.cx:.1f}" y="{box.y + 18:.1f}" text-anchor="middle">'
        f'{VOTE_TITLE}</text><text class="cap" x="{box.cx:.1f}" y="{box.y + 33:.1f}" '
        f'text-anchor="middle">{VOTE_RULE}</text></g>'
    )


def _route(parts: list[str], route: Route, path: str, marks: RunMarks | None, prefix: str) -> None:
    classes = ["edge"]
    arrow = f"{prefix}-arrow"
    if route.back:
        classes.append("back")
        arrow += "-back"
    if route.edge is not None and not route.edge.trigger:
        classes.append("notrigger")
    if marks is not None and route.edge is not None:
        key = (path + route.edge.source, path + route.edge.target)
        if key in marks.fired:
            classes.append("fired")
        else:
            classes.append("idle")
            arrow = f"{prefix}-arrow-idle"
    shape = _corners(route.points) if route.back else _curve(route.points)
    parts.append(f'<path class="{" ".join(classes)}" d="{shape}" marker-end="url(#{arrow})"/>')
    if route.label:
        _label(parts, route.label, *route.label_at)


def _label(parts: list[str], lines: list[str], x: float, top: float) -> None:
    if not lines:
        return
    spans = "".join(
        f'<tspan x="{x:.1f}" dy="{13 if i else 10}">{escape(line)}</tspan>'
        for i, line in enumerate(lines)
    )
    parts.append(f'<text class="elabel" x="{x:.1f}" y="{top:.1f}">{spans}</text>')


def _curve(points: list[tuple[float, float]]) -> str:
    """A smooth path through `points`, leaving and entering each one vertically."""
    (x0, y0), rest = points[0], points[1:]
    path = [f"M{x0:.1f},{y0:.1f}"]
    for x1, y1 in rest:
        middle = (y0 + y1) / 2
        path.append(f"C{x0:.1f},{middle:.1f} {x1:.1f},{middle:.1f} {x1:.1f},{y1:.1f}")
        x0, y0 = x1, y1
    return " ".join(path)


def _corners(points: list[tuple[float, float]], radius: float = 6.0) -> str:
    """Straight lines through `points`, their corners rounded."""
    (x0, y0) = points[0]
    path = [f"M{x0:.1f},{y0:.1f}"]
    for (xa, ya), (xb, yb), (xc, yc) in zip(points, points[1:], points[2:], strict=False):
        into, out = math.dist((xa, ya), (xb, yb)), math.dist((xb, yb), (xc, yc))
        cut = min(radius, into / 2, out / 2)
        if cut <= 0:
            continue
        before = (xb + (xa - xb) * cut / into, yb + (ya - yb) * cut / into)
        after = (xb + (xc - xb) * cut / out, yb + (yc - yb) * cut / out)
        path.append(
            f"L{before[0]:.1f},{before[1]:.1f} Q{xb:.1f},{yb:.1f} {after[0]:.1f},{after[1]:.1f}"
        )
    x1, y1 = points[-1]
    path.append(f"L{x1:.1f},{y1:.1f}")
    return " ".join(path)
