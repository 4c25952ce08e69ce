"""`BusToolEvents`: the tool layer's reports (tools.base.ToolEvents) put on a bus as events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from devall_cli.events import (
    ElicitationAnsweredEvent,
    ElicitationRequestedEvent,
    Event,
    EventBus,
    SamplingAnsweredEvent,
    SamplingRequestedEvent,
    ServerAuthEvent,
    ServerExitedEvent,
    ServerLogEvent,
    ServerReadyEvent,
    ServerRestartedEvent,
    ServerRootsEvent,
    ServerStartingEvent,
    ToolApprovalEvent,
    ToolProgressEvent,
    ToolsDeniedEvent,
)
from devall_cli.tools.base import (
    CallContext,
    ElicitationAnswer,
    ElicitationRequest,
    SamplingReply,
    SamplingRequest,
)


def _call_fields(call: CallContext | None) -> dict[str, Any]:
    if call is None:
        return {}
    return {"node_id": call.node_id, "call_id": call.call_id, "tool": call.tool}


class BusToolEvents:
    """The tool layer's reports (tools.base.ToolEvents) as events on a bus."""

    def __init__(self, bus: EventBus, run_id: str) -> None:
        self._bus = bus
        self._run_id = run_id

    def _emit(self, event: Event) -> None:
        self._bus.emit(event)

    def server_starting(self, server_id: str, source: str, target: str) -> None:
        """`server.starting`."""
        self._emit(
            ServerStartingEvent(
                run_id=self._run_id, server_id=server_id, source=source, target=target
            )
        )

    def server_ready(self, server_id: str, info: Any, tools: int, pid: int | None) -> None:
        """`server.ready`."""
        self._emit(
            ServerReadyEvent(
                run_id=self._run_id,
                server_id=server_id,
                protocol_version=info.protocol_version,
                server_name=info.server_name,
                tools=tools,
                connect_ms=info.connect_ms,
                pid=pid,
                sandbox=getattr(info, "sandbox", None),
            )
        )

    def server_exited(self, server_id: str, status: str, message: str) -> None:
        """`server.exited`."""
        self._emit(
            ServerExitedEvent(
                run_id=self._run_id, server_id=server_id, status=status, message=message
            )
        )

    def server_log(self, server_id: str, line: str) -> None:
        """`server.log` of a log line."""
        self._emit(ServerLogEvent(run_id=self._run_id, server_id=server_id, line=line))

    def server_message(self, server_id: str, level: str, logger: str | None, text: str) -> None:
        """`server.log` of a server's log message: `level (logger): text`, and its level."""
        origin = f" ({logger})" if logger else ""
        line = f"{level}{origin}: {text}"
        self._emit(
            ServerLogEvent(
                run_id=self._run_id, server_id=server_id, line=line, level=level, logger=logger
            )
        )

    def server_restarted(self, server_id: str, attempt: int) -> None:
        """`server.restarted`."""
        self._emit(
            ServerRestartedEvent(run_id=self._run_id, server_id=server_id, attempt=attempt)
        )

    def server_auth(self, server_id: str, notice: Any) -> None:
        """`server.auth`."""
        self._emit(
            ServerAuthEvent(
                run_id=self._run_id,
                server_id=server_id,
                step=notice.step,
                message=notice.message,
                url=notice.url,
            )
        )

    def tool_progress(
        self,
        server_id: str,
        call: CallContext,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        """`tool.progress`."""
        self._emit(
            ToolProgressEvent(
                run_id=self._run_id,
                node_id=call.node_id,
                call_id=call.call_id,
                tool=call.tool,
                server_id=server_id,
                progress=progress,
                total=total,
                message=message,
            )
        )

    def elicitation_requested(
        self, server_id: str, call: CallContext | None, request: ElicitationRequest, policy: str
    ) -> None:
        """`elicitation.requested`."""
        self._emit(
            ElicitationRequestedEvent(
                run_id=self._run_id,
                server_id=server_id,
                **_call_fields(call),
                message=request.message,
                mode=request.mode,
                schema=request.schema,
                url=request.url,
                policy=policy,
            )
        )

    def elicitation_answered(
        self, server_id: str, call: CallContext | None, answer: ElicitationAnswer, channel: str
    ) -> None:
        """`elicitation.answered`."""
        self._emit(
            ElicitationAnsweredEvent(
                run_id=self._run_id,
                server_id=server_id,
                **_call_fields(call),
                action=answer.action,
                content=answer.content,
                channel=channel,
            )
        )

    def sampling_requested(
        self, server_id: str, call: CallContext | None, request: SamplingRequest
    ) -> None:
        """`sampling.requested`."""
        self._emit(
            SamplingRequestedEvent(
                run_id=self._run_id,
                server_id=server_id,
                **_call_fields(call),
                messages=request.messages,
                system_prompt=request.system_prompt,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                model_hints=request.model_hints,
            )
        )

    def sampling_answered(
        self,
        server_id: str,
        call: CallContext | None,
        status: str,
        reply: SamplingReply | None,
        error: str | None,
        duration_ms: float,
    ) -> None:
        """`sampling.answered`."""
        self._emit(
            SamplingAnsweredEvent(
                run_id=self._run_id,
                server_id=server_id,
                **_call_fields(call),
                status=status,
                text=reply.text if reply is not None else None,
                model=reply.model if reply is not None else None,
                stop_reason=reply.stop_reason if reply is not None else None,
                error=error,
                duration_ms=duration_ms,
            )
        )

    def roots_sent(self, server_id: str, roots: Sequence[str], reason: str) -> None:
        """`server.roots`."""
        self._emit(
            ServerRootsEvent(
                run_id=self._run_id, server_id=server_id, roots=tuple(roots), reason=reason
            )
        )

    def tool_denied(self, node_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        """`tool.denied`."""
        self._emit(
            ToolsDeniedEvent(run_id=self._run_id, node_id=node_id, tools=[dict(i) for i in items])
        )

    def tool_approval(
        self,
        node_id: str,
        call_id: str,
        tool: str,
        server_id: str,
        approved: bool,
        by: str,
        reason: str,
    ) -> None:
        """`tool.approval`."""
        self._emit(
            ToolApprovalEvent(
                run_id=self._run_id,
                node_id=node_id,
                call_id=call_id,
                tool=tool,
                server_id=server_id,
                approved=approved,
                by=by,
                reason=reason,
            )
        )
