"""Graph shapes: strongly connected components (cycles), DAG layers, and super-node layers.

These are ChatDev's scheduling structures (workflow/topology_builder.py, cycle_manager.py):
cycles are found with Tarjan's algorithm over every edge; a graph with cycles is scheduled as a
DAG of "super nodes" in which each cycle is one item. All functions here are pure and iterative
(a generated graph of thousands of nodes must not hit the recursion limit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def strongly_connected(
    order: Sequence[str], successors: Mapping[str, Sequence[str]]
) -> list[list[str]]:
    """The cycles: components of more than one node, or of one node with an edge to itself.

    Tarjan's algorithm in `order`; each component lists its nodes in `order`.
    """
    position = {node: i for i, node in enumerate(order)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in order:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child = work[-1]
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            nexts = successors.get(node, ())
            if child < len(nexts):
                work[-1] = (node, child + 1)
                succ = nexts[child]
                if succ not in index:
                    work.append((succ, 0))
                elif succ in on_stack:
                    low[node] = min(low[node], index[succ])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in successors.get(node, ()):
                    found.append(sorted(component, key=lambda n: position.get(n, 0)))
    return found


def dag_layers(
    nodes: Sequence[str],
    predecessors: Mapping[str, Sequence[str]],
    successors: Mapping[str, Sequence[str]],
) -> list[list[str]]:
    """Kahn's layers: a node comes once every predecessor is placed (ChatDev's in-degree count).

    Nodes whose in-degree never reaches 0 (on a cycle) are left out, as in ChatDev.
    """
    degree = {node: len(predecessors.get(node, ())) for node in nodes}
    frontier = [node for node in nodes if degree[node] == 0]
    layers: list[list[str]] = []
    while frontier:
        layers.append(frontier)
        following: list[str] = []
        for node in frontier:
            for succ in successors.get(node, ()):
                if succ not in degree:
                    continue
                degree[succ] -= 1
                if degree[succ] == 0:
                    following.append(succ)
        frontier = following
    return layers


@dataclass(frozen=True)
class Item:
    """One thing to run in a layer: a node, or a cycle (its nodes in declaration order)."""

    nodes: tuple[str, ...]
    is_cycle: bool = False

    @property
    def node(self) -> str:
        """The node of a node item."""
        return self.nodes[0]


def super_layers(
    nodes: Sequence[str],
    edges: Sequence[tuple[str, str]],
    cycles: Sequence[Sequence[str]],
) -> list[list[Item]]:
    """Layers of super nodes: each cycle collapsed to one item, the rest one item per node."""
    owner: dict[str, int] = {}
    items: list[Item] = []
    for cycle in cycles:
        for node in cycle:
            owner[node] = len(items)
        items.append(Item(tuple(cycle), is_cycle=True))
    for node in nodes:
        if node not in owner:
            owner[node] = len(items)
            items.append(Item((node,)))
    preds: dict[int, set[int]] = {i: set() for i in range(len(items))}
    for source, target in edges:
        if source in owner and target in owner and owner[source] != owner[target]:
            preds[owner[target]].add(owner[source])
    order = [str(i) for i in range(len(items))]
    succs: dict[str, list[str]] = {key: [] for key in order}
    for later, earlier in preds.items():
        for before in sorted(earlier):
            succs[str(before)].append(str(later))
    pred_lists = {str(t): [str(s) for s in sorted(p)] for t, p in preds.items()}
    return [[items[int(key)] for key in layer] for layer in dag_layers(order, pred_lists, succs)]
