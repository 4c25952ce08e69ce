"""The agent node's model ⇄ tools loop, driven by the real scripted provider."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from devall_cli.errors import RunFailedError, ServerDiedError
from devall_cli.events import (
    AttachmentSavedEvent,
    EventBus,
    ModelReplyEvent,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.providers import make_provider
from devall_cli.providers.base import AssistantMessage, Provider, Usage, tool_call_from_json
from devall_cli.tools.base import AttachmentBlock, ToolResult, ToolSpec
from tests.unit.engine.builders import (
    Collector,
    FakeTools,
    agent,
    echo_tool,
    literal,
    passthrough,
    run_node,
    text_result,
    turn,
)


class Recording:
    """Wraps a provider and keeps a copy of every conversation it was sent."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.requests: list[list[dict[str, Any]]] = []
        self.closed = False

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        self.requests.append([dict(m) for m in messages])
        return await self.inner.complete(messages, tools)

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()


class Harness:
    """A node context over fake tools, recording providers and events."""

    def __init__(self, tools: FakeTools, provider: Provider | None = None) -> None:
        self.bus = EventBus()
        self.events = Collector(self.bus)
        self.tools = tools
        self.fixed = provider
        self.providers: list[Recording] = []
        self.ctx = self

    def make(self, config: AgentConfig, state: dict[str, Any] | None = None) -> Provider:
        provider = Recording(self.fixed or make_provider(config, state=state))
        self.providers.append(provider)
        return provider

    @property
    def last_request(self) -> list[dict[str, Any]]:
        return self.providers[-1].requests[-1]


async def test_tool_results_come_back_as_tool_messages_in_call_order() -> None:
    tools = FakeTools({"slow": echo_tool("slow:", delay=0.3), "fast": echo_tool("fast:", 0.3)})
    node = agent(
        "A",
        turn(None, ("slow", {"text": "1"}), ("fast", {"text": "2"})),
        turn("results: {tool_results}"),
        role="You are terse.",
    )
    harness = Harness(tools)
    output = await run_node(node, ["the task"], harness.ctx)
    assert tools.peak == 2  # the two calls of one turn ran concurrently
    assert output == "results: slow:1\nfast:2"
    messages = harness.last_request
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[0]["content"] == "You are terse."
    assert messages[1]["content"] == "the task"
    call_ids = [c["id"] for c in messages[2]["tool_calls"]]
    assert [m["tool_call_id"] for m in messages[3:]] == call_ids
    assert [m["content"] for m in messages[3:]] == ["slow:1", "fast:2"]
    assert tools.calls == [("A", "slow", {"text": "1"}), ("A", "fast", {"text": "2"})]
    assert harness.providers[0].closed


async def test_events_of_one_agent_turn_come_in_order() -> None:
    tools = FakeTools({"echo": echo_tool()})
    node = agent("A", turn(None, ("echo", {"text": "hi"})), turn("done"))
    harness = Harness(tools)
    await run_node(node, ["task"], harness.ctx)
    assert harness.events.kinds() == [
        "model.request",
        "model.reply",
        "tool.call",
        "tool.result",
        "model.request",
        "model.reply",
    ]
    call = harness.events.of(ToolCallEvent)[0]
    assert (call.tool, call.source, call.server, dict(call.arguments)) == (
        "echo",
        "function",
        "functions/",
        {"text": "hi"},
    )
    result = harness.events.of(ToolResultEvent)[0]
    assert result.call_id == call.call_id
    assert dict(result.blocks[0])["text"] == "hi"
    assert not result.is_error
    reply = harness.events.of(ModelReplyEvent)[0]
    assert [c["name"] for c in reply.tool_calls] == ["echo"]


async def test_exceeding_tool_loop_limit_fails_the_node() -> None:
    script = [turn(None, ("echo", {"text": str(i)})) for i in range(3)] + [turn("done")]
    tools = FakeTools({"echo": echo_tool()})
    assert await run_node(agent("A", *script, tool_loop_limit=3), ["t"], Harness(tools).ctx) == (
        "done"
    )
    harness = Harness(FakeTools({"echo": echo_tool()}))
    with pytest.raises(RunFailedError, match="tool_loop_limit=2") as info:
        await run_node(agent("A", *script, tool_loop_limit=2), ["t"], harness.ctx)
    assert "node 'A'" in info.value.message
    assert len(harness.tools.calls) == 2
    assert harness.providers[0].closed


