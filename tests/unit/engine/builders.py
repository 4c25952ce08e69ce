"""Small builders for workflows and an in-memory tool manager used by the engine tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from devall_cli.config.model import EdgeConfig, GraphConfig, NodeConfig, Workflow
from devall_cli.events import Event, EventBus
from devall_cli.messages import USER, Message
from devall_cli.nodes import NODE_TYPES, NodeRun
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.nodes.literal import LiteralConfig
from devall_cli.nodes.passthrough import PassthroughConfig
from devall_cli.providers.scripted import ScriptedToolCall, ScriptedTurn
from devall_cli.redaction import Redactor
from devall_cli.tools.base import TextBlock, ToolResult, ToolSpec

ToolFn = Callable[[Mapping[str, Any]], Awaitable[ToolResult]]


def turn(content: str | None = None, *calls: tuple[str, Mapping[str, Any]]) -> ScriptedTurn:
    """One scripted assistant turn: text and/or tool calls given as (name, arguments)."""
    return ScriptedTurn(
        content=content,
        tool_calls=tuple(ScriptedToolCall(name, dict(args)) for name, args in calls),
    )


def agent(node_id: str, *script: ScriptedTurn, **settings: Any) -> NodeConfig:
    """A scripted agent node."""
    config = AgentConfig(
        provider="scripted", name="script", provider_config=tuple(script), **settings
    )
    return NodeConfig(id=node_id, type="agent", config=config)


def literal(node_id: str, content: str) -> NodeConfig:
    """A literal node."""
    return NodeConfig(id=node_id, type="literal", config=LiteralConfig(content=content))


def passthrough(node_id: str, *, only_last: bool = True) -> NodeConfig:
    """A passthrough node."""
    config = PassthroughConfig(only_last_message=only_last)
    return NodeConfig(id=node_id, type="passthrough", config=config)


def edge(source: str, target: str, **settings: Any) -> EdgeConfig:
    """An edge (defaults as in the YAML: condition true, carry_data and trigger on)."""
    return EdgeConfig(source=source, target=target, **settings)


def workflow(
    nodes: Iterable[NodeConfig],
    edges: Iterable[EdgeConfig] = (),
    *,
    start: Iterable[str] | None = None,
    end: Iterable[str] = (),
    secrets: Iterable[str] = (),
    graph_id: str = "flow",
) -> Workflow:
    """A workflow; the start defaults to the first node."""
    nodes = tuple(nodes)
    graph = GraphConfig(
        nodes=nodes,
        start=tuple(start) if start is not None else (nodes[0].id,),
        end=tuple(end),
        edges=tuple(edges),
        id=graph_id,
    )
    return Workflow(graph=graph, path=Path("flow.yaml"), redactor=Redactor(secrets))


def text_result(text: str, *, is_error: bool = False) -> ToolResult:
    """A one-text-block result."""
    return ToolResult(blocks=(TextBlock(text=text),), is_error=is_error)


class FakeTools:
    """A ToolManager stand-in: tools are async functions, every call is recorded."""

    def __init__(self, tools: Mapping[str, ToolFn] | None = None) -> None:
        self.tools = dict(tools or {})
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.started = False
        self.closed = False
        self.start_error: BaseException | None = None
        self.in_flight = 0
        self.peak = 0  # the most calls that ran at once

    def factory(self, workflow: Workflow, **_: Any) -> FakeTools:
        """Usable as `tool_manager_factory`."""
        return self

    async def start(self) -> None:
        self.started = True
        if self.start_error is not None:
            raise self.start_error

    async def specs_for(self, node_id: str) -> list[ToolSpec]:
        return [
            ToolSpec(
                name=name,
                original_name=name,
                description=f"the {name} tool",
                input_schema={"type": "object"},
                source="function",
                server="functions/",
                source_id="functions",
            )
            for name in self.tools
        ]

    async def call(
        self, node_id: str, name: str, arguments: Mapping[str, Any], **_: Any
    ) -> ToolResult:
        self.calls.append((node_id, name, dict(arguments)))
        if name not in self.tools:
            return ToolResult((TextBlock(f"unknown tool '{name}'"),), True, "unknown_tool")
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await self.tools[name](arguments)
        finally:
            self.in_flight -= 1

    async def close(self) -> None:
        self.closed = True


def echo_tool(prefix: str = "", delay: float = 0.0) -> ToolFn:
    """A tool answering `<prefix><arguments['text']>` after `delay` seconds."""

    async def run(arguments: Mapping[str, Any]) -> ToolResult:
        if delay:
            await asyncio.sleep(delay)
        return text_result(f"{prefix}{arguments.get('text', '')}")

    return run


class Collector:
    """An event sink keeping every event."""

    def __init__(self, bus: EventBus | None = None) -> None:
        self.events: list[Event] = []
        if bus is not None:
            bus.subscribe(self)

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [event.kind for event in self.events]

    def of(self, cls: type[Any]) -> list[Any]:
        return [event for event in self.events if isinstance(event, cls)]


async def run_node(
    node: NodeConfig,
    inputs: list[str],
    ctx: Any,
    *,
    state: dict[str, Any] | None = None,
) -> str:
    """One visit of `node` on user messages; its outputs' texts, newline-joined.

    `ctx` has `bus`, `tools` and `make(config, state)` (the agent tests' harness).
    """
    kind = NODE_TYPES.get(node.type)
    assert kind is not None
    run = NodeRun(
        node=node,
        inputs=[Message(role=USER, text=text) for text in inputs],
        visit=1,
        path=node.id,
        run_id="r1",
        emit=ctx.bus.emit,
        tools=ctx.tools,
        make_provider=ctx.make,
        state=state if state is not None else {},
    )
    return "\n".join(message.text for message in await kind.run(run))
