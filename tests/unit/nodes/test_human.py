"""The `human` node and its reply sources, run by the real scheduler."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devall_cli.config.model import NodeConfig, Workflow
from devall_cli.engine.graph import GraphOutcome, GraphRun, RunEnv
from devall_cli.errors import RunFailedError
from devall_cli.events import EventBus, HumanAskedEvent, HumanRepliedEvent
from devall_cli.messages import task_messages
from devall_cli.nodes.human import HumanConfig
from devall_cli.nodes.human_input import (
    HUMAN_INPUT,
    Answers,
    HumanRequest,
    NoOperator,
    ScriptedReplies,
)
from tests.unit.engine.builders import Collector, FakeTools, edge, literal, passthrough, workflow


class NoFunctions:
    def function(self, folder: str, name: str) -> Any:
        return None

    def state(self) -> dict[str, Any]:
        return {}


class SlowOperator:
    """Answers `reply to <node>` after a pause, recording how many questions overlap."""

    channel = "terminal"

    def __init__(self) -> None:
        self.open = 0
        self.most_open = 0
        self.requests: list[HumanRequest] = []

    async def reply(self, request: HumanRequest) -> str:
        self.requests.append(request)
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        await asyncio.sleep(0.05)
        self.open -= 1
        return f"reply to {request.path}"


def human(node_id: str, task: str | None = None, **settings: Any) -> NodeConfig:
    return NodeConfig(id=node_id, type="human", config=HumanConfig(task), **settings)


async def run(flow: Workflow, source: Any, bus: EventBus | None = None) -> GraphOutcome:
    env = RunEnv(
        run_id="r1",
        bus=bus or EventBus(),
        tools=FakeTools(),
        make_provider=lambda *a: None,  # type: ignore[arg-type,return-value]
        edge_env=NoFunctions(),
        extras={HUMAN_INPUT: source} if source is not None else {},
    )
    return await GraphRun(flow.graph, env).run(task_messages("the task"))


def request(path: str = "review", visit: int = 1, node_id: str = "") -> HumanRequest:
    return HumanRequest(node_id or path.rsplit("/", 1)[-1], path, visit, "", "")


# --- reply sources -----------------------------------------------------------------------


async def test_answers_are_taken_by_path_then_id_then_star_each_in_order() -> None:
    replies = {"outer/review": ("deep 1",), "review": ("own 1", "own 2"), "*": ("any 1",)}
    source = ScriptedReplies(Answers("answers.yaml", replies))
    nested = [await source.reply(request("outer/review", v)) for v in (1, 2, 3)]
    assert nested == ["deep 1", "own 1", "own 2"]
    assert await source.reply(request("review", 4)) == "any 1"


async def test_running_out_of_replies_fails_naming_the_node_the_visit_and_the_file() -> None:
    source = ScriptedReplies(Answers("answers.yaml", {"review": ("only",)}))
    await source.reply(request("review"))
    with pytest.raises(RunFailedError) as caught:
        await source.reply(request("review", 2))
    assert caught.value.message == (
        "node 'review' (visit 2) waits for a human reply, but answers.yaml has no reply left "
        "for it (all used: 1 under 'review')"
    )
    with pytest.raises(RunFailedError) as caught:
        await source.reply(request("other"))
    assert "(no list under 'other' or '*')" in caught.value.message


async def test_without_a_terminal_or_answers_asking_fails_at_once() -> None:
    with pytest.raises(RunFailedError) as caught:
        await asyncio.wait_for(NoOperator().reply(request("review")), 1)
    assert "node 'review' waits for a human reply, but there is no terminal" in str(caught.value)
    assert "--answers FILE" in caught.value.hint


# --- the node in a graph -----------------------------------------------------------------


async def test_the_reply_is_a_user_message_and_both_sides_are_events() -> None:
    flow = workflow(
        [literal("draft", "my draft"), human("review", "Check it."), passthrough("out")],
        [edge("draft", "review"), edge("review", "out")],
    )
    bus = EventBus()
    events = Collector(bus)
    operator = SlowOperator()
    outcome = await run(flow, operator, bus)
    assert outcome.output == "reply to review"
    review = next(n for n in outcome.nodes if n.id == "review")
    assert [(m.role, m.source) for m in review.outputs] == [("user", "review")]
    (asked,) = operator.requests
    assert asked.description == "Check it."
    assert asked.inputs == "=== INPUT FROM draft (user) ===\n\nmy draft"
    assert events.of(HumanAskedEvent) == [
        HumanAskedEvent(
            ts=events.of(HumanAskedEvent)[0].ts,
            run_id="r1",
            node_id="review",
            visit=1,
            description="Check it.",
            channel="terminal",
        )
    ]
    (replied,) = events.of(HumanRepliedEvent)
    assert (replied.reply, replied.channel, replied.visit) == ("reply to review", "terminal", 1)


async def test_without_config_description_the_node_description_is_shown() -> None:
    node = human("review", None, description="Node-level task.")
    operator = SlowOperator()
    await run(workflow([node]), operator)
    assert operator.requests[0].description == "Node-level task."


async def test_human_nodes_of_one_layer_ask_one_at_a_time() -> None:
    flow = workflow(
        [literal("go", "x"), human("a"), human("b"), human("c")],
        [edge("go", "a"), edge("go", "b"), edge("go", "c")],
    )
    operator = SlowOperator()
    await run(flow, operator)
    assert [r.path for r in operator.requests] == ["a", "b", "c"]
    assert operator.most_open == 1


async def test_a_graph_with_a_human_node_and_no_source_fails_naming_it() -> None:
    flow = workflow([literal("go", "x"), human("gate")], [edge("go", "gate")])
    with pytest.raises(RunFailedError, match="node 'gate' waits for a human reply"):
        await run(flow, None)
