"""A layered layout of a graph shape (top to bottom), the way `dot` draws flow charts.

Steps: edges that close a loop are turned round (found by a depth-first search from the start
nodes), nodes get ranks by longest path, every edge gets a point on each rank it crosses (ranks
are doubled so that every edge has one, which carries its label), nodes are ordered in their
rank by barycentres to cut crossings, and placed sideways as close to their neighbours as the
spacing allows; an edge that closes a loop gets a lane of its own beside its nodes. Then each
edge is routed (routes.py). A subgraph node is laid out first and drawn as a box holding its
graph. Pure Python and iterative (never hits the recursion limit). The work grows with the
number of ranks the edges cross: a workflow of a few dozen nodes takes milliseconds, a generated
one of a hundred nodes with long edges back and forth a fraction of a second.
"""

from __future__ import annotations

import textwrap
import unicodedata
from dataclasses import dataclass, field

from devall_cli.graphview.order import order_ranks, place_beside, place_ranks
from devall_cli.graphview.routes import Router
from devall_cli.graphview.shape import VOTE_RULE, VOTE_TITLE, GraphShape, ShapeEdge, ShapeNode

# Keys of the entry and exit marks and of a majority vote's ballot box (no node id has \0).
TASK, OUTPUT, VOTE = "\0task", "\0output", "\0vote"
NODE_H, PSEUDO_W, PSEUDO_H = 42.0, 58.0, 24.0
PAD, TITLE_H = 12.0, 26.0  # inside a subgraph box
RANK_GAP, NODE_GAP = 16.0, 22.0
LABEL_LINE, LABEL_WRAP, LABEL_MAX = 13.0, 30, 90
LOOP_W = 22.0  # room right of a node for an edge to itself
MAX_TEXT = 40  # characters of an id or detail drawn in a node; the tooltip has all


@dataclass
class Box:
    """A placed node (or the entry/exit mark): top-left corner and size in its graph."""

    key: str
    node: ShapeNode | None
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0
    child: Layout | None = None  # the laid out graph of a subgraph node
    loops: list[ShapeEdge] = field(default_factory=list)  # its edges to itself

    @property
    def cx(self) -> float:
        """Horizontal centre."""
        return self.x + self.w / 2


@dataclass
class Route:
    """An edge as drawn: points from its source to its target, and where its label sits."""

    edge: ShapeEdge | None  # None: from the entry mark or to the exit mark
    points: list[tuple[float, float]]
    label: list[str] = field(default_factory=list)
    label_at: tuple[float, float] = (0.0, 0.0)  # top-left of the label text
    back: bool = False  # closes a loop: straight lines up a lane beside its nodes


@dataclass
class Layout:
    """A laid out graph: boxes, routes and the size of the drawing."""

    shape: GraphShape
    boxes: dict[str, Box]
    routes: list[Route]
    width: float
    height: float


@dataclass
class _Item:
    """A node or an edge's point on one rank, while ranks are ordered and placed."""

    key: str
    w: float
    h: float
    rank: int = 0
    x: float = 0.0  # centre
    top: float = 0.0
    label: list[str] = field(default_factory=list)
    point: bool = False  # an edge's point on a rank
    aside: bool = False  # a point of an edge that closes a loop (placed beside the rest)
    side: str = ""  # where such a point runs: right or left of its nodes


def text_width(text: str, size: float, bold: bool = False) -> float:
    """An estimate of the drawn width of `text` in a sans-serif font of `size` pixels."""
    narrow = 0.62 if bold else 0.58
    return sum(size * (1.0 if unicodedata.east_asian_width(ch) in "WF" else narrow) for ch in text)


def short(text: str, limit: int = MAX_TEXT) -> str:
    """`text` cut to `limit` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def edge_label(edge: ShapeEdge) -> list[str]:
    """The lines of an edge's label: condition, fan-out and processor, and what it does not do."""
    parts = [edge.label, *edge.notes]
    if not edge.carry_data:
        parts.append("no data")
    if not edge.trigger:
        parts.append("no trigger")
    lines: list[str] = []
    for part in filter(None, parts):
        lines.extend(textwrap.wrap(short(part, LABEL_MAX), LABEL_WRAP) or [""])
    return lines


