"""Ordering items within ranks (fewer crossings) and placing them sideways (straight edges).

Items are anything with `key`, `w`, `rank` and `x` (the layout's nodes and edge points);
`chains` are the edges as lists of item keys, one per rank, top to bottom. The edges that close
a loop are left out of both; their points are placed last, beside the rest (`place_beside`).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from typing import Protocol

SWEEPS = 8  # barycentre sweeps (down and up) when ordering; more rarely helps small graphs
PLACEMENT_ROUNDS = 8
CLEAR = 3.0  # room a loop's way back keeps from anything it passes on a rank
NEAR = 1e-6  # closer than this is touching, not overlapping


class Item(Protocol):
    """What ordering and placing need of an item."""

    key: str
    w: float
    rank: int
    x: float
    point: bool  # an edge's point on a rank, not a node
    side: str  # a point of an edge that closes a loop: the side it runs on (right, left)


def _neighbours(
    chains: Sequence[Sequence[str]],
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    above: dict[str, list[str]] = {}
    below: dict[str, list[str]] = {}
    for chain in chains:
        for upper, lower in itertools.pairwise(chain):
            below.setdefault(upper, []).append(lower)
            above.setdefault(lower, []).append(upper)
    return above, below


def order_ranks(items: Mapping[str, Item], chains: Sequence[Sequence[str]]) -> list[list[str]]:
    """The items of each rank, left to right, after barycentre sweeps (the best order seen)."""
    top = max((item.rank for item in items.values()), default=-1)
    layers: list[list[str]] = [[] for _ in range(top + 1)]
    for key, item in items.items():
        layers[item.rank].append(key)
    above, below = _neighbours(chains)
    for index in range(1, len(layers)):
        _sort_by(layers[index], layers[index - 1], above)
    best, best_crossings = [list(layer) for layer in layers], crossings(layers, below)
    for sweep in range(SWEEPS):
        if best_crossings == 0:
            break
        if sweep % 2 == 0:
            for index in range(1, len(layers)):
                _sort_by(layers[index], layers[index - 1], above)
        else:
            for index in range(len(layers) - 2, -1, -1):
                _sort_by(layers[index], layers[index + 1], below)
        count = crossings(layers, below)
        if count < best_crossings:
            best, best_crossings = [list(layer) for layer in layers], count
    return best


def _sort_by(layer: list[str], reference: list[str], links: Mapping[str, list[str]]) -> None:
    """Sort `layer` in place by the mean position of each item's links in `reference`."""
    position = {key: i for i, key in enumerate(reference)}
    scale = len(reference) / max(len(layer), 1)

    def barycentre(entry: tuple[int, str]) -> tuple[float, int]:
        index, key = entry
        linked = [position[other] for other in links.get(key, ()) if other in position]
        return (sum(linked) / len(linked) if linked else index * scale), index

    layer[:] = [key for _, key in sorted(enumerate(layer), key=barycentre)]


def crossings(layers: Sequence[Sequence[str]], below: Mapping[str, list[str]]) -> int:
    """How many pairs of edge segments cross between neighbouring ranks."""
    total = 0
    for upper, lower in itertools.pairwise(layers):
        position = {key: i for i, key in enumerate(lower)}
        pairs = sorted(
            (i, position[other])
            for i, key in enumerate(upper)
            for other in below.get(key, ())
            if other in position
        )
        seen: list[int] = []
        for _, target in pairs:
            total += len(seen) - bisect.bisect_right(seen, target)
            bisect.insort(seen, target)
    return total


def place_ranks(
    layers: Sequence[Sequence[str]],
    items: Mapping[str, Item],
    chains: Sequence[Sequence[str]],
    gap: float,
) -> None:
    """Set each item's `x` (its centre): in order, apart by `gap`, near its neighbours."""
    above, below = _neighbours(chains)
    for layer in layers:
        left = 0.0
        for key in layer:
            item = items[key]
            item.x = left + item.w / 2
            left += item.w + gap
    for round_ in range(PLACEMENT_ROUNDS):
        downwards = round_ % 2 == 0
        order = range(len(layers)) if downwards else range(len(layers) - 1, -1, -1)
        links = above if downwards else below
        for index in order:
            _align(layers[index], items, links, gap)
    for layer in layers:  # a last pass towards both sides evens out forks and joins
        both = {key: [*above.get(key, ()), *below.get(key, ())] for key in layer}
        _align(layer, items, both, gap)
    left_edge = min(
        (items[key].x - items[key].w / 2 for layer in layers for key in layer), default=0.0
    )
    for item in items.values():
        item.x -= left_edge


