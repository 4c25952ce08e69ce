"""How the trace shows what MCP servers ask and report: progress (a bar on the live status line,
else a line at most every 2 s per call), log messages by level, elicitation and sampling."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from devall_cli.events import (
    ElicitationAnsweredEvent,
    ElicitationRequestedEvent,
    EventBus,
    SamplingAnsweredEvent,
    SamplingRequestedEvent,
    ServerLogEvent,
    ToolCallEvent,
    ToolProgressEvent,
)
from devall_cli.redaction import Redactor
from devall_cli.trace import console_mcp
from devall_cli.trace.console import ConsoleSink
from devall_cli.trace.console_mcp import progress_text

SECRET = "sk-console-mcp-7c1d"


def sink(verbosity: str = "normal") -> tuple[ConsoleSink, io.StringIO, EventBus]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, no_color=True, highlight=False)
    console_sink = ConsoleSink(console, Redactor([SECRET]), verbosity)  # type: ignore[arg-type]
    bus = EventBus()
    bus.subscribe(console_sink)
    return console_sink, buffer, bus


def progress(value: float, message: str | None = None) -> ToolProgressEvent:
    return ToolProgressEvent(
        node_id="n",
        call_id="c1",
        tool="crunch",
        server_id="s",
        progress=value,
        total=4,
        message=message,
    )


def test_progress_lines_at_most_every_two_seconds_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(console_mcp.time, "monotonic", lambda: now[0])
    _, buffer, bus = sink()
    bus.emit(progress(1, "step 1"))
    now[0] += 1.0
    bus.emit(progress(2))  # too soon: not shown
    now[0] += 1.5
    bus.emit(progress(3, "step 3"))
    lines = [line for line in buffer.getvalue().splitlines() if "progress" in line]
    assert lines == [
        "  progress · n · crunch · 1/4 (25%) · step 1",
        "  progress · n · crunch · 3/4 (75%) · step 3",
    ]
    assert progress_text(5, None) == "5"


def test_the_live_status_line_draws_a_bar_per_running_call() -> None:
    console_sink, _, bus = sink()
    bus.emit(ToolCallEvent(node_id="n", call_id="c1", tool="crunch", arguments={}))
    bus.emit(progress(2, "half way"))
    buffer = io.StringIO()
    Console(file=buffer, width=100, no_color=True).print(console_sink._status_line())
    shown = buffer.getvalue()
    assert "n · crunch" in shown and "2/4 (50%)" in shown and "half way" in shown


def test_log_messages_from_warning_up_in_the_normal_trace() -> None:
    _, buffer, bus = sink()
    for level in ("info", "warning", "error"):
        bus.emit(ServerLogEvent(server_id="s", line=f"{level}: note", level=level))
    bus.emit(ServerLogEvent(server_id="s", line="stderr line"))
    out = buffer.getvalue()
    assert "s | warning: note" in out and "s | error: note" in out
    assert "info: note" not in out and "stderr line" not in out


def test_elicitation_and_sampling_are_traced_and_masked() -> None:
    _, buffer, bus = sink()
    bus.emit(
        ElicitationRequestedEvent(
            server_id="s",
            node_id="n",
            tool="ask",
            message=f"key {SECRET}?",
            policy="accept_defaults",
        )
    )
    bus.emit(
        ElicitationAnsweredEvent(
            server_id="s", node_id="n", action="accept", content={"a": 1}, channel="config"
        )
    )
    bus.emit(
        SamplingRequestedEvent(
            server_id="s",
            node_id="n",
            messages=({"role": "user", "content": "hi"},),
            max_tokens=64,
        )
    )
    bus.emit(SamplingAnsweredEvent(server_id="s", node_id="n", status="failed", error="no"))
    out = buffer.getvalue()
    assert "? server s asks the operator (node n, tool ask)" in out
    assert "key ***?" in out and SECRET not in out
    assert "answered by the config (elicitation: accept_defaults)" in out
    assert "elicitation · s · accept (by the config)" in out and '{"a": 1}' in out
    assert "sampling · server s asks node n's model · 1 message · at most 64 tokens" in out
    assert "sampling · s · failed: no" in out