def node_caption(node: ShapeNode) -> str:
    """The second line of a node: its type and detail."""
    return f"{node.type} · {node.detail}" if node.detail else node.type


def layout(shape: GraphShape, *, marks: bool = True) -> Layout:
    """Lay out `shape`; `marks` adds the entry (task) and exit (output) marks. A majority vote
    gets a box its nodes feed into, which gives the output."""
    boxes = {node.id: _box(node) for node in shape.nodes}
    edges: list[tuple[str, str, ShapeEdge | None]] = []
    if marks and shape.entries:
        boxes[TASK] = Box(TASK, None, w=PSEUDO_W, h=PSEUDO_H)
        edges.extend((TASK, entry, None) for entry in shape.entries)
    for edge in shape.edges:
        if edge.source == edge.target:
            boxes[edge.source].loops.append(edge)
        else:
            edges.append((edge.source, edge.target, edge))
    ends = shape.end
    if shape.majority_vote:
        width = max(text_width(VOTE_TITLE, 13, bold=True), text_width(VOTE_RULE, 11))
        boxes[VOTE] = Box(VOTE, None, w=width + 24, h=NODE_H)
        edges.extend((node.id, VOTE, None) for node in shape.nodes)
        ends = (VOTE,)
    if marks and ends:
        boxes[OUTPUT] = Box(OUTPUT, None, w=PSEUDO_W, h=PSEUDO_H)
        edges.extend((end, OUTPUT, None) for end in ends)
    roots = ([TASK] if TASK in boxes else []) + list(shape.entries)
    return _Builder(shape, boxes, edges, roots).build()


def _box(node: ShapeNode) -> Box:
    if node.graph is not None:
        child = layout(node.graph, marks=False)
        title = text_width(short(f"{node.id} · {node_caption(node)}", 60), 12, bold=True)
        w = max(child.width + 2 * PAD, title + 2 * PAD)
        return Box(node.id, node, w=w, h=TITLE_H + child.height + PAD, child=child)
    width = max(
        text_width(short(node.id), 13, bold=True), text_width(short(node_caption(node)), 11)
    )
    return Box(node.id, node, w=max(width + 24, 80.0), h=NODE_H)


