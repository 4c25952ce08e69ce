"""Graph scheduling as ChatDev runs it: layers, triggers, edge flags, queues, cycles, voting.

The nodes here are of a node type registered by this module (`probe`), which answers
`<id>(<inputs joined by +>)` unless told otherwise: the engine runs it exactly as a built-in type.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from devall_cli.config.model import (
    ConditionConfig,
    EdgeConfig,
    FunctionCondition,
    KeywordCondition,
    NodeConfig,
    Workflow,
)
from devall_cli.config.schema import KeySpec
from devall_cli.edges.base import EdgeEnv
from devall_cli.engine.graph import GraphOutcome, GraphRun, RunEnv
from devall_cli.errors import RunFailedError
from devall_cli.events import EventBus, GraphNoteEvent, NodeFinishedEvent
from devall_cli.messages import Message, task_messages
from devall_cli.nodes import NODE_TYPES, NodeRun, NodeType
from tests.unit.engine.builders import Collector, FakeTools, edge, workflow


@dataclass(frozen=True)
class ProbeConfig:
    """What a probe node does: answers (one per visit, the last repeated), a delay, a failure."""

    answers: tuple[str, ...] = ()
    delay: float = 0.0
    fail: bool = False
    silent_until: int = 0  # emit nothing on visits before this one
    seen: list[list[tuple[str, str, str]]] = field(default_factory=list, compare=False)
    spans: list[tuple[float, float]] = field(default_factory=list, compare=False)  # finished


async def run_probe(run: NodeRun) -> list[Message]:
    config: ProbeConfig = run.node.config
    config.seen.append([(m.role, m.source, m.text) for m in run.inputs])
    if config.delay:  # without one, a visit completes without yielding, as a literal's does
        began = time.monotonic()
        await asyncio.sleep(config.delay)
        config.spans.append((began, time.monotonic()))
    if config.fail:
        raise RuntimeError(f"{run.node.id} broke")
    if run.visit < config.silent_until:
        return []
    if config.answers:
        text = config.answers[min(run.visit, len(config.answers)) - 1]
    else:
        text = f"{run.node.id}({'+'.join(m.text for m in run.inputs)})"
    return [Message(role="assistant", text=text)]


NODE_TYPES.register(
    NodeType("probe", "scheduler tests", KeySpec(frozenset()), lambda *a: None, run_probe)
)


def probe(node_id: str, *answers: str, context_window: int = 0, **settings: Any) -> NodeConfig:
    return NodeConfig(
        id=node_id,
        type="probe",
        config=ProbeConfig(answers=answers, **settings),
        context_window=context_window,
    )


def seen(flow: Workflow, node_id: str) -> list[list[tuple[str, str, str]]]:
    config: ProbeConfig = flow.graph.node(node_id).config
    return config.seen


def node_spans(flow: Workflow, node_id: str) -> list[tuple[float, float]]:
    """When each finished visit of a delayed probe began and ended (monotonic)."""
    config: ProbeConfig = flow.graph.node(node_id).config
    return config.spans


def texts(flow: Workflow, node_id: str) -> list[list[str]]:
    return [[text for _, _, text in visit] for visit in seen(flow, node_id)]


def keyword(**words: Any) -> ConditionConfig:
    words = {k: tuple(v) if isinstance(v, list) else (v,) for k, v in words.items()}
    return ConditionConfig("keyword", KeywordCondition(**words))


NEVER = ConditionConfig("function", FunctionCondition("false"))


class NoFunctions:
    def function(self, name: str, file: str) -> Any:
        raise AssertionError(f"no user function in these tests: {name}")

    def state(self) -> dict[str, Any]:
        return {}


def env(bus: EventBus, max_steps: int = 1000) -> RunEnv:
    edge_env: EdgeEnv = NoFunctions()
    return RunEnv(
        run_id="r1",
        bus=bus,
        tools=FakeTools(),
        make_provider=lambda *a: None,  # type: ignore[arg-type,return-value]
        edge_env=edge_env,
        max_steps=max_steps,
    )


async def run(flow: Workflow, bus: EventBus | None = None, **options: Any) -> GraphOutcome:
    return await GraphRun(flow.graph, env(bus or EventBus(), **options)).run(task_messages("T"))


def visits(outcome: GraphOutcome) -> dict[str, int]:
    return {n.id: n.visits for n in outcome.nodes}


# --- acyclic graphs ------------------------------------------------------------------------


async def test_a_layer_runs_concurrently_and_messages_arrive_in_completion_order() -> None:
    flow = workflow(
        [probe("A"), probe("B", delay=0.3), probe("C", delay=0.1), probe("D")],
        [edge("A", "B"), edge("A", "C"), edge("B", "D"), edge("C", "D")],
    )
    outcome = await run(flow)
    (b_began, b_ended), (c_began, c_ended) = (node_spans(flow, n)[0] for n in "BC")
    assert b_began < c_ended and c_began < b_ended  # B and C ran at the same time
    assert texts(flow, "D") == [["C(A(T))", "B(A(T))"]]  # C finished first
    assert outcome.output == "D(C(A(T))+B(A(T)))"


async def test_the_task_is_a_user_message_from_task_and_edges_deliver_user_messages() -> None:
    flow = workflow([probe("A"), probe("B")], [edge("A", "B")])
    await run(flow)
    assert seen(flow, "A") == [[("user", "TASK", "T")]]
    assert seen(flow, "B") == [[("user", "A", "A(T)")]]


async def test_trigger_and_carry_data_are_separate() -> None:
    flow = workflow(
        [probe("A"), probe("C"), probe("B"), probe("E")],
        [
            edge("A", "B", trigger=False),  # carries data, does not start B
            edge("C", "B", carry_data=False),  # starts B, carries nothing
            edge("A", "E", trigger=False),
        ],
        start=["A", "C"],
    )
    outcome = await run(flow)
    assert texts(flow, "B") == [["A(T)"]]
    assert visits(outcome)["E"] == 0  # data, but never triggered


async def test_keyword_conditions_route_and_an_unmet_condition_skips_the_branch() -> None:
    flow = workflow(
        [probe("judge", "approved"), probe("ship"), probe("fix"), probe("after_fix")],
        [
            edge("judge", "ship", condition=keyword(any="approved")),
            edge("judge", "fix", condition=keyword(none="approved")),
            edge("fix", "after_fix"),
        ],
        end=["ship", "fix"],
    )
    bus = EventBus()
    events = Collector(bus)
    outcome = await run(flow, bus)
    assert visits(outcome) == {"judge": 1, "ship": 1, "fix": 0, "after_fix": 0}
    assert outcome.output == "ship(approved)"
    skipped = {e.node_id for e in events.of(NodeFinishedEvent) if e.status == "skipped"}
    assert skipped == {"fix", "after_fix"}


async def test_a_false_condition_never_fires() -> None:
    flow = workflow([probe("A"), probe("B")], [edge("A", "B", condition=NEVER)])
    assert visits(await run(flow))["B"] == 0


async def test_final_output_is_the_first_end_node_with_output_then_the_first_sink() -> None:
    nodes = [probe("A"), probe("B"), probe("C")]
    flow = workflow(nodes, [edge("A", "B", condition=NEVER), edge("A", "C")], end=["B"])
    assert (await run(flow)).output == "C(A(T))"
    flow = workflow([probe("A"), probe("B"), probe("C")], [edge("A", "B"), edge("A", "C")])
    assert (await run(flow)).output == "B(A(T))"


async def test_a_failing_node_cancels_its_layer_and_is_raised() -> None:
    flow = workflow(
        [probe("A"), probe("B", delay=60.0), probe("C", delay=0.05, fail=True), probe("D")],
        [edge("A", "B"), edge("A", "C"), edge("C", "D")],
    )
    bus = EventBus()
    events = Collector(bus)
    with pytest.raises(RunFailedError, match="node 'C' failed: RuntimeError: C broke"):
        await asyncio.wait_for(run(flow, bus), 30)  # B would sleep a minute unless cancelled
    assert node_spans(flow, "B") == []
    finished = {e.node_id: (e.status, e.error) for e in events.of(NodeFinishedEvent)}
    assert finished["C"] == ("failed", "RuntimeError: C broke")
    assert finished["B"] == ("failed", "cancelled")
    assert "D" not in finished


# --- edge flags and the node's queue ---------------------------------------------------------


def loop_of(writer: NodeConfig, critic_answers: tuple[str, ...], *edges: EdgeConfig) -> Workflow:
    return workflow(
        [writer, probe("critic", *critic_answers), probe("done")],
        [
            edge("writer", "critic"),
            edge("critic", "writer", condition=keyword(none="OK")),
            edge("critic", "done", condition=keyword(any="OK")),
            *edges,
        ],
    )


async def test_a_node_forgets_its_inputs_after_a_visit_unless_they_are_kept() -> None:
    flow = loop_of(probe("writer", "w1", "w2", "w3"), ("again", "again", "OK"))
    outcome = await run(flow)
    assert visits(outcome) == {"writer": 3, "critic": 3, "done": 1}
    # context_window 0: each visit sees only what arrived since the last one.
    assert texts(flow, "writer") == [["T"], ["again"], ["again"]]
    assert texts(flow, "critic") == [["w1"], ["w2"], ["w3"]]
    assert outcome.output == "done(OK)"


async def test_context_window_keeps_the_newest_messages_and_the_nodes_own_outputs() -> None:
    flow = loop_of(probe("writer", "w1", "w2", context_window=-1), ("again", "OK"))
    await run(flow)
    # -1 keeps everything; a non-zero window also puts the node's outputs back in its queue.
    assert seen(flow, "writer") == [
        [("user", "TASK", "T")],
        [("user", "TASK", "T"), ("assistant", "writer", "w1"), ("user", "critic", "again")],
    ]
    flow = loop_of(probe("writer", "w1", "w2", "w3", context_window=2), ("a1", "a2", "OK"))
    await run(flow)
    # 2 keeps the newest two after a visit; the node's output and the reply then arrive.
    assert texts(flow, "writer") == [["T"], ["T", "w1", "a1"], ["w1", "a1", "w2", "a2"]]


async def test_keep_message_survives_the_reset_and_clear_flags_drop_queued_messages() -> None:
    flow = workflow(
        [probe("brief"), probe("writer", "w1", "w2"), probe("critic", "again", "OK")],
        [
            edge("brief", "writer", keep_message=True),
            edge("writer", "critic"),
            edge("critic", "writer", condition=keyword(none="OK")),
        ],
    )
    await run(flow)
    assert texts(flow, "writer") == [["brief(T)"], ["brief(T)", "again"]]
    flow = workflow(
        [probe("brief"), probe("writer", "w1", "w2"), probe("critic", "again", "OK")],
        [
            edge("brief", "writer", keep_message=True),
            edge("writer", "critic"),
            edge("critic", "writer", condition=keyword(none="OK"), clear_kept_context=True),
        ],
    )
    await run(flow)
    assert texts(flow, "writer") == [["brief(T)"], ["again"]]


async def test_a_self_loop_delivers_the_output_back_as_an_assistant_message() -> None:
    flow = workflow(
        [probe("think", "idea", "better", "DONE"), probe("out")],
        [
            edge("think", "think", condition=keyword(none="DONE")),
            edge("think", "out", condition=keyword(any="DONE")),
        ],
    )
    outcome = await run(flow)
    assert visits(outcome) == {"think": 3, "out": 1}
    assert seen(flow, "think")[1] == [("assistant", "think", "idea")]


# --- cycles ----------------------------------------------------------------------------------


async def test_a_cycle_is_entered_where_an_outside_edge_fired() -> None:
    flow = workflow(
        [probe("intro"), probe("writer", "w1", "w2"), probe("critic", "again", "OK"), probe("out")],
        [
            edge("intro", "writer"),
            edge("writer", "critic"),
            edge("critic", "writer", condition=keyword(none="OK")),
            edge("critic", "out", condition=keyword(any="OK")),
        ],
    )
    outcome = await run(flow)
    assert visits(outcome) == {"intro": 1, "writer": 2, "critic": 2, "out": 1}
    assert outcome.output == "out(OK)"


async def test_a_cycle_ends_when_its_entry_is_not_triggered_again() -> None:
    flow = workflow(
        [probe("a", "a1"), probe("b", "STOP"), probe("c")],
        [edge("a", "b"), edge("b", "a", condition=keyword(none="STOP")), edge("b", "c")],
    )
    outcome = await run(flow)
    # b's exit edge to c fires on the first pass: the cycle stops at once.
    assert visits(outcome) == {"a": 1, "b": 1, "c": 1}


async def test_nested_cycles_iterate_inside_the_outer_one() -> None:
    # outer: plan -> draft <-> polish (inner) -> review -> plan, until review says OK
    flow = workflow(
        [
            probe("plan", "p1", "p2"),
            probe("draft", "d1", "d2", "d3", "d4"),
            probe("polish", "more", "fine", "more", "fine"),
            probe("review", "redo", "OK"),
            probe("out"),
        ],
        [
            edge("plan", "draft"),
            edge("draft", "polish"),
            edge("polish", "draft", condition=keyword(any="more")),
            edge("polish", "review", condition=keyword(any="fine")),
            edge("review", "plan", condition=keyword(none="OK")),
            edge("review", "out", condition=keyword(any="OK")),
        ],
    )
    outcome = await run(flow)
    assert visits(outcome) == {"plan": 2, "draft": 4, "polish": 4, "review": 2, "out": 1}
    assert outcome.output == "out(OK)"


async def test_a_cycle_that_never_exits_stops_at_chatdevs_limit_and_says_so() -> None:
    flow = workflow([probe("a", "x"), probe("b", "y")], [edge("a", "b"), edge("b", "a")])
    bus = EventBus()
    events = Collector(bus)
    outcome = await run(flow, bus)
    assert visits(outcome) == {"a": 100, "b": 100}
    (note,) = events.of(GraphNoteEvent)
    assert note.note == "cycle_limit" and "100 iterations" in note.message


async def test_max_steps_ends_a_runaway_run_with_a_clear_error() -> None:
    flow = workflow([probe("a", "x"), probe("b", "y")], [edge("a", "b"), edge("b", "a")])
    with pytest.raises(RunFailedError, match=r"--max-steps=7 node visits at 'b'") as info:
        await run(flow, max_steps=7)
    assert "exit condition" in info.value.details[0]


async def test_two_entries_into_one_cycle_are_an_error() -> None:
    flow = workflow(
        [probe("s"), probe("a"), probe("b")],
        [edge("s", "a"), edge("s", "b"), edge("a", "b"), edge("b", "a")],
    )
    with pytest.raises(RunFailedError, match=r"entered at more than one node \(a, b\)"):
        await run(flow)


async def test_a_node_that_emits_nothing_stops_the_flow_downstream() -> None:
    flow = workflow(
        [probe("work", "w"), probe("gate", "released", silent_until=3), probe("out")],
        [edge("work", "gate"), edge("gate", "work", condition=NEVER), edge("gate", "out")],
        start=["work"],
    )
    outcome = await run(flow)
    assert visits(outcome)["out"] == 0  # the gate emitted nothing on its only visit


# --- the nodes of one step of a loop start together -----------------------------------------


def same_step_loop(delay: float) -> Workflow:
    """A loop in which `side` and `entry` share a step from the second iteration on.

    entry feeds side and work; work goes back to entry until its third answer; side is in the
    loop (by a never-firing, non-triggering edge back) but only a self-loop that never fires
    counts as its step predecessor, so it joins the first step once entry's edge triggered it.
    """
    return workflow(
        [
            probe("entry", "e1", "e2", "e3", delay=delay),
            probe("side", delay=delay),
            probe("work", "again", "again", "done", delay=delay),
            probe("out"),
        ],
        [
            edge("entry", "side"),
            edge("entry", "work"),
            edge("work", "entry", condition=keyword(none="done")),
            edge("work", "out", condition=keyword(any="done")),
            edge("side", "side", condition=NEVER),
            edge("side", "entry", condition=NEVER, trigger=False),
        ],
    )


async def test_the_nodes_of_a_step_read_their_queues_as_the_step_began() -> None:
    flow = same_step_loop(0.0)
    outcome = await run(flow)
    assert visits(outcome) == {"entry": 3, "side": 2, "work": 3, "out": 1}
    # side runs beside entry's second visit: it gets entry's first answer, not the one entry
    # gives meanwhile (ChatDev starts them in parallel threads); that one arrives during side's
    # visit and is gone with the rest of its queue afterwards (context_window 0).
    assert seen(flow, "side") == [[("user", "entry", "e1")], []]


async def test_a_step_of_a_loop_in_which_nothing_was_triggered_is_passed_over() -> None:
    flow = workflow(
        [probe("a", "go"), probe("b"), probe("c"), probe("out")],
        [
            edge("a", "b", condition=keyword(any="never")),
            edge("b", "c"),
            edge("c", "a"),
            edge("a", "out", condition=keyword(any="stop")),
        ],
    )
    outcome = await run(flow)  # b's and c's steps run nothing; a is not triggered again
    assert visits(outcome) == {"a": 1, "b": 0, "c": 0, "out": 0}


async def test_a_loop_is_scheduled_alike_whether_its_nodes_answer_at_once_or_take_time() -> None:
    instant, slow = same_step_loop(0.0), same_step_loop(0.02)
    assert visits(await run(instant)) == visits(await run(slow))
    for node_id in ("entry", "side", "work"):
        assert seen(instant, node_id) == seen(slow, node_id)


# --- majority voting ---------------------------------------------------------------------


async def test_majority_voting_runs_every_node_on_the_task_and_picks_the_common_answer() -> None:
    flow = workflow([probe("a", "42"), probe("b", "41"), probe("c", "42"), probe("d", "")])
    flow = Workflow(
        graph=flow.graph.__class__(**{**flow.graph.__dict__, "is_majority_voting": True}),
        path=flow.path,
    )
    bus = EventBus()
    events = Collector(bus)
    outcome = await run(flow, bus)
    assert visits(outcome) == {"a": 1, "b": 1, "c": 1, "d": 1}
    assert all(texts(flow, n) == [["T"]] for n in "abcd")
    assert outcome.output == "42"
    (note,) = events.of(GraphNoteEvent)
    assert note.details["votes"] == 2 and note.details["voters"] == 4
