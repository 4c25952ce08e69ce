"""Running a graph as ChatDev 2.0 runs it (SPEC.md §5, reference/chatdev-semantics.md §3).

Every node has an input queue of messages. A node runs when it is triggered (a start node, or
an incoming `trigger` edge fired), on everything its queue holds; afterwards the queue keeps
only what `context_window` allows. Each message the node emits goes along every outgoing edge:
the condition is tested on its text, the target's queue is cleared if the edge says so, the
payload is delivered (`carry_data`, role `user`, or `assistant` on a self-loop, processed by
`process`), and the edge fires (`trigger`).

An acyclic graph runs in topological layers, the triggered nodes of a layer concurrently. A
graph with cycles runs as layers of "super nodes" where each cycle is one item, iterated as
ChatDev's cycle executor does (`cycles.py`). `is_majority_voting` gives every node the task and
takes the most common answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli.cassette import active_tape, exchange_scope
from devall_cli.config.model import EdgeConfig, GraphConfig, NodeConfig
from devall_cli.edges import CONDITION_TYPES, PROCESSOR_TYPES, EdgeEnv
from devall_cli.edges.base import Condition, Processor
from devall_cli.engine.topology import Item, dag_layers, strongly_connected, super_layers
from devall_cli.errors import DevallError, RunFailedError
from devall_cli.events import (
    EdgeEvent,
    Event,
    EventBus,
    GraphNoteEvent,
    NodeFinishedEvent,
    NodeStartedEvent,
)
from devall_cli.memory.bank import MemoryBank, MemoryContext
from devall_cli.messages import ASSISTANT, USER, Message, task_messages
from devall_cli.nodes import NODE_TYPES, NodeRun, NodeType
from devall_cli.nodes.base import ToolDispatcher
from devall_cli.providers.base import Provider

DEFAULT_MAX_STEPS = 1000
ProviderFactory = Callable[..., Provider]  # (agent config, node state) -> a provider


@dataclass
class RunEnv:
    """What every graph of one run shares: events, tools, models, and the step guard."""

    run_id: str
    bus: EventBus
    tools: ToolDispatcher
    make_provider: ProviderFactory
    edge_env: EdgeEnv
    run_dir: Path | None = None
    workflow_dir: Path | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    steps: int = 0
    extras: dict[str, Any] = field(default_factory=dict)  # NodeRun.extras, run-wide
    # One lock per serial node type (human, python): their visits run one at a time.
    serial: dict[str, asyncio.Lock] = field(default_factory=dict)
    visits: dict[str, int] = field(default_factory=dict)  # node path -> visits so far

    def next_visit(self, path: str) -> int:
        """The run-wide number of this visit of the node at `path` (1 for the first).

        Counted per run, not per graph run: each visit of a subgraph node runs a fresh copy
        of its graph, and the visits of its nodes go on counting across those copies.
        """
        self.visits[path] = self.visits.get(path, 0) + 1
        return self.visits[path]
    memory: MemoryContext = field(default_factory=MemoryContext)  # what memory stores share

    def emit(self, event: Event) -> None:
        """Publish an event of this run."""
        self.bus.emit(event)

    def serial_lock(self, kind: NodeType) -> contextlib.AbstractAsyncContextManager[Any]:
        """Held while a node of `kind` runs: its type's lock if the type is serial."""
        if not kind.serial:
            return contextlib.nullcontext()
        return self.serial.setdefault(kind.name, asyncio.Lock())

    def take_step(self, path: str) -> None:
        """Count one node visit; past `max_steps` the run ends (a loop that never exits)."""
        self.steps += 1
        if self.steps > self.max_steps:
            raise RunFailedError(
                f"the run reached --max-steps={self.max_steps} node visits at '{path}' "
                "without finishing",
                details=[
                    "a loop may never meet its exit condition; check the conditions of the "
                    "edges that leave it, or raise --max-steps if the workflow needs more visits"
                ],
            )


@dataclass
class Link:
    """An edge at run time: its config, compiled condition and processor, and whether it fired."""

    config: EdgeConfig
    condition: Condition
    label: str
    processor: Processor | None
    triggered: bool = False
    process_label: str = ""  # how the trace and errors name the processor


