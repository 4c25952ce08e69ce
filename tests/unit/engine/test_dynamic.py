"""Dynamic edges at run time: map units, tree layers, static inputs, bounds, failures, events.

The target nodes are of a node type registered by this module (`unit`), which records every run
(its path, visit and inputs) and how many runs were live at once, and answers
`<id>(<inputs joined by +>)` unless told otherwise.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from devall_cli import limits
from devall_cli.config.dynamic import DynamicConfig, RegexSplit, SplitConfig
from devall_cli.config.model import (
    ConditionConfig,
    GraphConfig,
    KeywordCondition,
    NodeConfig,
    Workflow,
)
from devall_cli.config.schema import KeySpec
from devall_cli.engine.graph import GraphOutcome, GraphRun, RunEnv
from devall_cli.errors import RunFailedError
from devall_cli.events import (
    EventBus,
    GraphNoteEvent,
    NodeFinishedEvent,
    NodeStartedEvent,
)
from devall_cli.messages import Message, task_messages
from devall_cli.nodes import NODE_TYPES, NodeRun, NodeType
from tests.unit.engine.builders import Collector, FakeTools, agent, edge, literal, turn, workflow

LINES = SplitConfig("regex", RegexSplit(r"[^\n]+"))


@dataclass
class Tracker:
    """What the runs of one `unit` node did."""

    calls: list[tuple[str, int, list[tuple[str, str, str]]]] = field(default_factory=list)
    live: int = 0
    most_live: int = 0

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.calls]

    def inputs(self, path: str) -> list[str]:
        (found,) = [[text for _, _, text in inputs] for p, _, inputs in self.calls if p == path]
        return found


@dataclass(frozen=True)
class UnitConfig:
    """A `unit` node: delays per input word, a failure on a word, fixed answers, copies."""

    tracker: Tracker = field(default_factory=Tracker, compare=False)
    delays: tuple[tuple[str, float], ...] = ()
    fail_on: str | None = None
    answers: tuple[str, ...] = ()  # one per visit, the last repeated
    copies: int = 1  # messages emitted per run
    subgraph: GraphConfig | None = None  # run it with the inputs as the task


async def run_unit(run: NodeRun) -> list[Message]:
    config: UnitConfig = run.node.config
    tracker = config.tracker
    texts = [m.text for m in run.inputs]
    tracker.calls.append((run.path, run.visit, [(m.role, m.source, m.text) for m in run.inputs]))
    tracker.live += 1
    tracker.most_live = max(tracker.most_live, tracker.live)
    try:
        delay = max((d for word, d in config.delays if word in "+".join(texts)), default=0.01)
        await asyncio.sleep(delay)
        if config.fail_on is not None and any(config.fail_on in text for text in texts):
            raise RuntimeError(f"{run.path} broke")
    finally:
        tracker.live -= 1
    if config.subgraph is not None:
        assert run.run_subgraph is not None
        return await run.run_subgraph(config.subgraph, run.inputs, "")
    if config.answers:
        text = config.answers[min(run.visit, len(config.answers)) - 1]
    else:
        text = f"{run.node.id}({'+'.join(texts)})"
    return [Message(role="assistant", text=text)] * config.copies


NODE_TYPES.register(
    NodeType("unit", "dynamic-edge tests", KeySpec(frozenset()), lambda *a: None, run_unit)
)


def unit(node_id: str, **settings: Any) -> NodeConfig:
    return NodeConfig(id=node_id, type="unit", config=UnitConfig(**settings))


def tracker(flow: Workflow, node_id: str) -> Tracker:
    config: UnitConfig = flow.graph.node(node_id).config
    return config.tracker


def dynamic(kind: str = "map", split: SplitConfig = LINES, **settings: int) -> DynamicConfig:
    return DynamicConfig(kind, split, **settings)


class NoFunctions:
    def function(self, folder: str, name: str) -> Any:
        return None

    def state(self) -> dict[str, Any]:
        return {}


async def run(flow: Workflow, bus: EventBus | None = None) -> GraphOutcome:
    env = RunEnv(
        run_id="r1",
        bus=bus or EventBus(),
        tools=FakeTools(),
        make_provider=_scripted,
        edge_env=NoFunctions(),
    )
    return await GraphRun(flow.graph, env).run(task_messages("T"))


def _scripted(config: Any, state: dict[str, Any] | None = None) -> Any:
    from devall_cli.providers.scripted import make_scripted

    return make_scripted(config, state=state)


def outputs(outcome: GraphOutcome, node_id: str) -> list[str]:
    (node,) = [n for n in outcome.nodes if n.id == node_id]
    return [m.text for m in node.outputs]


# --- map ---------------------------------------------------------------------------------------


async def test_map_runs_the_node_once_per_part_and_keeps_the_unit_order() -> None:
    flow = workflow(
        [literal("src", "a\nb\nc"), unit("X", delays=(("a", 0.2), ("b", 0.1)))],
        [edge("src", "X", dynamic=dynamic())],
    )
    bus = EventBus()
    events = Collector(bus)
    outcome = await run(flow, bus)
    assert outputs(outcome, "X") == ["X(a)", "X(b)", "X(c)"]  # c finished first
    assert tracker(flow, "X").calls == [
        ("X#1", 1, [("user", "src", "a")]),
        ("X#2", 1, [("user", "src", "b")]),
        ("X#3", 1, [("user", "src", "c")]),
    ]
    finished = [(e.node_id, e.status, e.outputs) for e in events.of(NodeFinishedEvent)]
    assert finished[-1] == ("X", "ok", ["X(a)", "X(b)", "X(c)"])
    assert sorted(finished[1:-1]) == [
        ("X#1", "ok", ["X(a)"]),
        ("X#2", "ok", ["X(b)"]),
        ("X#3", "ok", ["X(c)"]),
    ]
    started = [(e.node_id, e.visit) for e in events.of(NodeStartedEvent)]
    assert started == [("src", 1), ("X", 1), ("X#1", 1), ("X#2", 1), ("X#3", 1)]
    (note,) = events.of(GraphNoteEvent)
    assert note.message == "node X: map over 3 units, at most 3 at once"
    assert note.details["units"] == 3 and note.details["split"] == "regex '[^\\\\n]+'"


@pytest.mark.parametrize(("max_parallel", "most"), [(1, 1), (2, 2), (10, 5)])
async def test_map_runs_at_most_max_parallel_units_at_once(max_parallel: int, most: int) -> None:
    flow = workflow(
        [literal("src", "1\n2\n3\n4\n5"), unit("X")],
        [edge("src", "X", dynamic=dynamic(max_parallel=max_parallel))],
    )
    outcome = await run(flow)
    assert tracker(flow, "X").most_live == most
    assert outputs(outcome, "X") == [f"X({n})" for n in range(1, 6)]


async def test_static_inputs_go_first_to_every_unit() -> None:
    flow = workflow(
        [literal("src", "a\nb"), literal("style", "be brief"), unit("X")],
        [edge("src", "X", dynamic=dynamic()), edge("style", "X", trigger=False)],
        start=["src", "style"],
    )
    outcome = await run(flow)
    assert tracker(flow, "X").inputs("X#1") == ["be brief", "a"]
    assert tracker(flow, "X").inputs("X#2") == ["be brief", "b"]
    assert outputs(outcome, "X") == ["X(be brief+a)", "X(be brief+b)"]


async def test_every_output_of_every_unit_goes_downstream_without_the_dynamic_tag() -> None:
    flow = workflow(
        [literal("src", "a\nb"), unit("X", copies=2), unit("Y")],
        [edge("src", "X", dynamic=dynamic()), edge("X", "Y")],
    )
    await run(flow)
    (_, _, inputs) = tracker(flow, "Y").calls[0]
    assert inputs == [("user", "X", "X(a)")] * 2 + [("user", "X", "X(b)")] * 2


async def test_each_unit_keeps_its_own_state_so_scripted_units_start_their_script() -> None:
    flow = workflow(
        [literal("src", "a\nb\nc"), agent("X", turn("first {input}"), turn("second {input}"))],
        [edge("src", "X", dynamic=dynamic(max_parallel=2))],
    )
    outcome = await run(flow)
    assert outputs(outcome, "X") == ["first a", "first b", "first c"]


# --- tree --------------------------------------------------------------------------------------


async def test_tree_reduces_in_groups_layer_by_layer_with_static_inputs_in_the_first() -> None:
    flow = workflow(
        [literal("src", "a\nb\nc\nd\ne"), literal("how", "sum up"), unit("X")],
        [edge("src", "X", dynamic=dynamic("tree", group_size=2)), edge("how", "X")],
        start=["src", "how"],
    )
    bus = EventBus()
    events = Collector(bus)
    outcome = await run(flow, bus)
    calls = tracker(flow, "X")
    assert calls.paths() == ["X#1-1", "X#1-2", "X#1-3", "X#2-1", "X#2-2", "X#3-1"]
    assert calls.inputs("X#1-1") == ["sum up", "a", "b"]
    assert calls.inputs("X#1-3") == ["sum up", "e"]
    assert calls.inputs("X#2-1") == ["X(sum up+a+b)", "X(sum up+c+d)"]
    assert calls.inputs("X#2-2") == ["X(sum up+e)"]
    (_, _, last) = calls.calls[-1]
    assert [(role, source) for role, source, _ in last] == [("user", "X"), ("user", "X")]
    assert outputs(outcome, "X") == ["X(X(X(sum up+a+b)+X(sum up+c+d))+X(X(sum up+e)))"]
    assert outcome.output == outputs(outcome, "X")[0]
    assert [e.message for e in events.of(GraphNoteEvent)] == [
        "node X: tree layer 1: 5 inputs in 3 groups of up to 2",
        "node X: tree layer 2: 3 inputs in 2 groups of up to 2",
        "node X: tree layer 3: 2 inputs in 1 group of up to 2",
    ]


async def test_a_tree_of_one_unit_still_runs_its_node_once() -> None:
    flow = workflow(
        [literal("src", "only"), literal("how", "sum up"), unit("X")],
        [edge("src", "X", dynamic=dynamic("tree")), edge("how", "X")],
        start=["src", "how"],
    )
    outcome = await run(flow)
    assert tracker(flow, "X").calls == [
        ("X#1-1", 1, [("user", "how", "sum up"), ("user", "src", "only")])
    ]
    assert outputs(outcome, "X") == ["X(sum up+only)"]


async def test_a_tree_whose_node_does_not_answer_with_fewer_messages_fails() -> None:
    flow = workflow(
        [literal("src", "a\nb\nc\nd"), unit("X", copies=2)],
        [edge("src", "X", dynamic=dynamic("tree", group_size=2))],
    )
    with pytest.raises(RunFailedError) as caught:
        await run(flow)
    assert "tree layer 1 turned 4 messages into 4" in str(caught.value)


# --- failures, limits, and runs without units ---------------------------------------------------


async def test_a_failing_unit_cancels_the_others_and_fails_the_node() -> None:
    flow = workflow(
        [literal("src", "slow\nbad\nlater"), unit("X", delays=(("slow", 30.0),), fail_on="bad")],
        [edge("src", "X", dynamic=dynamic(max_parallel=2))],
    )
    bus = EventBus()
    events = Collector(bus)
    with pytest.raises(RunFailedError) as caught:
        await run(flow, bus)
    assert "node 'X#2' failed: RuntimeError: X#2 broke" in str(caught.value)
    finished = {e.node_id: (e.status, e.error) for e in events.of(NodeFinishedEvent)}
    assert finished["X#1"] == ("failed", "cancelled")
    assert finished["X#2"] == ("failed", "RuntimeError: X#2 broke")
    assert finished["X"][0] == "failed"
    assert "X#3" not in finished  # never started
    assert tracker(flow, "X").paths() == ["X#1", "X#2"]


async def test_cancelling_the_run_cancels_every_running_unit() -> None:
    flow = workflow(
        [literal("src", "a\nb\nc"), unit("X", delays=(("", 30.0),))],
        [edge("src", "X", dynamic=dynamic(max_parallel=2))],
    )
    bus = EventBus()
    events = Collector(bus)
    running = asyncio.ensure_future(run(flow, bus))
    for _ in range(500):
        if tracker(flow, "X").live == 2:
            break
        await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    finished = {e.node_id: (e.status, e.error) for e in events.of(NodeFinishedEvent)}
    assert finished == {
        "src": ("ok", None),
        "X#1": ("failed", "cancelled"),
        "X#2": ("failed", "cancelled"),
        "X": ("failed", "cancelled"),
    }
    assert tracker(flow, "X").live == 0


async def test_more_units_than_the_limit_fail_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "DYNAMIC_UNITS", 2)
    flow = workflow([literal("src", "a\nb\nc"), unit("X")], [edge("src", "X", dynamic=dynamic())])
    with pytest.raises(RunFailedError) as caught:
        await run(flow)
    assert "cut the input into 3 units; at most 2 are run" in str(caught.value)
    assert tracker(flow, "X").calls == []


async def test_without_dynamic_input_the_node_runs_once_on_its_static_inputs() -> None:
    never = ConditionConfig("keyword", KeywordCondition(any=("never",)))
    flow = workflow(
        [literal("src", "a\nb"), literal("other", "static"), unit("X")],
        [edge("src", "X", dynamic=dynamic(), condition=never), edge("other", "X")],
        start=["src", "other"],
    )
    outcome = await run(flow)
    assert tracker(flow, "X").calls == [("X", 1, [("user", "other", "static")])]
    assert outputs(outcome, "X") == ["X(static)"]


async def test_without_any_input_the_node_emits_nothing() -> None:
    flow = workflow(
        [literal("src", "a\nb"), unit("X"), unit("Y")],
        [edge("src", "X", dynamic=dynamic(), carry_data=False), edge("X", "Y")],
    )
    outcome = await run(flow)
    assert tracker(flow, "X").calls == []
    assert outputs(outcome, "X") == [] and tracker(flow, "Y").calls == []


# --- units in loops and subgraphs ---------------------------------------------------------------


async def test_a_node_visited_again_in_a_loop_runs_its_units_as_that_visit() -> None:
    again = ConditionConfig("keyword", KeywordCondition(any=("again",)))
    flow = workflow(
        [literal("src", "a\nb"), unit("X"), unit("G", answers=("again\nc", "stop"))],
        [
            edge("src", "X", dynamic=dynamic()),
            edge("X", "G"),
            edge("G", "X", condition=again, dynamic=dynamic()),
        ],
    )
    outcome = await run(flow)
    calls = tracker(flow, "X").calls
    assert [(path, visit) for path, visit, _ in calls] == [
        ("X#1", 1),
        ("X#2", 1),
        ("X#1", 2),
        ("X#2", 2),
    ]
    assert tracker(flow, "X").calls[2][2] == [("user", "G", "again")]
    assert outputs(outcome, "X") == ["X(a)", "X(b)", "X(again)", "X(c)"]


async def test_the_subgraph_of_each_unit_runs_under_the_units_path() -> None:
    inner = GraphConfig(nodes=(unit("inner"),), start=("inner",))
    flow = workflow(
        [literal("src", "a\nb"), unit("S", subgraph=inner)],
        [edge("src", "S", dynamic=dynamic())],
    )
    bus = EventBus()
    events = Collector(bus)
    outcome = await run(flow, bus)
    started = [e.node_id for e in events.of(NodeStartedEvent)]
    assert sorted(started[2:]) == ["S#1", "S#1/inner", "S#2", "S#2/inner"]
    assert outputs(outcome, "S") == ["inner(a)", "inner(b)"]
