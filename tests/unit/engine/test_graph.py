"""Scheduling semantics of SPEC.md §5: layers, triggers, carry_data, conditions, final output."""

from __future__ import annotations

import asyncio
import time

import pytest

from devall_cli.config.model import Condition, KeywordCondition, NodeConfig, Workflow
from devall_cli.engine.events import EventBus, NodeFinishedEvent, NodeStartedEvent
from devall_cli.engine.graph import (
    GraphOutcome,
    condition_holds,
    final_output,
    run_graph,
    topological_layers,
)
from devall_cli.errors import ConfigError
from tests.unit.engine.builders import Collector, edge, literal, workflow


def nodes(*ids: str) -> list[NodeConfig]:
    return [literal(node_id, node_id) for node_id in ids]


class Recorder:
    """An executor that answers `<id>(<inputs>)`, optionally after a delay, and records calls."""

    def __init__(
        self,
        delays: dict[str, float] | None = None,
        fail: str = "",
        answers: dict[str, str] | None = None,
    ) -> None:
        self.delays = delays or {}
        self.answers = answers or {}
        self.fail = fail
        self.inputs: dict[str, list[str]] = {}

    async def __call__(self, node: NodeConfig, inputs: list[str]) -> str:
        self.inputs[node.id] = inputs
        await asyncio.sleep(self.delays.get(node.id, 0))
        if node.id == self.fail:
            raise RuntimeError(f"{node.id} broke")
        return self.answers.get(node.id, f"{node.id}({'+'.join(inputs)})")


async def run(flow: Workflow, executor: Recorder, bus: EventBus | None = None) -> GraphOutcome:
    return await run_graph(
        flow.graph, task="T", execute=executor, bus=bus or EventBus(), run_id="r1"
    )


def statuses(outcome: GraphOutcome) -> dict[str, str]:
    return {n.node_id: n.status for n in outcome.nodes}


def test_layers_follow_the_edges() -> None:
    flow = workflow(
        nodes("A", "B", "C", "D"),
        [edge("A", "B"), edge("A", "C"), edge("B", "D"), edge("C", "D")],
    )
    assert topological_layers(flow.graph) == [["A"], ["B", "C"], ["D"]]


def test_a_cycle_is_a_config_error_naming_it() -> None:
    flow = workflow(nodes("A", "B"), [edge("A", "B"), edge("B", "A")])
    with pytest.raises(ConfigError, match="cycles are not supported yet: A → B → A"):
        topological_layers(flow.graph)


async def test_nodes_of_one_layer_run_concurrently() -> None:
    flow = workflow(
        nodes("A", "B", "C", "D"),
        [edge("A", "B"), edge("A", "C"), edge("B", "D"), edge("C", "D")],
    )
    executor = Recorder({"B": 0.3, "C": 0.3})
    started = time.monotonic()
    outcome = await run(flow, executor)
    assert time.monotonic() - started < 0.5
    # D waited for both branches and got their outputs in edge declaration order.
    assert executor.inputs["D"] == ["B(A(T))", "C(A(T))"]
    assert outcome.output == "D(B(A(T))+C(A(T)))"


async def test_start_nodes_get_the_task_and_others_their_predecessors_outputs() -> None:
    flow = workflow(nodes("A", "B"), [edge("A", "B")])
    executor = Recorder()
    await run(flow, executor)
    assert executor.inputs == {"A": ["T"], "B": ["A(T)"]}


async def test_an_edge_without_trigger_does_not_start_its_target() -> None:
    flow = workflow(nodes("A", "B"), [edge("A", "B", trigger=False)])
    executor = Recorder()
    outcome = await run(flow, executor)
    assert statuses(outcome) == {"A": "ok", "B": "skipped"}
    assert "B" not in executor.inputs


async def test_a_non_trigger_edge_still_carries_data_when_another_edge_fires() -> None:
    flow = workflow(
        nodes("A", "C", "B"),
        [edge("A", "B", trigger=False), edge("C", "B", carry_data=False)],
        start=["A", "C"],
    )
    executor = Recorder()
    await run(flow, executor)
    assert executor.inputs["B"] == ["A(T)"]


async def test_carry_data_false_triggers_without_delivering_the_output() -> None:
    flow = workflow(nodes("A", "B"), [edge("A", "B", carry_data=False)])
    executor = Recorder()
    outcome = await run(flow, executor)
    assert executor.inputs["B"] == []
    assert statuses(outcome)["B"] == "ok"


