"""The tool calls of one model turn of an agent: run concurrently, traced as `tool.call` and
`tool.result` events; skill tools are answered by the visit's skills, and a tool the active skill
does not allow is refused, without reaching its server. Each call carries its `CallContext`:
the node's model answers the server's sampling requests, and the operator's terminal (what the
command put in `NodeRun.extras[ELICITOR]`) its elicitation requests. When the run is traced,
`NodeRun.extras[REQUEST_META]` gives the `_meta` each call's request carries (its trace context),
asked right after the call's `tool.call` event, which opened the call's span."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from devall_cli.errors import DevallError
from devall_cli.events import (
    AttachmentSavedEvent,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from devall_cli.nodes.base import NodeRun
from devall_cli.providers.base import ToolCall
from devall_cli.skills.tools import SkillTools
from devall_cli.tools.base import (
    AttachmentBlock,
    CallContext,
    Elicitor,
    Sampler,
    TextBlock,
    ToolResult,
    ToolSpec,
)
from devall_cli.tools.icons import traced_icons
from devall_cli.tools.normalize import blocks_to_json

ELICITOR = "elicitor"  # the key of the operator's terminal form in NodeRun.extras
REQUEST_META = "request_meta"  # the key of a RequestMeta in NodeRun.extras
# (node path, call id) -> what the call's request carries in its `_meta` (the trace context).
RequestMeta = Callable[[str, str], Mapping[str, str]]


async def run_calls(
    node_id: str,
    calls: Sequence[ToolCall],
    by_name: Mapping[str, ToolSpec],
    run: NodeRun,
    skills: SkillTools | None,
    sampler: Sampler | None = None,
) -> list[ToolResult]:
    """Execute the calls of one turn concurrently; results in the order of the calls."""
    if len(calls) == 1:  # the common case: no task to spawn, no other call to stop on failure
        return [await _run_call(node_id, calls[0], by_name, run, skills, sampler)]
    tasks = [
        asyncio.create_task(_run_call(node_id, call, by_name, run, skills, sampler))
        for call in calls
    ]
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

    def call_event(
        self, arguments: Mapping[str, Any], icons: Sequence[Mapping[str, Any]] = ()
    ) -> ToolCallEvent:
        return ToolCallEvent(**self._fields(), arguments=dict(arguments), icons=icons)

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
            meta=result.meta,
        )

    def _fields(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies every value, twice per tool call.
        return dict(vars(self))


async def _run_call(
    node_id: str,
    call: ToolCall,
    by_name: Mapping[str, ToolSpec],
    run: NodeRun,
    skills: SkillTools | None,
    sampler: Sampler | None = None,
) -> ToolResult:
    spec = by_name.get(call.name)
    trace = _CallTrace.of(node_id, call, spec, run.run_id)
    run.emit(trace.call_event(call.arguments, traced_icons(spec.icons if spec else None)))
    started = time.monotonic()
    answered = None if skills is None else await _skill_answer(skills, call, by_name)
    if call.error is not None:
        # Bad JSON from the model is a tool error the model can correct, not a failure.
        result = _error_result(call.name, call.error, "invalid_arguments")
    elif answered is not None:
        result = answered
    else:
        elicitor: Elicitor | None = run.extras.get(ELICITOR)
        meta_of: RequestMeta | None = run.extras.get(REQUEST_META)
        context = CallContext(
            node_id,
            call.id,
            call.name,
            sampler=sampler,
            elicitor=elicitor,
            request_meta=meta_of(node_id, call.id) if meta_of is not None else {},
        )
        try:
            result = await run.tools.call(node_id, call.name, call.arguments, context=context)
        except DevallError as exc:
            error_class = str(getattr(exc, "status", "") or type(exc).__name__)
            failed = _error_result(call.name, exc.message, error_class)
            run.emit(trace.result_event(failed, _ms(started), infra=True))
            raise
    run.emit(trace.result_event(result, result.duration_ms or _ms(started)))
    for block in result.blocks:
        if isinstance(block, AttachmentBlock):
            run.emit(
                AttachmentSavedEvent(
                    run_id=run.run_id,
                    node_id=node_id,
                    tool=call.name,
                    path=block.path,
                    mime_type=block.mime_type,
                    size=block.size,
                    sha256=block.sha256,
                )
            )
    return result


async def _skill_answer(
    skills: SkillTools, call: ToolCall, by_name: Mapping[str, ToolSpec]
) -> ToolResult | None:
    """A skill tool's result, or the refusal of a tool the active skill does not allow."""
    if skills.handles(call.name):
        return await skills.answer(call.name, call.arguments)
    return skills.refuse(by_name.get(call.name), call.name)


def _error_result(tool: str, message: str, error_class: str) -> ToolResult:
    text = message if message.startswith("Error") else f"Error: {message}"
    return ToolResult(
        blocks=(TextBlock(text=text, tool_name=tool, source="devall"),),
        is_error=True,
        error_class=error_class,
    )


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)
