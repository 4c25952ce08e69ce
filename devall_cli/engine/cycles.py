"""Cycles, run as ChatDev's cycle executor runs them (workflow/executor/cycle_executor.py).

A cycle is entered at one node: the only node of the cycle that an edge from outside has
triggered, else the cycle's start node; with neither, the cycle is skipped. Each iteration lays
the cycle out in layers (edges into the entry are ignored on the first pass, edges into every
triggered node on later passes), runs nested cycles the same way, and runs the triggered nodes
(the entry always runs on the first pass). The items of a layer start together: which of them
run is decided as the layer begins, and each node reads its queue then. The cycle ends when a
node of it fires an edge that leaves it (at once, after that layer), when no edge from inside
re-triggers the entry, or after ITERATION_LIMIT iterations (ChatDev's fixed limit; the trace
says so).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from devall_cli.engine.topology import Item, dag_layers, strongly_connected, super_layers
from devall_cli.errors import RunFailedError

if TYPE_CHECKING:
    from devall_cli.engine.graph import GraphRun, Link, NodeState

ITERATION_LIMIT = 100


class CycleRunner:
    """Runs the cycles of one graph run."""

    def __init__(self, graph: GraphRun) -> None:
        self.graph = graph
        self.nodes = graph.nodes

    async def run_cycle(self, cycle: list[str]) -> None:
        """Run a top-level cycle from its entry, if it has one this time."""
        starts = [n for n in self.graph.graph.start if n in cycle]
        entry = self._entry(cycle, starts[0] if starts else None)
        if entry is not None:
            await self._iterate(cycle, entry)

    def _entry(self, cycle: Sequence[str], configured: str | None) -> str | None:
        inside = set(cycle)
        entered = [
            node_id
            for node_id in cycle
            if any(
                link.config.source not in inside and link.config.trigger and link.triggered
                for link in self.nodes[node_id].incoming
            )
        ]
        if not entered:
            return configured
        if len(entered) > 1:
            raise RunFailedError(
                f"the cycle {self._names(cycle)} was entered at more than one node "
                f"({', '.join(self._path(n) for n in entered)}); a cycle must be entered "
                "at one node only"
            )
        if configured is not None and entered[0] != configured:
            raise RunFailedError(
                f"the cycle {self._names(cycle)} was entered at '{self._path(entered[0])}', "
                f"but its start node is '{self._path(configured)}'"
            )
        return entered[0]

    async def _iterate(self, cycle: list[str], entry: str) -> set[str]:
        """Iterate a cycle; the nodes outside it that it triggered when it ended."""
        for iteration in range(ITERATION_LIMIT):
            first = iteration == 0
            inner = self._inner_cycles(cycle, entry)
            layers = self._layers(cycle, entry, inner, first)
            external = await self._run_layers(layers, cycle, entry, first)
            if external:
                return external
            if not self._retriggered(entry, cycle):
                return set()
        # Here, not at the top: `devall validate` reads ITERATION_LIMIT without the events.
        from devall_cli.events import GraphNoteEvent

        self.graph.env.emit(
            GraphNoteEvent(
                run_id=self.graph.env.run_id,
                graph=self.graph.prefix.rstrip("/"),
                note="cycle_limit",
                message=(
                    f"the cycle {self._names(cycle)} stopped after {ITERATION_LIMIT} "
                    "iterations (ChatDev's limit) without an exit edge firing"
                ),
                details={"nodes": [self._path(n) for n in cycle], "entry": self._path(entry)},
            )
        )
        return set()

    # --- the layout of one iteration -----------------------------------------------------

    def _scoped(self, scope: Sequence[str], cleared: str | None) -> dict[str, list[Link]]:
        """Trigger edges that stay inside `scope`, without those into `cleared`."""
        inside = set(scope)
        return {
            node_id: [
                link
                for link in self.nodes[node_id].outgoing
                if link.config.target in inside
                and link.config.trigger
                and link.config.target != cleared
            ]
            for node_id in scope
        }

    def _inner_cycles(self, scope: list[str], entry: str) -> list[list[str]]:
        scoped = self._scoped(scope, entry)
        successors = {n: [link.config.target for link in links] for n, links in scoped.items()}
        return [c for c in strongly_connected(scope, successors) if len(c) > 1]

    def _layers(
        self, scope: list[str], entry: str, inner: list[list[str]], first: bool
    ) -> list[list[Item]]:
        scoped = self._scoped(scope, None)
        successors = {n: [link.config.target for link in links] for n, links in scoped.items()}
        predecessors: dict[str, list[str]] = {n: [] for n in scope}
        for source, targets in successors.items():
            for target in targets:
                if source not in predecessors[target]:
                    predecessors[target].append(source)
        excluded = {entry} if first else {n for n in scope if self.nodes[n].is_triggered()}
        for node_id in excluded:
            predecessors[node_id] = []
        if not inner:
            return [
                [Item((n,)) for n in layer] for layer in dag_layers(scope, predecessors, successors)
            ]
        edges = [(s, t) for s, targets in successors.items() for t in targets if t not in excluded]
        return super_layers(scope, edges, inner)

    # --- running it ----------------------------------------------------------------------

    async def _run_layers(
        self, layers: list[list[Item]], scope: list[str], entry: str, first: bool
    ) -> set[str]:
        from devall_cli.engine.graph import gather_or_cancel

        inside = set(scope)
        external: set[str] = set()

        async def run_cycle(nested: list[str], nested_entry: str) -> None:
            left = await self._iterate(nested, nested_entry)
            external.update(n for n in left if n not in inside)

        async def run_node(node: NodeState) -> None:
            external.update(await self._run_node(node, inside))

        for layer in layers:
            # The items of a layer start together (ChatDev: in parallel threads), so what runs
            # is decided before any of them has reset or fired an edge.
            starting: list[Callable[[], Awaitable[None]]] = []
            for item in layer:
                if item.is_cycle:
                    nested_entry = self._entry(list(item.nodes), None)
                    if nested_entry is not None:
                        starting.append(partial(run_cycle, list(item.nodes), nested_entry))
                elif (first and item.node == entry) or self.nodes[item.node].is_triggered():
                    starting.append(partial(run_node, self.nodes[item.node]))
            if starting:
                await gather_or_cancel([start() for start in starting])
            if external:
                break
        if external:
            for node_id in scope:
                self.nodes[node_id].reset_triggers()
        return external

    async def _run_node(self, node: NodeState, inside: set[str]) -> set[str]:
        for link in node.outgoing:
            link.triggered = False
        await self.graph.execute(node)
        return {
            link.config.target
            for link in node.outgoing
            if link.config.target not in inside and link.triggered
        }

    def _retriggered(self, entry: str, cycle: Sequence[str]) -> bool:
        inside = set(cycle)
        return any(
            link.config.source in inside and link.config.trigger and link.triggered
            for link in self.nodes[entry].incoming
        )

    def _path(self, node_id: str) -> str:
        return self.nodes[node_id].path

    def _names(self, cycle: Sequence[str]) -> str:
        shown = [self._path(n) for n in cycle[:8]]
        more = f", ... ({len(cycle)} nodes)" if len(cycle) > 8 else ""
        return "(" + ", ".join(shown) + more + ")"
