"""Running subgraph nodes: the task, the result, a fresh copy per visit, paths, shared guards.

The child graphs here use a node type registered by this module (`recorder`): it notes what it
received and answers `<id>(<inputs joined by +>)`, or the answers it was given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from devall_cli.config.model import GraphConfig, NodeConfig
from devall_cli.config.schema import KeySpec
from devall_cli.engine.graph import GraphOutcome, GraphRun
from devall_cli.errors import RunFailedError
from devall_cli.events import EventBus, NodeFinishedEvent, NodeStartedEvent
from devall_cli.messages import Message, task_messages
from devall_cli.nodes import NODE_TYPES, NodeRun, NodeType
from devall_cli.nodes.subgraph import SubgraphConfig
from tests.unit.engine.builders import Collector, edge, workflow
from tests.unit.engine.test_graph import env, keyword


@dataclass(frozen=True)
class RecorderConfig:
    """Answers given all at once on every visit (an empty tuple: none), or one per visit."""

    answers: tuple[str, ...] | None = None
    fail: bool = False
    by_visit: tuple[str, ...] = ()
    seen: list[dict[str, Any]] = field(default_factory=list, compare=False)


async def run_recorder(run: NodeRun) -> list[Message]:
    config: RecorderConfig = run.node.config
    run.state["runs"] = run.state.get("runs", 0) + 1
    config.seen.append(
        {
            "path": run.path,
            "visit": run.visit,
            "runs_of_this_copy": run.state["runs"],
            "inputs": [(m.role, m.source, m.text) for m in run.inputs],
        }
    )
    if config.fail:
        raise RuntimeError(f"{run.node.id} broke")
    if config.by_visit:
        return [Message(role="assistant", text=config.by_visit[run.visit - 1])]
    if config.answers is not None:
        return [Message(role="assistant", text=text) for text in config.answers]
    return [
        Message(role="assistant", text=f"{run.node.id}({'+'.join(m.text for m in run.inputs)})")
    ]


NODE_TYPES.register(
    NodeType("recorder", "subgraph tests", KeySpec(frozenset()), lambda *a: None, run_recorder)
)


def rec(node_id: str, *answers: str, silent: bool = False, fail: bool = False) -> NodeConfig:
    given = () if silent else (answers or None)
    return NodeConfig(id=node_id, type="recorder", config=RecorderConfig(given, fail))


def sub(node_id: str, *nodes: NodeConfig, edges: tuple[Any, ...] = (), **graph: Any) -> NodeConfig:
    start = graph.pop("start", (nodes[0].id,))
    child = GraphConfig(nodes=tuple(nodes), start=start, edges=edges, **graph)
    return NodeConfig(id=node_id, type="subgraph", config=SubgraphConfig("config", child))


def seen(node: NodeConfig) -> list[dict[str, Any]]:
    config: RecorderConfig = node.config
    return config.seen


async def run(
    nodes: list[NodeConfig], edges: list[Any], bus: EventBus | None = None, **options: Any
) -> GraphOutcome:
    flow = workflow(nodes, edges)
    return await GraphRun(flow.graph, env(bus or EventBus(), **options)).run(task_messages("T"))


async def test_the_inputs_are_the_childs_task_and_all_final_outputs_come_back() -> None:
    inner_a, inner_b = rec("a"), rec("b", "first", "second")
    after = rec("after")
    nodes = [rec("before"), sub("s", inner_a, inner_b, edges=(edge("a", "b"),)), after]
    outcome = await run(nodes, [edge("before", "s"), edge("s", "after")])
    assert seen(inner_a)[0]["inputs"] == [("user", "before", "before(T)")]
    assert seen(inner_a)[0]["path"] == "s/a"
    # every output of the child's final node, delivered one by one along the parent's edge
    assert seen(after)[0]["inputs"] == [("user", "s", "first"), ("user", "s", "second")]
    assert outcome.output == "after(first+second)"


async def test_the_end_node_decides_the_result() -> None:
    flow_nodes = [
        sub(
            "s",
            rec("a"),
            rec("b", "from b"),
            rec("c", "from c"),
            edges=(edge("a", "b"), edge("a", "c")),
            end=("b",),
        )
    ]
    outcome = await run(flow_nodes, [])
    assert outcome.output == "from b"


async def test_a_child_without_output_gives_one_empty_assistant_message() -> None:
    after = rec("after")
    nodes = [sub("s", rec("quiet", silent=True)), after]
    await run(nodes, [edge("s", "after")])
    assert seen(after)[0]["inputs"] == [("user", "s", "")]


async def test_a_visit_without_inputs_gives_the_child_one_empty_task() -> None:
    inner = rec("a")
    nodes = [rec("before"), sub("s", inner)]
    await run(nodes, [edge("before", "s", carry_data=False)])
    assert seen(inner)[0]["inputs"] == [("user", "SUBGRAPH", "")]


async def test_each_visit_runs_a_fresh_copy_and_visits_count_across_copies() -> None:
    inner = rec("a")
    collector = Collector(bus := EventBus())
    loop = sub("s", inner)
    count = NodeConfig(
        id="gate", type="recorder", config=RecorderConfig(by_visit=("again",) * 2 + ("stop",))
    )
    nodes = [rec("start"), loop, count]
    edges = [
        edge("start", "s"),
        edge("s", "gate"),
        edge("gate", "s", condition=keyword(any=["again"])),
    ]
    await run(nodes, edges, bus)
    records = seen(inner)
    assert [r["visit"] for r in records] == [1, 2, 3]
    assert [r["runs_of_this_copy"] for r in records] == [1, 1, 1]  # state starts afresh
    started = [(e.node_id, e.visit) for e in collector.of(NodeStartedEvent)]
    assert [s for s in started if s[0] in ("s", "s/a")] == [
        ("s", 1),
        ("s/a", 1),
        ("s", 2),
        ("s/a", 2),
        ("s", 3),
        ("s/a", 3),
    ]


async def test_nested_subgraphs_have_nested_paths_in_events() -> None:
    deepest = rec("leaf")
    collector = Collector(bus := EventBus())
    outcome = await run([sub("outer", sub("inner", deepest))], [], bus)
    finished = [e.node_id for e in collector.of(NodeFinishedEvent) if e.status == "ok"]
    assert finished == ["outer/inner/leaf", "outer/inner", "outer"]
    assert seen(deepest)[0]["path"] == "outer/inner/leaf"
    assert outcome.output == "leaf(T)"


async def test_the_step_guard_counts_the_childs_visits() -> None:
    nodes = [rec("a"), sub("s", rec("x"), rec("y"), edges=(edge("x", "y"),))]
    with pytest.raises(RunFailedError) as caught:
        await run(nodes, [edge("a", "s")], max_steps=3)
    assert "--max-steps=3" in caught.value.message and "'s/y'" in caught.value.message


async def test_a_failing_child_node_fails_the_subgraph_node_and_the_run() -> None:
    collector = Collector(bus := EventBus())
    with pytest.raises(RunFailedError) as caught:
        await run([sub("s", rec("x", fail=True))], [], bus)
    assert "node 's/x' failed" in caught.value.message
    failed = [e.node_id for e in collector.of(NodeFinishedEvent) if e.status == "failed"]
    assert failed == ["s/x", "s"]
