"""Dynamic edges: a node runs once per part of its input (map), or reduces the parts in groups
until one answer is left (tree), as ChatDev's dynamic edge executor does.

The messages that dynamic edges delivered (tagged `dynamic_from` by `GraphRun.deliver`) are cut
into units (`splitting.py`); every other message of the node's queue is a static input, given
to every unit (map) or to every group of the first layer (tree).

- map: one run of the node's type per unit, at most `max_parallel` at once; the node's outputs
  are those of its units, in unit order.
- tree: the units are cut into groups of `group_size`; one run per group, the group's messages
  as its inputs; the outputs form the next layer, until at most one message is left.

Each run is a unit of the node's visit, named `node#2` (map) or `node#1-3` (tree: layer 1,
group 3) in events, the trace and result.json (`node_paths.py`), with `node.started` and
`node.finished` events of its own. A failing unit cancels the others and fails the node.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from devall_cli import limits
from devall_cli.config.dynamic import DynamicConfig, describe_split
from devall_cli.engine.splitting import split_messages
from devall_cli.errors import DevallError, RunFailedError
from devall_cli.events import GraphNoteEvent, NodeFinishedEvent, NodeStartedEvent
from devall_cli.messages import USER, Message
from devall_cli.node_paths import unit_path
from devall_cli.nodes.base import SubgraphRunner

if TYPE_CHECKING:
    from devall_cli.engine.graph import Link, NodeState
    from devall_cli.nodes.base import NodeRun

DYNAMIC_FROM = "dynamic_from"  # meta of a message a dynamic edge delivered: the sender's id
SubgraphRunners = Callable[[str], SubgraphRunner]  # a node path -> a runner of its subgraphs
KindRunner = Callable[["NodeRun"], Awaitable[list[Message]]]  # the node type's run, guarded


async def run_dynamic(
    node: NodeState,
    run: NodeRun,
    links: list[Link],
    subgraphs: SubgraphRunners,
    run_kind: KindRunner,
) -> list[Message]:
    """Run `node` once per part of its dynamic inputs (map), or reduce them (tree)."""
    config = links[0].config.dynamic
    assert config is not None  # only dynamic links are passed; the loader made them agree
    dynamic = [m for m in run.inputs if DYNAMIC_FROM in m.meta]
    static = [m for m in run.inputs if DYNAMIC_FROM not in m.meta]
    if not dynamic:
        # Nothing to split: ChatDev runs the node once on its static inputs, if it has any.
        return await run_kind(run) if static else []
    units = split_messages(config.split, dynamic)
    if len(units) > limits.DYNAMIC_UNITS:
        raise RunFailedError(
            f"node '{node.path}': the {config.type} split ({describe_split(config.split)}) cut "
            f"the input into {len(units)} units; at most {limits.DYNAMIC_UNITS} are run"
        )
    runner = UnitRunner(node, run, subgraphs, config, run_kind)
    if config.type == "tree":
        return await runner.reduce(static, units)
    return await runner.map(static, units)


@dataclasses.dataclass
class UnitRunner:
    """Runs the units of one visit of a node, at most `max_parallel` at once."""

    node: NodeState
    run: NodeRun
    subgraphs: SubgraphRunners
    config: DynamicConfig
    run_kind: KindRunner

    async def map(self, static: list[Message], units: list[Message]) -> list[Message]:
        """One run per unit, the static inputs first; every output, in unit order."""
        self._note(
            f"map over {_count(len(units), 'unit')}, "
            f"at most {min(len(units), self.config.max_parallel)} at once",
            units=len(units),
        )
        batches = [(str(index), [*static, unit]) for index, unit in enumerate(units, 1)]
        return [message for outputs in await self.run_all(batches) for message in outputs]

    async def reduce(self, static: list[Message], units: list[Message]) -> list[Message]:
        """Groups of `group_size`, layer by layer, until at most one message is left."""
        size = self.config.group_size
        current, layer = units, 0
        while True:
            layer += 1
            groups = [current[i : i + size] for i in range(0, len(current), size)]
            self._note(
                f"tree layer {layer}: {_count(len(current), 'input')} in "
                f"{_count(len(groups), 'group')} of up to {size}",
                layer=layer,
                inputs=len(current),
                groups=len(groups),
            )
            first = static if layer == 1 else []
            batches = [(f"{layer}-{n}", [*first, *group]) for n, group in enumerate(groups, 1)]
            outputs = [
                message.but(role=USER, preserve_role=False)
                for produced in await self.run_all(batches)
                for message in produced
            ]
            if len(outputs) <= 1:
                return outputs
            if len(outputs) >= len(current) > 1:
                raise RunFailedError(
                    f"node '{self.node.path}': tree layer {layer} turned "
                    f"{_count(len(current), 'message')} into {len(outputs)}; a tree node must "
                    "answer a group with fewer messages than it got, or the reduction never ends"
                )
            current = outputs

    async def run_all(self, batches: Sequence[tuple[str, list[Message]]]) -> list[list[Message]]:
        """Run every (label, inputs) batch, `max_parallel` at a time; outputs in batch order."""
        from devall_cli.engine.graph import gather_or_cancel

        results: list[list[Message]] = [[] for _ in batches]
        pending = iter(range(len(batches)))

        async def worker() -> None:
            for index in pending:  # one shared iterator: each batch is taken by one worker
                label, inputs = batches[index]
                results[index] = await self.run_unit(label, inputs)

        workers = min(len(batches), self.config.max_parallel)
        await gather_or_cancel([worker() for _ in range(workers)])
        return results

    async def run_unit(self, label: str, inputs: list[Message]) -> list[Message]:
        """One run of the node's type on `inputs`, traced as the unit `node#label`."""
        path = unit_path(self.node.path, label)
        unit = dataclasses.replace(
            self.run,
            inputs=[_untagged(message) for message in inputs],
            path=path,
            state=self.node.state.setdefault("dynamic_units", {}).setdefault(label, {}),
            run_subgraph=self.subgraphs(path),
        )
        emit, visit = self.run.emit, self.run.visit
        emit(
            NodeStartedEvent(
                run_id=self.run.run_id, node_id=path, inputs=[m.text for m in inputs], visit=visit
            )
        )
        started = time.monotonic()
        try:
            produced = await self.run_kind(unit)
        except BaseException as exc:
            emit(self._finished(path, started, "failed", [], _error_text(exc)))
            if isinstance(exc, Exception) and not isinstance(exc, DevallError):
                raise RunFailedError(f"node '{path}' failed: {type(exc).__name__}: {exc}") from exc
            raise
        outputs = [_plain_output(message, self.node.id) for message in produced]
        emit(self._finished(path, started, "ok", outputs))
        return outputs

    def _finished(
        self,
        path: str,
        started: float,
        status: str,
        outputs: list[Message],
        error: str | None = None,
    ) -> NodeFinishedEvent:
        texts = [m.text for m in outputs]
        return NodeFinishedEvent(
            run_id=self.run.run_id,
            node_id=path,
            status=status,
            output=texts[-1] if texts else None,
            outputs=texts,
            duration_ms=round((time.monotonic() - started) * 1000, 3),
            error=error,
            visit=self.run.visit,
        )

    def _note(self, message: str, **details: int) -> None:
        node = self.node
        self.run.emit(
            GraphNoteEvent(
                run_id=self.run.run_id,
                graph=node.path[: -len(node.id)].rstrip("/"),
                note="dynamic",
                message=f"node {node.path}: {message}",
                details={
                    "node": node.path,
                    "mode": self.config.type,
                    "split": describe_split(self.config.split),
                    "max_parallel": self.config.max_parallel,
                    **details,
                },
            )
        )


def _untagged(message: Message) -> Message:
    """The message without the dynamic-edge tag: the tag never leaves the node it came to."""
    if DYNAMIC_FROM not in message.meta:
        return message
    return message.but(meta={k: v for k, v in message.meta.items() if k != DYNAMIC_FROM})


def _plain_output(message: Message, node_id: str) -> Message:
    """A unit's output as its node's: from the node, without the dynamic-edge tag."""
    return _untagged(message.but(source=message.source or node_id))


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    message = getattr(exc, "message", None)
    return str(message) if message else f"{type(exc).__name__}: {exc}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