async def test_conditions_route_between_branches() -> None:
    yes = KeywordCondition(any=("approved",))
    no = KeywordCondition(none=("approved",))
    flow = workflow(
        nodes("judge", "ship", "fix"),
        [edge("judge", "ship", condition=yes), edge("judge", "fix", condition=no)],
        end=["ship", "fix"],
    )
    outcome = await run(flow, Recorder(answers={"judge": "approved"}))
    assert statuses(outcome) == {"judge": "ok", "ship": "ok", "fix": "skipped"}
    assert outcome.output == "ship(approved)"
    # Case-sensitive by default: "Approved!" does not contain "approved".
    outcome = await run(flow, Recorder(answers={"judge": "Approved!"}))
    assert statuses(outcome) == {"judge": "ok", "ship": "skipped", "fix": "ok"}
    assert outcome.output == "fix(Approved!)"

    insensitive = KeywordCondition(any=("approved",), case_sensitive=False)
    flow = workflow(nodes("judge", "ship"), [edge("judge", "ship", condition=insensitive)])
    outcome = await run(flow, Recorder(answers={"judge": "Approved!"}))
    assert statuses(outcome) == {"judge": "ok", "ship": "ok"}


async def test_a_false_condition_skips_the_target_and_its_descendants() -> None:
    flow = workflow(nodes("A", "B", "C"), [edge("A", "B", condition=False), edge("B", "C")])
    bus = EventBus()
    events = Collector(bus)
    outcome = await run(flow, Recorder(), bus)
    assert statuses(outcome) == {"A": "ok", "B": "skipped", "C": "skipped"}
    finished = {e.node_id: e.status for e in events.of(NodeFinishedEvent)}
    assert finished == {"A": "ok", "B": "skipped", "C": "skipped"}
    assert [e.node_id for e in events.of(NodeStartedEvent)] == ["A"]


@pytest.mark.parametrize(
    ("condition", "text", "expected"),
    [
        (True, "anything", True),
        (False, "anything", False),
        (KeywordCondition(any=("ok",)), "all ok", True),
        (KeywordCondition(any=("ok",)), "all fine", False),
        (KeywordCondition(none=("error",)), "all fine", True),
        (KeywordCondition(none=("error",)), "an error", False),
        # A `none` hit wins over an `any` hit.
        (KeywordCondition(any=("ok",), none=("error",)), "ok but error", False),
        (KeywordCondition(regex=(r"score: [89]\d",)), "score: 93", True),
        (KeywordCondition(regex=(r"score: [89]\d",)), "score: 42", False),
        (KeywordCondition(any=("OK",)), "ok", False),
        (KeywordCondition(any=("OK",), case_sensitive=False), "ok", True),
        (KeywordCondition(regex=("^DONE",), case_sensitive=False), "done.", True),
        (KeywordCondition(none=("Error",), case_sensitive=False), "ERROR", False),
    ],
)
def test_condition_holds(condition: Condition, text: str, expected: bool) -> None:
    assert condition_holds(condition, text) is expected


def test_final_output_prefers_end_then_first_sink_then_empty() -> None:
    flow = workflow(nodes("A", "B", "C"), [edge("A", "B"), edge("A", "C")], end=["C", "B"])
    assert final_output(flow.graph, {"A": "a", "B": "b", "C": "c"}) == "c"
    assert final_output(flow.graph, {"A": "a", "B": "b"}) == "b"
    no_end = workflow(nodes("A", "B", "C"), [edge("A", "B"), edge("A", "C")])
    assert final_output(no_end.graph, {"A": "a", "C": "c"}) == "c"
    assert final_output(no_end.graph, {"A": "a"}) == ""


async def test_final_output_falls_back_to_a_sink_when_the_end_node_was_skipped() -> None:
    flow = workflow(
        nodes("A", "B", "C"),
        [edge("A", "B", condition=False), edge("A", "C")],
        end=["B"],
    )
    outcome = await run(flow, Recorder())
    assert outcome.output == "C(A(T))"


async def test_a_failing_node_cancels_running_ones_and_is_raised() -> None:
    flow = workflow(
        nodes("A", "B", "C", "D"),
        [edge("A", "B"), edge("A", "C"), edge("C", "D")],
    )
    bus = EventBus()
    events = Collector(bus)
    executor = Recorder({"B": 5.0, "C": 0.05}, fail="C")
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="C broke"):
        await run(flow, executor, bus)
    assert time.monotonic() - started < 1.0
    finished = {e.node_id: (e.status, e.error) for e in events.of(NodeFinishedEvent)}
    assert finished["C"] == ("failed", "RuntimeError: C broke")
    assert finished["B"] == ("failed", "cancelled")
    assert "D" not in finished and "D" not in executor.inputs
