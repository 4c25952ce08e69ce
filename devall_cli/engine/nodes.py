"""What each node type does (SPEC.md §3): the agent's model ⇄ tools loop, literal, passthrough."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from devall_cli.config.model import AgentConfig, LiteralConfig, NodeConfig, PassthroughConfig
from devall_cli.engine.events import (
    AttachmentSavedEvent,
    EventBus,
    ModelReplyEvent,
    ModelRequestEvent,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from devall_cli.errors import DevallError, RunFailedError
from devall_cli.providers.base import AssistantMessage, Provider, ToolCall
from devall_cli.tools.base import AttachmentBlock, TextBlock, ToolResult, ToolSpec
from devall_cli.tools.normalize import blocks_to_json, render_for_model


class ToolDispatcher(Protocol):
    """What the engine needs from the ToolManager."""

    async def specs_for(self, node_id: str) -> list[ToolSpec]:
        """The tools offered to this node's model."""
        ...

    async def call(self, node_id: str, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call a tool by final name; tool failures come back as `is_error` results."""
        ...


ProviderFactory = Callable[[AgentConfig], Provider]


@dataclass(frozen=True)
class NodeContext:
    """Everything a node needs from the run it belongs to."""

    run_id: str
    bus: EventBus
    tools: ToolDispatcher
    make_provider: ProviderFactory


async def run_node(node: NodeConfig, inputs: list[str], ctx: NodeContext) -> str:
    """Run one node on its inputs and return its output text."""
    config = node.config
    if isinstance(config, AgentConfig):
        return await run_agent(node.id, config, inputs, ctx)
    if isinstance(config, LiteralConfig):
        return config.content
    if isinstance(config, PassthroughConfig):
        if config.only_last_message:
            return inputs[-1] if inputs else ""
        return "\n".join(inputs)
    raise RunFailedError(f"node '{node.id}': node type {node.type!r} is not supported")


# --- agent -----------------------------------------------------------------------------------


async def run_agent(node_id: str, config: AgentConfig, inputs: list[str], ctx: NodeContext) -> str:
    """The model ⇄ tools loop; the output is the model's final text."""
    messages: list[dict[str, Any]] = []
    if config.role:
        messages.append({"role": "system", "content": config.role})
    messages.extend({"role": "user", "content": text} for text in inputs)
    specs = await ctx.tools.specs_for(node_id)
    provider = ctx.make_provider(config)
    try:
        return await _loop(node_id, config, messages, specs, provider, ctx)
    finally:
        # Closing must not hide the error that ended the loop, nor be skipped on cancellation.
        with contextlib.suppress(Exception):
            await provider.aclose()


async def _loop(
    node_id: str,
    config: AgentConfig,
    messages: list[dict[str, Any]],
    specs: list[ToolSpec],
    provider: Provider,
    ctx: NodeContext,
) -> str:
    by_name = {spec.name: spec for spec in specs}
    round_no = 0
    while True:
        round_no += 1
        reply = await _ask_model(node_id, round_no, messages, specs, provider, ctx)
        messages.append(reply.to_message())
        if not reply.tool_calls:
            return reply.content or ""
        if round_no > config.tool_loop_limit:
            raise RunFailedError(
                f"node '{node_id}': the model still asked for tools after "
                f"tool_loop_limit={config.tool_loop_limit} rounds of tool calls",
                details=["raise params.tool_loop_limit if the task needs more rounds"],
            )
        results = await _run_calls(node_id, reply.tool_calls, by_name, ctx)
        for call, result in zip(reply.tool_calls, results, strict=True):
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": render_for_model(result.blocks, max_chars=config.max_result_chars),
                }
            )


