"""Where a laid out graph's edges run: their ports on the nodes, and the way round of loops.

A forward edge leaves its node's bottom and enters the next one's top, through its points on
the ranks between; it runs straight down through every rank that holds nodes and bends only
between them, so it crosses no node. An edge that closes a loop runs in its own lane instead
(order.place_beside: right of its nodes, or left): it leaves its source's side, goes up the lane
and enters its target's side, in straight lines, stepping sideways only in the gaps between
ranks; so it crosses no node and never runs along a forward edge. Ports are indexed by node
once: routing is linear in the number of edges.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Protocol

from devall_cli.graphview.order import CLEAR

Point = tuple[float, float]
STEP_OUT = 6.0  # how far beside its node a loop's edge turns when it cannot go straight
LABEL_GAP = 6.0  # between an edge and its label


class Spot(Protocol):
    """What routing needs of a placed item (a node or an edge's point on a rank)."""

    key: str
    w: float
    h: float
    rank: int
    x: float  # centre
    top: float
    label: list[str]
    side: str  # a point of a loop's way back: right or left of its nodes


class Frame(Protocol):
    """What routing needs of a placed node box."""

    x: float
    y: float
    w: float
    h: float


def lane_x(item: Spot) -> float:
    """Where an edge runs through its point on a rank: along the side nearer its nodes (the
    left one, but for a lane left of its nodes), its label beside it."""
    if item.side == "left":
        return item.x + item.w / 2 - 2
    return item.x - item.w / 2 + 2


def label_x(item: Spot) -> float:
    """Where the label of an edge starts on its point."""
    if item.side == "left":
        return item.x - item.w / 2 + 2
    return lane_x(item) + LABEL_GAP


class Router:
    """The routes of one layout: every edge's points, its label and where the label sits."""

    def __init__(
        self,
        boxes: Mapping[str, Frame],
        items: Mapping[str, Spot],
        chains: Sequence[Sequence[str]],
        back: Sequence[bool],
        layers: Sequence[Sequence[str]],
        bands: Sequence[tuple[float, float]],
        rank_gap: float,
    ) -> None:
        self.boxes, self.items, self.chains, self.back = boxes, items, chains, back
        self.bands, self.half_gap = bands, rank_gap / 2
        # Beside each item on its rank: the left side of the next, the right side of the last.
        self.next_left: dict[str, float] = {}
        self.last_right: dict[str, float] = {}
        for layer in layers:
            for left, right in itertools.pairwise(layer):
                self.next_left[left] = items[right].x - items[right].w / 2
                self.last_right[right] = items[left].x + items[left].w / 2
        self.ports: dict[tuple[int, bool], tuple[int, int]] = {}  # (edge, at source) -> place
        self._index_ports()

    def _index_ports(self) -> None:
        """Each edge end's place among the ends on the same side of the same node, in order."""
        sides: dict[tuple[str, str], list[tuple[float, float, int, bool]]] = {}
        for index, chain in enumerate(self.chains):
            upper, lower = chain[0], chain[-1]
            if self.back[index]:
                # Top to bottom: the edges leaving upwards, inner lane first, then those
                # arriving from below, outer lane first; so none crosses another.
                side = self.items[chain[1]].side
                sign = 1.0 if side == "right" else -1.0
                leaving = sign * lane_x(self.items[chain[-2]])
                arriving = sign * lane_x(self.items[chain[1]])
                sides.setdefault((lower, side), []).append((0, leaving, index, True))
                sides.setdefault((upper, side), []).append((1, -arriving, index, False))
            else:
                below, above = self.items[chain[1]].x, self.items[chain[-2]].x
                sides.setdefault((upper, "bottom"), []).append((0, below, index, True))
                sides.setdefault((lower, "top"), []).append((0, above, index, False))
        for ends in sides.values():
            ends.sort()
            for place, (_, _, index, at_source) in enumerate(ends):
                self.ports[(index, at_source)] = (place, len(ends))

    def _spread(
        self, index: int, at_source: bool, middle: float, length: float, most: float
    ) -> float:
        """An edge end's spot along a side: the ends spread evenly around its middle."""
        place, count = self.ports[(index, at_source)]
        if count <= 1:
            return middle
        step = min(most, length * 0.7 / (count - 1))
        return middle + (place - (count - 1) / 2) * step

    def route(self, index: int) -> tuple[list[Point], list[str], Point]:
        """An edge's points from its source to its target, its label and the label's corner."""
        chain = self.chains[index]
        label: list[str] = []
        label_at = (0.0, 0.0)
        for key in chain[1:-1]:
            item = self.items[key]
            if item.label:
                label, label_at = item.label, (label_x(item), item.top)
        if self.back[index]:
            return self._round(index), label, label_at
        return self._down(index), label, label_at

    def _down(self, index: int) -> list[Point]:
        """A forward edge: from the bottom of its upper node to the top of its lower one.

        It runs straight down through each rank it crosses and bends only between ranks and on
        the ranks between the nodes' ranks (where only edges are), so it crosses no node.
        """
        chain = self.chains[index]
        upper, lower = self.boxes[chain[0]], self.boxes[chain[-1]]
        start = self._spread(index, True, upper.x + upper.w / 2, upper.w, 14.0)
        points = [(start, upper.y + upper.h), (start, self.bands[self.items[chain[0]].rank][1])]
        for key in chain[1:-1]:
            item = self.items[key]
            top, bottom = self.bands[item.rank]
            if item.label:  # straight down beside its label
                points.extend(((lane_x(item), item.top), (lane_x(item), item.top + item.h)))
            elif item.rank % 2 == 0:  # beside the nodes of the rank
                points.extend(((item.x, top), (item.x, bottom)))
            else:
                points.append((item.x, item.top))
        end = self._spread(index, False, lower.x + lower.w / 2, lower.w, 14.0)
        points.extend(((end, self.bands[self.items[chain[-1]].rank][0]), (end, lower.y)))
        return _simplify(points)

    def _round(self, index: int) -> list[Point]:
        """An edge closing a loop: out of its source's side, up its lane, into its target's
        side; sideways steps only between ranks."""
        chain = self.chains[index]
        lane = [self.items[key] for key in reversed(chain[1:-1])]  # from the source upwards
        points = self._leave(index, chain[-1], lane_x(lane[0]))
        for below, above in itertools.pairwise(lane):
            x0, x1 = lane_x(below), lane_x(above)
            if abs(x0 - x1) > 0.05:
                y = self._gap_above(below.rank, index)
                points.extend(((x0, y), (x1, y)))
        points.extend(self._enter(index, chain[0], lane_x(lane[-1])))
        return _simplify(points)

    def _clear(self, key: str, x: float, side: str) -> bool:
        """Whether a line at `x` beside node `key` meets nothing else on the node's rank."""
        item = self.items[key]
        if side == "left":
            low = self.last_right.get(key, x - CLEAR) + CLEAR
            return low <= x <= item.x - item.w / 2 - CLEAR
        return item.x + item.w / 2 + CLEAR <= x <= self.next_left.get(key, x + CLEAR) - CLEAR

    def _turn(self, index: int, key: str, side: str) -> float:
        """Where a loop's edge turns up or down just beside node `key` (its own offset)."""
        item = self.items[key]
        place, _ = self.ports[(index, self.chains[index][-1] == key)]
        offset = STEP_OUT + 4.0 * min(place, 3)
        if side == "left":
            return item.x - item.w / 2 - offset
        return item.x + item.w / 2 + offset

    def _leave(self, index: int, key: str, lane: float) -> list[Point]:
        box, side = self.boxes[key], self.items[self.chains[index][1]].side
        y = self._spread(index, True, box.y + box.h / 2, box.h, 10.0)
        edge = box.x if side == "left" else box.x + box.w
        if self._clear(key, lane, side):
            return [(edge, y), (lane, y)]
        turn, gap = self._turn(index, key, side), self._gap_above(self.items[key].rank, index)
        return [(edge, y), (turn, y), (turn, gap), (lane, gap)]

    def _enter(self, index: int, key: str, lane: float) -> list[Point]:
        box, side = self.boxes[key], self.items[self.chains[index][1]].side
        y = self._spread(index, False, box.y + box.h / 2, box.h, 10.0)
        edge = box.x if side == "left" else box.x + box.w
        if self._clear(key, lane, side):
            return [(lane, y), (edge, y)]
        turn = self._turn(index, key, side)
        gap = self._gap_above(self.items[key].rank + 1, index)
        return [(lane, gap), (turn, gap), (turn, y), (edge, y)]

    def _gap_above(self, rank: int, index: int) -> float:
        """A height in the gap above `rank`, a little apart for each edge."""
        return self.bands[rank][0] - self.half_gap + 3.0 * (index % 3 - 1)


def _simplify(points: list[Point]) -> list[Point]:
    """The points without repeats and without the middle of three in a straight line."""
    kept: list[Point] = []
    for point in points:
        if kept and abs(point[0] - kept[-1][0]) < 0.05 and abs(point[1] - kept[-1][1]) < 0.05:
            continue
        if len(kept) >= 2 and _straight(kept[-2], kept[-1], point):
            kept[-1] = point
        else:
            kept.append(point)
    return kept


def _straight(a: Point, b: Point, c: Point) -> bool:
    return (abs(a[0] - b[0]) < 0.05 and abs(b[0] - c[0]) < 0.05) or (
        abs(a[1] - b[1]) < 0.05 and abs(b[1] - c[1]) < 0.05
    )