@dataclass
class NodeState:
    """A node at run time: its queue, its outputs, its edges and how often it ran."""

    config: NodeConfig
    kind: NodeType
    path: str
    inputs: list[Message] = field(default_factory=list)
    outputs: list[Message] = field(default_factory=list)
    outgoing: list[Link] = field(default_factory=list)
    incoming: list[Link] = field(default_factory=list)
    predecessors: list[str] = field(default_factory=list)
    successors: list[str] = field(default_factory=list)
    start_triggered: bool = False
    visits: int = 0
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The node id."""
        return self.config.id

    def is_triggered(self) -> bool:
        """A start node not yet run, or an incoming trigger edge fired."""
        return self.start_triggered or any(
            link.config.trigger and link.triggered for link in self.incoming
        )

    def reset_triggers(self) -> None:
        """Forget what triggered the node: the next run needs fresh signals."""
        self.start_triggered = False
        for link in self.incoming:
            link.triggered = False

    def keep_context(self) -> None:
        """Trim the queue after a visit: 0 keeps kept messages, -1 all, N the newest N."""
        window = self.config.context_window
        if window < 0:
            return
        kept = [m for m in self.inputs if m.keep]
        if window == 0:
            self.inputs = kept
            return
        drop = max(0, len(self.inputs) - len(kept) - max(0, window - len(kept)))
        trimmed: list[Message] = []
        for message in self.inputs:
            if not message.keep and drop > 0:
                drop -= 1
                continue
            trimmed.append(message)
        self.inputs = trimmed


@dataclass(frozen=True)
class GraphOutcome:
    """What a graph run produced: the final node's messages and every node's state."""

    messages: tuple[Message, ...]  # every output of the final node (a subgraph's result)
    output: str  # the text of the final output
    nodes: tuple[NodeState, ...]


class GraphRun:
    """One run of one graph (the workflow's, or a subgraph's for one visit of its node)."""

    def __init__(self, graph: GraphConfig, env: RunEnv, *, prefix: str = "") -> None:
        self.graph = graph
        self.env = env
        self.prefix = prefix  # `outer/` for the nodes of a subgraph
        self.memory = MemoryBank(env.memory, prefix.rstrip("/"))  # opened by `run`
        self.nodes: dict[str, NodeState] = {}
        for node in graph.nodes:
            kind = NODE_TYPES.get(node.type)
            if kind is None:  # the loader checked every type; a programming error otherwise
                raise RunFailedError(NODE_TYPES.unknown_message(node.type))
            self.nodes[node.id] = NodeState(node, kind, prefix + node.id)
        for edge in graph.edges:
            self._link(edge)

    def _link(self, edge: EdgeConfig) -> None:
        source, target = self.nodes[edge.source], self.nodes[edge.target]
        condition_type = CONDITION_TYPES.get(edge.condition.type)
        assert condition_type is not None, edge.condition.type
        condition = condition_type.build(edge.condition.config, self.env.edge_env)
        label = condition_type.label(edge.condition.config) or condition_type.name
        processor, process_label = None, ""
        if edge.process is not None:
            processor_type = PROCESSOR_TYPES.get(edge.process.type)
            assert processor_type is not None, edge.process.type
            processor = processor_type.build(edge.process.config, self.env.edge_env)
            process_label = processor_type.label(edge.process.config) or processor_type.name
        link = Link(edge, condition, label, processor, process_label=process_label)
        source.outgoing.append(link)
        target.incoming.append(link)
        if target.id not in source.successors:
            source.successors.append(target.id)
        if source.id not in target.predecessors:
            target.predecessors.append(source.id)

    # --- the whole graph ---------------------------------------------------------------

    async def run(self, task: Sequence[Message]) -> GraphOutcome:
        """Run from the start nodes until nothing is triggered; the final output.

        The graph's memory stores are loaded first and saved when it is done.
        """
        if self.graph.memory:
            stores, context = self.graph.memory, self.env.memory
            self.memory = await MemoryBank.open(stores, context, self.memory.graph)
        try:
            outcome = await self._run(task)
            self.memory.save()
        finally:
            await self.memory.aclose()
        return outcome

    async def _run(self, task: Sequence[Message]) -> GraphOutcome:
        for node_id in self.graph.start:
            node = self.nodes[node_id]
            node.start_triggered = True
            node.inputs = list(task)
        if self.graph.is_majority_voting:
            return await self._vote(task)
        order = list(self.nodes)
        successors = {n: self.nodes[n].successors for n in order}
        cycles = strongly_connected(order, successors)
        if cycles:
            from devall_cli.engine.cycles import CycleRunner

            edges = [(e.source, e.target) for e in self.graph.edges]
            for layer in super_layers(order, edges, cycles):
                await self.run_items(layer, CycleRunner(self))
        else:
            predecessors = {n: self.nodes[n].predecessors for n in order}
            for names in dag_layers(order, predecessors, successors):
                await self.run_items([Item((name,)) for name in names], None)
        self._report_never_run()
        return self._outcome()

    async def run_items(self, items: Sequence[Item], cycles: Any) -> None:
        """Run the items of one layer concurrently: triggered nodes, and cycles."""

        async def run_one(item: Item) -> None:
            if item.is_cycle:
                await cycles.run_cycle(list(item.nodes))
                return
            node = self.nodes[item.node]
            if node.is_triggered():
                await self.execute(node)

        await gather_or_cancel([run_one(item) for item in items])

    def _report_never_run(self) -> None:
        for node in self.nodes.values():
            if node.visits == 0:
                self.env.emit(
                    NodeFinishedEvent(
                        run_id=self.env.run_id, node_id=node.path, status="skipped", visit=0
                    )
                )

    def final_node(self) -> NodeState | None:
        """The first `end` node with output, else the first sink with output (SPEC.md §5)."""
        sinks = [n for n in self.nodes.values() if not n.successors]
        candidates = [self.nodes[n] for n in self.graph.end if n in self.nodes] + sinks
        return next((node for node in candidates if node.outputs), None)

    def _outcome(self, vote: Message | None = None) -> GraphOutcome:
        if vote is not None:
            messages: tuple[Message, ...] = (vote,)
        else:
            final = self.final_node()
            messages = tuple(final.outputs) if final is not None else ()
        output = messages[-1].text if messages else ""
        return GraphOutcome(messages, output, tuple(self.nodes.values()))

    # --- majority voting ---------------------------------------------------------------

    async def _vote(self, task: Sequence[Message]) -> GraphOutcome:
        """Every node answers the task at once; the most common last answer wins."""
        for node in self.nodes.values():
            node.inputs = list(task)
        await gather_or_cancel([self.execute(node) for node in self.nodes.values()])
        answers = [node.outputs[-1].text if node.outputs else "" for node in self.nodes.values()]
        counted = Counter(a for a in answers if a.strip()) or Counter(answers)
        winner, votes = counted.most_common(1)[0] if counted else ("", 0)
        self.env.emit(
            GraphNoteEvent(
                run_id=self.env.run_id,
                graph=self.prefix.rstrip("/"),
                note="vote",
                message=f"majority vote: {votes} of {len(answers)} nodes gave the winning answer",
                details={"votes": votes, "voters": len(answers), "answer": winner},
            )
        )
        return self._outcome(Message(role=ASSISTANT, text=winner, source="MAJORITY_VOTE"))

    # --- one node visit ----------------------------------------------------------------

    async def execute(self, node: NodeState) -> None:
        """Run one visit of `node` on its queue, then deliver its outputs along its edges."""
        inputs = list(node.inputs)
        node.reset_triggers()
        tape = active_tape()
        expected = self.env.visits.get(node.path, 0) + 1
        if tape is not None:  # before the layer's other nodes run: a replay waits for it
            tape.visit_started(node.path, expected)
        # The nodes of a layer start together, each on its queue as the layer began (ChatDev
        # starts them in parallel threads): let the others take their inputs before this one
        # runs, or a node that answers at once would deliver into a queue read after it.
        try:
            await asyncio.sleep(0)
            self.env.take_step(node.path)
        except BaseException:
            if tape is not None:
                tape.visit_failed(node.path, expected)
            raise
        node.visits += 1
        visit = self.env.next_visit(node.path)
        if tape is not None and visit != expected:
            tape.visit_failed(node.path, expected)
            tape.visit_started(node.path, visit)
        self.env.emit(
            NodeStartedEvent(
                run_id=self.env.run_id,
                node_id=node.path,
                inputs=[m.text for m in inputs],
                visit=visit,
            )
        )
        started = time.monotonic()
        try:
            outputs = await self._produce(node, inputs, visit)
            if tape is not None:  # a replay hands outputs on in the recorded order
                await tape.visit_done(node.path, visit)
        except BaseException as exc:
            if tape is not None:
                tape.visit_failed(node.path, visit)
            error = "cancelled" if isinstance(exc, asyncio.CancelledError) else _message(exc)
            self._finished(node, visit, "failed", [], started, error)
            if isinstance(exc, DevallError | asyncio.CancelledError) or not isinstance(
                exc, Exception
            ):
                raise
            raise RunFailedError(f"node '{node.path}' failed: {type(exc).__name__}: {exc}") from exc
        outputs = [m if m.source else m.but(source=node.id) for m in outputs]
        node.outputs.extend(outputs)
        node.keep_context()
        self._finished(node, visit, "ok", outputs, started)
        for message in outputs:
            for link in node.outgoing:
                self.deliver(link, message, node)
        if outputs and node.config.context_window != 0:
            # The node remembers what it said: its outputs go back into its own queue.
            node.inputs.extend(m.but(role=ASSISTANT, source=node.id) for m in outputs)

    async def _produce(self, node: NodeState, inputs: list[Message], visit: int) -> list[Message]:
        run = NodeRun(
            node=node.config,
            inputs=inputs,
            visit=visit,
            path=node.path,
            run_id=self.env.run_id,
            emit=self.env.emit,
            tools=self.env.tools,
            make_provider=self.env.make_provider,
            state=node.state,
            run_dir=self.env.run_dir,
            workflow_dir=self.env.workflow_dir,
            run_subgraph=self._subgraph_runner(node.path),
            extras=self.env.extras,
            memory=self.memory,
        )

        async def run_kind(this: NodeRun) -> list[Message]:
            # Serial node types (human, python) run one at a time, dynamic units included.
            async with self.env.serial_lock(node.kind):
                # What the visit asks a model, a tool or a person is filed under it on a tape.
                with exchange_scope(this.path, this.visit):
                    return await node.kind.run(this)

        dynamic = [link for link in node.incoming if link.config.dynamic is not None]
        if dynamic:
            from devall_cli.engine.dynamic import run_dynamic

            return await run_dynamic(node, run, dynamic, self._subgraph_runner, run_kind)
        return await run_kind(run)

    def _subgraph_runner(self, path: str) -> Any:
        """Runs subgraphs for the node (or unit of a dynamic node) at `path`."""

        async def run_subgraph(
            graph: GraphConfig, task: Sequence[Message], name: str = ""
        ) -> list[Message]:
            child = GraphRun(graph, self.env, prefix=f"{path}/")
            outcome = await child.run(task or task_messages(""))
            return list(outcome.messages)

        return run_subgraph

    def _finished(
        self,
        node: NodeState,
        visit: int,
        status: str,
        outputs: list[Message],
        started: float,
        error: str | None = None,
    ) -> None:
        texts = [m.text for m in outputs]
        self.env.emit(
            NodeFinishedEvent(
                run_id=self.env.run_id,
                node_id=node.path,
                status=status,
                output=texts[-1] if texts else None,
                outputs=texts,
                duration_ms=round((time.monotonic() - started) * 1000, 3),
                error=error,
                visit=visit,
            )
        )

    # --- edges -------------------------------------------------------------------------

    def deliver(self, link: Link, message: Message, source: NodeState) -> None:
        """Pass one output message along one edge (ChatDev's edge processing)."""
        edge = link.config
        target = self.nodes[edge.target]
        met = self._holds(link, message, source)
        delivered = dropped = False
        if met:
            if edge.clear_context or edge.clear_kept_context:
                target.inputs = [
                    m
                    for m in target.inputs
                    if not (edge.clear_kept_context if m.keep else edge.clear_context)
                ]
            if edge.carry_data:
                payload: Message | None = self._payload(link, message, source, target)
                if payload is None:
                    dropped = True
                else:
                    target.inputs.append(payload)
                    delivered = True
            if edge.trigger and not dropped:
                link.triggered = True
        self.env.emit(
            EdgeEvent(
                run_id=self.env.run_id,
                source=source.path,
                target=target.path,
                condition=link.label,
                met=met,
                delivered=delivered,
                dropped=dropped,
                triggered=met and edge.trigger and not dropped,
            )
        )

    def _holds(self, link: Link, message: Message, source: NodeState) -> bool:
        try:
            return bool(link.condition(message.text))
        except Exception as exc:
            raise RunFailedError(
                f"edge {source.path} → {self.prefix}{link.config.target}: condition "
                f"'{link.label}' raised {type(exc).__name__}: {exc}"
            ) from exc

    def _payload(
        self, link: Link, message: Message, source: NodeState, target: NodeState
    ) -> Message | None:
        edge = link.config
        role = message.role
        if not message.preserve_role:
            role = ASSISTANT if source is target else USER
        payload = message.but(role=role, source=source.id, keep=message.keep or edge.keep_message)
        if link.processor is not None:
            try:
                processed = link.processor(payload)
            except Exception as exc:
                raise RunFailedError(
                    f"edge {source.path} → {target.path}: processor '{link.process_label}' "
                    f"raised {type(exc).__name__}: {exc}"
                ) from exc
            if processed is None:
                return None
            payload = processed
        if edge.dynamic is not None:
            payload = payload.but(meta={**payload.meta, "dynamic_from": source.id})
        return payload


async def gather_or_cancel(coroutines: Sequence[Any]) -> None:
    """Run coroutines concurrently; the first failure cancels the rest and is raised."""
    if len(coroutines) == 1:
        await coroutines[0]
        return
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        await _cancel(tasks)
        raise
    if pending:
        await _cancel(list(pending))
    for task in tasks:  # the first failure in item order
        error = task.exception() if task in done and not task.cancelled() else None
        if error is not None:
            raise error


async def _cancel(tasks: list[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _message(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    return str(message) if message else f"{type(exc).__name__}: {exc}"