class _Builder:
    """One layout computation."""

    def __init__(
        self,
        shape: GraphShape,
        boxes: dict[str, Box],
        edges: list[tuple[str, str, ShapeEdge | None]],
        roots: list[str],
    ) -> None:
        self.shape = shape
        self.boxes = boxes
        self.edges = edges
        self.roots = roots
        self.items: dict[str, _Item] = {}
        self.chains: list[list[str]] = []  # per edge: its item keys, top to bottom
        self.back: list[bool] = []
        self.bands: list[tuple[float, float]] = []  # per rank: its top and bottom

    def build(self) -> Layout:
        """Ranks, order, positions, routes."""
        self.back = _back_edges(list(self.boxes), self.edges, self.roots)
        ranks = self._rank()
        for key, box in self.boxes.items():
            extra = _loop_room(box)
            self.items[key] = _Item(key, box.w + extra, box.h, rank=2 * ranks[key])
        self._chain()
        forward = [chain for chain, back in zip(self.chains, self.back, strict=True) if not back]
        ordered = {key: item for key, item in self.items.items() if not item.aside}
        layers = order_ranks(ordered, forward)
        place_ranks(layers, self.items, forward, NODE_GAP)
        loops = [chain for chain, back in zip(self.chains, self.back, strict=True) if back]
        place_beside(layers, self.items, loops, NODE_GAP)
        heights = self._place_vertically(layers)
        router = Router(
            self.boxes, self.items, self.chains, self.back, layers, self.bands, RANK_GAP
        )
        routes = [
            Route(edge, *router.route(index), back=back)
            for index, ((_, _, edge), back) in enumerate(zip(self.edges, self.back, strict=True))
        ]
        width = max(
            [item.x + item.w / 2 for item in self.items.values()]
            + [x + 2 for route in routes for x, _ in route.points],
            default=0.0,
        )
        return Layout(self.shape, self.boxes, routes, width, heights)

    def _rank(self) -> dict[str, int]:
        """Longest path from the sources over the edges, loops turned round."""
        preds: dict[str, list[str]] = {key: [] for key in self.boxes}
        succs: dict[str, list[str]] = {key: [] for key in self.boxes}
        for (source, target, _), back in zip(self.edges, self.back, strict=True):
            upper, lower = (target, source) if back else (source, target)
            succs[upper].append(lower)
            preds[lower].append(upper)
        rank = {key: 0 for key in self.boxes}
        waiting = {key: len(preds[key]) for key in self.boxes}
        ready = [key for key in self.boxes if waiting[key] == 0]
        while ready:
            key = ready.pop()
            for succ in succs[key]:
                rank[succ] = max(rank[succ], rank[key] + 1)
                waiting[succ] -= 1
                if waiting[succ] == 0:
                    ready.append(succ)
        return rank

    def _chain(self) -> None:
        """An item on every odd rank an edge crosses; the middle one carries its label."""
        for index, ((source, target, edge), back) in enumerate(
            zip(self.edges, self.back, strict=True)
        ):
            upper, lower = (target, source) if back else (source, target)
            top, bottom = self.items[upper].rank, self.items[lower].rank
            label = edge_label(edge) if edge is not None else []
            middle = top + 1 + 2 * ((bottom - top - 2) // 4)  # an odd rank: a row of labels
            chain = [upper]
            for rank in range(top + 1, bottom):
                key = f"\0e{index}r{rank}"
                lines = label if rank == middle else []
                width = max((text_width(line, 11) for line in lines), default=0.0)
                height = len(lines) * LABEL_LINE
                self.items[key] = _Item(
                    key,
                    width + 10 if lines else 4,
                    height,
                    rank,
                    label=lines,
                    point=True,
                    aside=back,
                )
                chain.append(key)
            chain.append(lower)
            self.chains.append(chain)

    def _place_vertically(self, layers: list[list[str]]) -> float:
        """Ranks top to bottom, each as tall as its tallest item; returns the total height."""
        y = 0.0
        for layer in layers:
            height = max((self.items[key].h for key in layer), default=0.0)
            self.bands.append((y, y + height))
            for key in layer:
                item = self.items[key]
                item.top = y + (height - item.h) / 2
                box = self.boxes.get(key)
                if box is not None:
                    box.x, box.y = item.x - item.w / 2, item.top
            y += height + RANK_GAP
        return max(y - RANK_GAP, 0.0)


def _loop_room(box: Box) -> float:
    if not box.loops:
        return 0.0
    widest = max(
        (text_width(line, 11) for edge in box.loops for line in edge_label(edge)), default=0.0
    )
    return LOOP_W + (widest + 6 if widest else 0.0)


def _back_edges(
    keys: list[str], edges: list[tuple[str, str, ShapeEdge | None]], roots: list[str]
) -> list[bool]:
    """Which edges close a loop: those reaching a node still open in a depth-first search that
    starts at the roots (the entry mark, the start nodes), then at the rest in order."""
    outgoing: dict[str, list[int]] = {key: [] for key in keys}
    for index, (source, _, _) in enumerate(edges):
        outgoing[source].append(index)
    back = [False] * len(edges)
    state: dict[str, int] = {}  # 1 open, 2 done
    for root in [*roots, *keys]:
        if root in state or root not in outgoing:
            continue
        state[root] = 1
        stack = [(root, 0)]
        while stack:
            key, next_edge = stack[-1]
            if next_edge == len(outgoing[key]):
                state[key] = 2
                stack.pop()
                continue
            stack[-1] = (key, next_edge + 1)
            index = outgoing[key][next_edge]
            target = edges[index][1]
            if state.get(target) == 1:
                back[index] = True
            elif target not in state:
                state[target] = 1
                stack.append((target, 0))
    return back
