"""Ordering items within ranks (fewer crossings) and placing them sideways (straight edges).

Items are anything with `key`, `w`, `rank` and `x` (the layout's nodes and edge points);
`chains` are the edges as lists of item keys, one per rank, top to bottom.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from typing import Protocol

SWEEPS = 8  # barycentre sweeps (down and up) when ordering; more rarely helps small graphs
PLACEMENT_ROUNDS = 8


class Item(Protocol):
    """What ordering and placing need of an item."""

    key: str
    w: float
    rank: int
    x: float
    point: bool  # an edge's point on a rank, not a node


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