class BadJsonProvider:
    """Asks for a tool with broken JSON arguments, then repeats what the tool answered."""

    def __init__(self) -> None:
        self.turn = 0

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        self.turn += 1
        if self.turn == 1:
            call = tool_call_from_json("c1", "echo", '{"text": "unterminated')
            return AssistantMessage(None, (call,), Usage(10, 5, 15))
        return AssistantMessage(f"tool said: {messages[-1]['content']}", (), Usage(20, 5, 25))

    async def aclose(self) -> None:
        pass


async def test_bad_json_arguments_become_an_error_result_for_the_model() -> None:
    tools = FakeTools({"echo": echo_tool()})
    harness = Harness(tools, BadJsonProvider())
    output = await run_node(agent("A"), ["t"], harness.ctx)
    assert tools.calls == []  # the tool was never called
    assert output.startswith("tool said: Error: tool call arguments are not valid JSON")
    result = harness.events.of(ToolResultEvent)[0]
    assert result.is_error and result.error_class == "invalid_arguments"


async def test_tool_errors_are_data_and_the_loop_goes_on() -> None:
    async def broken(arguments: Mapping[str, Any]) -> ToolResult:
        return text_result("disk full", is_error=True)

    tools = FakeTools({"write": broken})
    node = agent("A", turn(None, ("write", {}), ("nope", {})), turn("{tool_results}"))
    harness = Harness(tools)
    output = await run_node(node, ["t"], harness.ctx)
    assert output == "disk full\nunknown tool 'nope'"
    assert [r.is_error for r in harness.events.of(ToolResultEvent)] == [True, True]


async def test_an_infrastructure_failure_fails_the_node_with_its_class() -> None:
    async def dying(arguments: Mapping[str, Any]) -> ToolResult:
        raise ServerDiedError("server 'fs' died (exit status 1)")

    harness = Harness(FakeTools({"read": dying}))
    with pytest.raises(ServerDiedError):
        await run_node(agent("A", turn(None, ("read", {}))), ["t"], harness.ctx)
    error = harness.events.of(ToolErrorEvent)[0]
    assert error.kind == "tool.error"
    assert error.is_error and "died" in error.blocks[0]["text"]
    assert harness.providers[0].closed


async def test_long_tool_results_are_capped_for_the_model() -> None:
    async def huge(arguments: Mapping[str, Any]) -> ToolResult:
        return text_result("x" * 5000)

    harness = Harness(FakeTools({"dump": huge}))
    node = agent("A", turn(None, ("dump", {})), turn("ok"), max_result_chars=100)
    await run_node(node, ["t"], harness.ctx)
    tool_message = harness.last_request[-1]
    assert tool_message["role"] == "tool"
    assert 100 <= len(tool_message["content"]) < 200
    # The trace keeps the complete result.
    assert len(harness.events.of(ToolResultEvent)[0].blocks[0]["text"]) == 5000


async def test_attachments_are_announced() -> None:
    block = AttachmentBlock("attachments/plot_image_1.png", "image/png", 4, "ab" * 32, "image")

    async def plot(arguments: Mapping[str, Any]) -> ToolResult:
        return ToolResult(blocks=(block,))

    harness = Harness(FakeTools({"plot": plot}))
    await run_node(agent("A", turn(None, ("plot", {})), turn("ok")), ["t"], harness.ctx)
    saved = harness.events.of(AttachmentSavedEvent)
    assert [(s.path, s.mime_type, s.size, s.tool) for s in saved] == [
        ("attachments/plot_image_1.png", "image/png", 4, "plot")
    ]


async def test_literal_and_passthrough_nodes() -> None:
    ctx = Harness(FakeTools()).ctx
    assert await run_node(literal("L", "fixed text"), ["ignored"], ctx) == "fixed text"
    assert await run_node(passthrough("P"), ["a", "b"], ctx) == "b"
    assert await run_node(passthrough("P", only_last=False), ["a", "b"], ctx) == "a\nb"
    assert await run_node(passthrough("P"), [], ctx) == ""
