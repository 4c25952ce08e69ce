"""`devall tools call` as a small run: one tool call, recorded like a run of a workflow.

The call is traced with the events a run emits (`run.started`, the servers', `node.started`,
`tool.call`, `tool.result`, `attachment.saved`, `node.finished`, `run.finished`), so the run
directory holds an events.jsonl and a result.json of the same shape as `devall run` writes.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

from devall_cli.engine.session import RunSession
from devall_cli.engine.tool_events import BusToolEvents
from devall_cli.errors import DevallError, ExitCode
from devall_cli.events import (
    AttachmentSavedEvent,
    NodeFinishedEvent,
    NodeStartedEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from devall_cli.tools.arguments import ArgumentChecker, invalid_arguments
from devall_cli.tools.base import AttachmentBlock, AuthCallback, Elicitor, ToolResult, ToolSpec
from devall_cli.tools.catalog import WORKFLOW_SCOPE, CallOutcome, ToolScope, find_workflow_tool
from devall_cli.tools.icons import traced_icons
from devall_cli.tools.manager import ToolManager
from devall_cli.tools.normalize import blocks_to_json, render_for_model
from devall_cli.tools.plan import tooling_type
from devall_cli.tools.policy import ToolPolicy

CALL_ID = "call-1"


async def run_tool_call(
    session: RunSession,
    tool: str,
    arguments: Mapping[str, Any],
    node: str | None = None,
    *,
    elicitor: Elicitor | None = None,
    on_auth: AuthCallback | None = None,
    scope: ToolScope = WORKFLOW_SCOPE,
    policy: ToolPolicy | None = None,
) -> CallOutcome:
    """Start the servers of the tool's node, call the tool once, and trace it all as a run.

    A tool's error result is data: it is returned (the run's status is `failed`, exit 1), and so
    are arguments that do not fit the tool's input schema (an `invalid_arguments` result; the
    tool is not called). A failure to start or reach a server raises its DevallError after
    `run.finished`; `scope` words the error of a tool that is not there. Under the tool
    policy (`policy`: the command line's layer) a denied tool is refused; a call the policy
    would ask about or refuse runs: the caller asked for it.
    """
    emit, run_id = session.bus.emit, session.run_id
    started = time.monotonic()
    task = f"{tool} {json.dumps(dict(arguments), ensure_ascii=False, default=str)}"
    emit(RunStartedEvent(run_id=run_id, workflow=session.workflow.name, task=task))
    events = BusToolEvents(session.bus, run_id)
    try:
        async with ToolManager(
            session.workflow,
            run_id=run_id,
            run_dir=session.run_dir,
            events=events,
            elicitor=elicitor,
            on_auth=on_auth,
            direct_client=True,
            policy=policy,
            list_denied=True,
            caller_approves=True,
        ) as manager:
            node_id, spec = await find_workflow_tool(manager, tool, node, scope)
            outcome = await _call(session, manager, node_id, spec, arguments)
    except (asyncio.CancelledError, KeyboardInterrupt):
        _finish(session, started, "interrupted", error="interrupted", code=ExitCode.INTERRUPTED)
        raise
    except DevallError as exc:
        _finish(session, started, "failed", error=exc.message, code=exc.exit_code)
        raise
    result = outcome.result
    if result.is_error:
        _finish(session, started, "failed", error=f"tool '{tool}' returned an error")
    else:
        _finish(session, started, "ok", output=render_for_model(result.blocks))
    return outcome


async def _call(
    session: RunSession,
    manager: ToolManager,
    node_id: str,
    spec: ToolSpec,
    arguments: Mapping[str, Any],
) -> CallOutcome:
    emit, run_id = session.bus.emit, session.run_id
    fields: dict[str, Any] = {
        "run_id": run_id,
        "node_id": node_id,
        "call_id": CALL_ID,
        "tool": spec.name,
        "original_name": spec.original_name,
        "source": spec.source,
        "server": spec.server,
    }
    # An MCP tool's arguments are checked here (a function source checks its own, knowing what
    # the schema cannot say: `**kwargs`, parameters that take None).
    is_server = tooling_type(manager.plan.source(spec.source_id).tooling).is_server
    checker = ArgumentChecker(spec.input_schema) if is_server else None
    if checker is not None:
        arguments = checker.unset_nulls_dropped(arguments)
    emit(NodeStartedEvent(run_id=run_id, node_id=node_id))
    emit(ToolCallEvent(**fields, arguments=dict(arguments), icons=traced_icons(spec.icons)))
    t0 = time.monotonic()
    try:
        result = _refused(checker, spec, arguments) or await manager.call(
            node_id, spec.name, arguments
        )
    except DevallError as exc:
        took = _ms(t0)
        error_class = str(getattr(exc, "status", "") or type(exc).__name__)
        emit(ToolErrorEvent(**fields, error_class=error_class, duration_ms=took))
        emit(NodeFinishedEvent(run_id=run_id, node_id=node_id, status="failed", error=exc.message))
        raise
    took = round(result.duration_ms or _ms(t0), 3)
    emit(
        ToolResultEvent(
            **fields,
            blocks=blocks_to_json(result.blocks),
            is_error=result.is_error,
            error_class=result.error_class,
            duration_ms=took,
        )
    )
    _attachments(session, node_id, spec.name, result)
    text = render_for_model(result.blocks)
    status = "failed" if result.is_error else "ok"
    emit(
        NodeFinishedEvent(
            run_id=run_id,
            node_id=node_id,
            status=status,
            output=text,
            outputs=(text,),
            duration_ms=took,
            error=text if result.is_error else None,
        )
    )
    return CallOutcome(spec, node_id, result, took)


def _refused(
    checker: ArgumentChecker | None, spec: ToolSpec, arguments: Mapping[str, Any]
) -> ToolResult | None:
    """The `invalid_arguments` result of arguments that do not fit an MCP tool's input schema.

    The server would refuse them too, in its validator's words; checked here, the caller gets
    one line per problem and the call is not sent.
    """
    problems = checker.problems(arguments) if checker is not None else []
    return invalid_arguments(spec.name, problems, source="devall") if problems else None


def _attachments(session: RunSession, node_id: str, tool: str, result: ToolResult) -> None:
    for block in result.blocks:
        if isinstance(block, AttachmentBlock):
            session.bus.emit(
                AttachmentSavedEvent(
                    run_id=session.run_id,
                    node_id=node_id,
                    tool=tool,
                    path=block.path,
                    mime_type=block.mime_type,
                    size=block.size,
                    sha256=block.sha256,
                )
            )


def _finish(
    session: RunSession,
    started: float,
    status: str,
    *,
    output: str = "",
    error: str | None = None,
    code: int = ExitCode.FAILED,
) -> None:
    session.bus.emit(
        RunFinishedEvent(
            run_id=session.run_id,
            status=status,
            output=output,
            duration_ms=_ms(started),
            error=error,
            exit_code=0 if status == "ok" else int(code),
        )
    )


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)