def _align(
    layer: Sequence[str], items: Mapping[str, Item], links: Mapping[str, list[str]], gap: float
) -> None:
    """Move a rank's items towards the mean of their linked items, keeping order and gaps.

    The least-squares positions under the order constraints (pool adjacent violators on the
    positions minus their minimum offsets).
    """
    if not layer:
        return
    if len(layer) == 1:  # most ranks of a long chain: the item simply goes to the mean
        item = items[layer[0]]
        linked = [items[other].x for other in links.get(layer[0], ()) if other in items]
        if linked:  # `+ 0.0` as below: never a negative zero
            item.x = sum(linked) / len(linked) + 0.0
        return
    offsets = [0.0]
    for left, right in itertools.pairwise(layer):
        offsets.append(offsets[-1] + (items[left].w + items[right].w) / 2 + gap)
    blocks: list[list[float]] = []  # [weight, weighted sum, count]
    for key, offset in zip(layer, offsets, strict=True):
        linked = [items[other].x for other in links.get(key, ()) if other in items]
        wanted = sum(linked) / len(linked) if linked else items[key].x
        weight = 2.0 if items[key].point else 1.0  # edge points pull harder: straight lines
        blocks.append([weight, weight * (wanted - offset), 1])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][0] > blocks[-1][1] / blocks[-1][0]:
            weight_, total, count = blocks.pop()
            blocks[-1][0] += weight_
            blocks[-1][1] += total
            blocks[-1][2] += count
    index = 0
    for weight, total, count in blocks:
        for _ in range(int(count)):
            items[layer[index]].x = total / weight + offsets[index]
            index += 1


def place_beside(
    layers: list[list[str]],
    items: Mapping[str, Item],
    chains: Sequence[Sequence[str]],
    gap: float,
) -> None:
    """Place the points of the edges that close a loop and add them to their ranks.

    Each edge gets one straight lane beside its two nodes, the nearest place free on every rank
    it crosses: on their right, or on their left when only there it can meet both nodes without
    passing something on their ranks. Shorter loops go first and keep the inner lanes.
    """
    # Per rank: the sides (left, right) of what is there, left to right; none overlaps another.
    taken = [[_span(items[key]) for key in layer] for layer in layers]
    for chain in sorted(chains, key=lambda chain: items[chain[-1]].rank - items[chain[0]].rank):
        ends = [items[chain[0]], items[chain[-1]]]
        points = [items[key] for key in chain[1:-1]]
        right = _fit(points, taken, max(e.x + e.w / 2 for e in ends) + gap / 2, gap / 2, True)
        left = _fit(points, taken, min(e.x - e.w / 2 for e in ends) - gap / 2, gap / 2, False)
        blocked_right = sum(_blocked(end, taken[end.rank], right + 2, True) for end in ends)
        blocked_left = sum(_blocked(end, taken[end.rank], left - 2, False) for end in ends)
        on_right = blocked_right <= blocked_left
        for point in points:
            point.side = "right" if on_right else "left"
            point.x = right + point.w / 2 if on_right else left - point.w / 2
            bisect.insort(taken[point.rank], _span(point))
            layer = layers[point.rank]
            layer.insert(bisect.bisect(layer, point.x, key=lambda k: items[k].x), point.key)
    shift = min((item.x - item.w / 2 for item in items.values()), default=0.0)
    for item in items.values():  # a lane on the left may start left of the rest
        item.x -= min(shift, 0.0)


def _span(item: Item) -> tuple[float, float]:
    return item.x - item.w / 2, item.x + item.w / 2


def _fit(
    points: Sequence[Item],
    taken: Sequence[list[tuple[float, float]]],
    start: float,
    room: float,
    rightwards: bool,
) -> float:
    """The side the points share (their left side going right, else their right side): the
    first one from `start` where every point keeps `room` from what is there."""
    at, moved = start, True
    while moved:  # each pass moves past what is in the way on each rank, in order
        moved = False
        for point in points:
            spans = taken[point.rank]
            # `room - NEAR`: a point just moved to `room` from a span is past it (rounding).
            if rightwards:
                index = bisect.bisect_right(spans, at - room + NEAR, key=lambda span: span[1])
                while index < len(spans) and spans[index][0] - room < at + point.w - NEAR:
                    at, moved, index = spans[index][1] + room, True, index + 1
            else:
                index = bisect.bisect_left(spans, at + room - NEAR, key=lambda span: span[0]) - 1
                while index >= 0 and spans[index][1] + room > at - point.w + NEAR:
                    at, moved, index = spans[index][0] - room, True, index - 1
    return at


def _blocked(end: Item, spans: list[tuple[float, float]], lane: float, rightwards: bool) -> bool:
    """Whether something on the rank of node `end` stands between it and a lane at `lane`."""
    if rightwards:
        index = bisect.bisect_left(spans, end.x + end.w / 2, key=lambda span: span[0])
        return index < len(spans) and spans[index][0] < lane + CLEAR
    index = bisect.bisect_right(spans, end.x - end.w / 2, key=lambda span: span[1]) - 1
    return index >= 0 and spans[index][1] > lane - CLEAR