async def _ask_model(
    node_id: str,
    round_no: int,
    messages: Sequence[Mapping[str, Any]],
    specs: list[ToolSpec],
    provider: Provider,
    ctx: NodeContext,
) -> AssistantMessage:
    ctx.bus.emit(
        ModelRequestEvent(
            run_id=ctx.run_id,
            node_id=node_id,
            round=round_no,
            messages=len(messages),
            tools=[spec.name for spec in specs],
        )
    )
    started = time.monotonic()
    reply = await provider.complete(list(messages), specs)
    ctx.bus.emit(
        ModelReplyEvent(
            run_id=ctx.run_id,
            node_id=node_id,
            round=round_no,
            content=reply.content,
            tool_calls=[
                {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
                for c in reply.tool_calls
            ],
            usage=asdict(reply.usage),
            duration_ms=_ms(started),
        )
    )
    return reply


# --- tool calls ------------------------------------------------------------------------------


async def _run_calls(
    node_id: str, calls: Sequence[ToolCall], by_name: Mapping[str, ToolSpec], ctx: NodeContext
) -> list[ToolResult]:
    """Execute the calls of one turn concurrently; results in the order of the calls."""
    if len(calls) == 1:  # the common case: no task to spawn, no other call to stop on failure
        return [await _run_call(node_id, calls[0], by_name, ctx)]
    tasks = [asyncio.create_task(_run_call(node_id, call, by_name, ctx)) for call in calls]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        # An infrastructure failure (or cancellation) stops the other calls of the turn.
        pending = [task for task in tasks if not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    for task in tasks:  # the first failure in call order, if any
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return [task.result() for task in tasks]


@dataclass(frozen=True)
class _CallTrace:
    """The fields every event of one tool call carries."""

    run_id: str
    node_id: str
    call_id: str
    tool: str
    original_name: str
    source: str
    server: str

    @classmethod
    def of(cls, node_id: str, call: ToolCall, spec: ToolSpec | None, run_id: str) -> _CallTrace:
        if spec is None:  # a name the model made up; the ToolManager answers with an error
            return cls(run_id, node_id, call.id, call.name, call.name, "", "")
        return cls(
            run_id, node_id, call.id, call.name, spec.original_name, spec.source, spec.server
        )

    def call_event(self, arguments: Mapping[str, Any]) -> ToolCallEvent:
        return ToolCallEvent(**self._fields(), arguments=dict(arguments))

    def result_event(
        self, result: ToolResult, duration_ms: float, *, infra: bool = False
    ) -> ToolResultEvent:
        kind = ToolErrorEvent if infra else ToolResultEvent
        return kind(
            **self._fields(),
            blocks=blocks_to_json(result.blocks),
            is_error=result.is_error,
            error_class=result.error_class,
            duration_ms=duration_ms,
        )

    def _fields(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies every value, twice per tool call.
        return dict(vars(self))


async def _run_call(
    node_id: str, call: ToolCall, by_name: Mapping[str, ToolSpec], ctx: NodeContext
) -> ToolResult:
    trace = _CallTrace.of(node_id, call, by_name.get(call.name), ctx.run_id)
    ctx.bus.emit(trace.call_event(call.arguments))
    started = time.monotonic()
    if call.error is not None:
        # Bad JSON from the model is a tool error the model can correct, not a failure.
        result = _error_result(call.name, call.error, "invalid_arguments")
    else:
        try:
            result = await ctx.tools.call(node_id, call.name, call.arguments)
        except DevallError as exc:
            error_class = str(getattr(exc, "status", "") or type(exc).__name__)
            failed = _error_result(call.name, exc.message, error_class)
            ctx.bus.emit(trace.result_event(failed, _ms(started), infra=True))
            raise
    ctx.bus.emit(trace.result_event(result, result.duration_ms or _ms(started)))
    for block in result.blocks:
        if isinstance(block, AttachmentBlock):
            ctx.bus.emit(
                AttachmentSavedEvent(
                    run_id=ctx.run_id,
                    node_id=node_id,
                    tool=call.name,
                    path=block.path,
                    mime_type=block.mime_type,
                    size=block.size,
                    sha256=block.sha256,
                )
            )
    return result


def _error_result(tool: str, message: str, error_class: str) -> ToolResult:
    text = message if message.startswith("Error") else f"Error: {message}"
    return ToolResult(
        blocks=(TextBlock(text=text, tool_name=tool, source="devall"),),
        is_error=True,
        error_class=error_class,
    )


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)
