"""Scheduling of a workflow graph (SPEC.md §5): order, triggers, conditions and the final output.

Every node gets one asyncio task that waits for its predecessors, so the nodes of one
topological layer (and any node whose inputs are ready) run concurrently. A node runs only when
it is a start node or an incoming `trigger` edge whose condition held has fired; otherwise it
is `skipped`. The first node failure cancels the nodes still running and is raised.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from devall_cli.config.model import Condition, EdgeConfig, GraphConfig, NodeConfig
from devall_cli.engine.events import EventBus, NodeFinishedEvent, NodeStartedEvent
from devall_cli.errors import ConfigError

NodeExecutor = Callable[[NodeConfig, list[str]], Awaitable[str]]


@dataclass(frozen=True)
class NodeOutcome:
    """How one node ended: `ok` (with its output), `failed` or `skipped`."""

    node_id: str
    status: str
    output: str | None = None
    duration_ms: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class GraphOutcome:
    """Every node's outcome, in declaration order, and the workflow's final output."""

    nodes: tuple[NodeOutcome, ...]
    output: str

    def outputs(self) -> dict[str, str]:
        """The output of every node that produced one."""
        return {n.node_id: n.output for n in self.nodes if n.output is not None}


# --- structure -------------------------------------------------------------------------------


def topological_layers(graph: GraphConfig) -> list[list[str]]:
    """Node ids grouped in layers: each node comes after all its predecessors (declaration order
    within a layer). A cycle is a ConfigError naming it."""
    preds = predecessors(graph)
    remaining = [node.id for node in graph.nodes]
    done: set[str] = set()
    layers: list[list[str]] = []
    while remaining:
        layer = [n for n in remaining if preds[n] <= done]
        if not layer:
            raise ConfigError(f"cycles are not supported yet: {_describe_cycle(graph, remaining)}")
        layers.append(layer)
        done.update(layer)
        remaining = [n for n in remaining if n not in done]
    return layers


def predecessors(graph: GraphConfig) -> dict[str, set[str]]:
    """For every node id, the ids of the nodes with an edge into it."""
    preds: dict[str, set[str]] = {node.id: set() for node in graph.nodes}
    for edge in graph.edges:
        preds[edge.target].add(edge.source)
    return preds


def sinks(graph: GraphConfig) -> list[str]:
    """Nodes without outgoing edges, in declaration order."""
    sources = {edge.source for edge in graph.edges}
    return [node.id for node in graph.nodes if node.id not in sources]


def _describe_cycle(graph: GraphConfig, candidates: Sequence[str]) -> str:
    """`A → B → A` for one cycle among the nodes that could not be ordered."""
    inside = set(candidates)
    succ: dict[str, list[str]] = {n: [] for n in candidates}
    for edge in graph.edges:
        if edge.source in inside and edge.target in inside:
            succ[edge.source].append(edge.target)
    path: list[str] = [candidates[0]]
    # Every remaining node has a predecessor among the remaining ones, so walking backwards
    # would also work; walking forwards from any node with successors reaches a repeat.
    while path[-1] not in path[:-1] and succ[path[-1]]:
        path.append(succ[path[-1]][0])
    start = path.index(path[-1])
    return " → ".join(path[start:])


# --- conditions ------------------------------------------------------------------------------


def condition_holds(condition: Condition, text: str) -> bool:
    """Whether an edge's condition holds for the source node's output."""
    if isinstance(condition, bool):
        return condition
    flags = 0 if condition.case_sensitive else re.IGNORECASE
    haystack = text if condition.case_sensitive else text.casefold()

    def contains(word: str) -> bool:
        return (word if condition.case_sensitive else word.casefold()) in haystack

    if any(contains(word) for word in condition.none):
        return False
    if any(contains(word) for word in condition.any):
        return True
    if any(re.search(pattern, text, flags) for pattern in condition.regex):
        return True
    return not (condition.any or condition.regex)


# --- final output ----------------------------------------------------------------------------


def final_output(graph: GraphConfig, outputs: Mapping[str, str]) -> str:
    """The first `end` node's output; else the first sink's that produced one; else ""."""
    for node_id in (*graph.end, *sinks(graph)):
        if node_id in outputs:
            return outputs[node_id]
    return ""


# --- scheduling ------------------------------------------------------------------------------


class _Scheduler:
    """Runs one graph: a task per node, each awaiting its predecessors' outcomes."""

    def __init__(
        self, graph: GraphConfig, task: str, execute: NodeExecutor, bus: EventBus, run_id: str
    ) -> None:
        self.graph = graph
        self.task = task
        self.execute = execute
        self.bus = bus
        self.run_id = run_id
        self.incoming: dict[str, list[EdgeConfig]] = {node.id: [] for node in graph.nodes}
        for edge in graph.edges:
            self.incoming[edge.target].append(edge)
        loop = asyncio.get_running_loop()
        self.outcomes: dict[str, asyncio.Future[NodeOutcome]] = {
            node.id: loop.create_future() for node in graph.nodes
        }

    async def run(self) -> GraphOutcome:
        topological_layers(self.graph)  # refuse cycles before anything starts
        tasks = [
            asyncio.create_task(self._run_node(node), name=f"node:{node.id}")
            for node in self.graph.nodes
        ]
        try:
            await _wait_all_or_first_error(tasks)
        finally:
            for future in self.outcomes.values():
                if not future.done():
                    future.cancel()
        nodes = tuple(self.outcomes[node.id].result() for node in self.graph.nodes)
        outputs = {n.node_id: n.output for n in nodes if n.output is not None}
        return GraphOutcome(nodes=nodes, output=final_output(self.graph, outputs))

    def _inputs(self, node: NodeConfig, before: Mapping[str, NodeOutcome]) -> list[str] | None:
        """The node's inputs, or None when it must be skipped."""
        fired = node.id in self.graph.start
        inputs: list[str] = []
        for edge in self.incoming[node.id]:
            source = before[edge.source]
            if source.output is None or not condition_holds(edge.condition, source.output):
                continue
            fired = fired or edge.trigger
            if edge.carry_data:
                inputs.append(source.output)
        if not fired:
            return None
        return [self.task] if node.id in self.graph.start else inputs

    async def _run_node(self, node: NodeConfig) -> None:
        before = {edge.source: await self.outcomes[edge.source] for edge in self.incoming[node.id]}
        if any(outcome.status in ("failed", "not_run") for outcome in before.values()):
            # The run is failing; this node is not skipped by the graph, it is never reached.
            self.outcomes[node.id].set_result(NodeOutcome(node.id, "not_run"))
            return
        inputs = self._inputs(node, before)
        if inputs is None:
            self._finish(NodeOutcome(node.id, "skipped"))
            return
        self.bus.emit(NodeStartedEvent(run_id=self.run_id, node_id=node.id, inputs=inputs))
        started = time.monotonic()
        try:
            output = await self.execute(node, inputs)
        except asyncio.CancelledError:
            self._finish(NodeOutcome(node.id, "failed", None, _ms(started), "cancelled"))
            raise
        except BaseException as exc:
            self._finish(NodeOutcome(node.id, "failed", None, _ms(started), _message(exc)))
            raise
        self._finish(NodeOutcome(node.id, "ok", output, _ms(started)))

    def _finish(self, outcome: NodeOutcome) -> None:
        self.outcomes[outcome.node_id].set_result(outcome)
        self.bus.emit(
            NodeFinishedEvent(
                run_id=self.run_id,
                node_id=outcome.node_id,
                status=outcome.status,
                output=outcome.output,
                duration_ms=outcome.duration_ms,
                error=outcome.error,
            )
        )


async def _wait_all_or_first_error(tasks: list[asyncio.Task[None]]) -> None:
    """Wait for every task; on the first failure cancel the rest and raise that failure."""
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        await _cancel_all(tasks)
        raise
    if pending:
        await _cancel_all(list(pending))
    for task in tasks:  # declaration order among the tasks that failed first
        if task in done and not task.cancelled():
            error = task.exception()
            if error is not None:
                raise error


async def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


def _message(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    return str(message) if message else f"{type(exc).__name__}: {exc}"


async def run_graph(
    graph: GraphConfig,
    *,
    task: str,
    execute: NodeExecutor,
    bus: EventBus,
    run_id: str,
) -> GraphOutcome:
    """Run every node that should run, concurrently where the graph allows; emit node events."""
    return await _Scheduler(graph, task, execute, bus, run_id).run()
