"""The Rich console trace: what a user reads on stderr, at each verbosity."""

from __future__ import annotations

import io

from rich.console import Console

from devall_cli.events import (
    EventBus,
    ModelRequestEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ServerExitedEvent,
    ServerLogEvent,
    ServerStartingEvent,
    ToolCallEvent,
)
from devall_cli.redaction import Redactor
from devall_cli.trace.console import ConsoleSink, shorten
from devall_cli.trace.status import WaitState
from tests.unit.trace.scenario import LONG_LINES, SECRET, run_secret_flow


def make_console(
    *, terminal: bool = False, no_color: bool = True
) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=100, force_terminal=terminal, no_color=no_color, highlight=False
    )
    return console, buffer


async def render(verbosity: str) -> str:
    console, buffer = make_console()
    bus = EventBus()
    bus.subscribe(ConsoleSink(console, Redactor([SECRET]), verbosity))  # type: ignore[arg-type]
    await run_secret_flow(bus)
    assert bus.sink_errors == []
    return buffer.getvalue()


async def test_normal_trace_shows_nodes_models_tools_and_a_summary() -> None:
    out = await render("normal")
    assert SECRET not in out and "tok-abc" in out  # only declared secrets are masked
    assert "devall run run-1 · workflow flow" in out
    assert "starting db (mcp_remote: http://127.0.0.1:9/mcp?token=***)" in out
    assert "server 'db' ready · db-server · protocol 2025-11-25 · 3 tools · 12 ms" in out
    assert "node intro" in out and "node worker" in out  # rule headers
    assert "model · worker · round 1" in out  # every line names its node
    assert '⇢ lookup {"text": "***", "token": "tok-abc"}' in out
    assert "tool lookup · worker · function functions/" in out
    assert "tool query · worker · function functions/" in out and "error (tool_error)" in out
    assert "no such table" in out
    assert "attachment: attachments/plot_image_1.png (image/png, 68 bytes" in out
    assert "✓ node worker ok" in out
    assert "run summary" in out
    assert "✓ run ok in" in out
    # Long tool output is cut in the normal mode.
    assert "row 3: value 9" in out
    assert f"row {LONG_LINES - 1}:" not in out
    assert "more lines; --verbose shows all" in out


async def test_verbose_trace_shows_everything() -> None:
    out = await render("verbose")
    assert SECRET not in out
    assert f"row {LONG_LINES - 1}: value {(LONG_LINES - 1) ** 2}" in out
    assert "task: use ***" in out
    assert "→ model · worker · round 1 · 1 message · tools: lookup, plot, query" in out
    assert "more lines" not in out


async def test_quiet_prints_nothing() -> None:
    assert await render("quiet") == ""


def test_summary_counts_and_failures_in_red_lines() -> None:
    console, buffer = make_console()
    sink = ConsoleSink(console, Redactor(["pw-1234"]))
    sink(RunStartedEvent(run_id="r", workflow="flow", task="t"))
    sink(ServerExitedEvent(run_id="r", server_id="fs", status="exited", message="crash pw-1234"))
    sink(ServerLogEvent(run_id="r", server_id="fs", line="only in verbose"))
    sink(RunFinishedEvent(run_id="r", status="failed", error="server 'fs' exited", exit_code=4))
    out = buffer.getvalue()
    assert "✗ server 'fs' exited: crash ***" in out
    assert "only in verbose" not in out
    assert "✗ run failed after 0 ms (exit 4): server 'fs' exited" in out


def test_live_status_only_on_a_terminal() -> None:
    console, _ = make_console()
    sink = ConsoleSink(console, Redactor())
    sink(RunStartedEvent(run_id="r", workflow="flow", task="t"))
    assert sink._live is None  # not a terminal: no animation
    console, _ = make_console(terminal=True, no_color=True)
    sink = ConsoleSink(console, Redactor())
    sink(RunStartedEvent(run_id="r", workflow="flow", task="t"))
    assert sink._live is None  # a terminal without colour (--no-color, NO_COLOR): none either
    console, buffer = make_console(terminal=True, no_color=False)
    sink = ConsoleSink(console, Redactor())
    sink(RunStartedEvent(run_id="r", workflow="flow", task="t"))
    assert sink._live is not None
    sink(ServerStartingEvent(run_id="r", server_id="fs", source="mcp_local", target="srv"))
    sink(RunFinishedEvent(run_id="r", status="ok"))
    assert sink._live is None
    assert "starting servers: fs" in buffer.getvalue()


def test_wait_state_says_what_the_run_waits_for() -> None:
    waits = WaitState()
    assert waits.describe().startswith("running…")
    waits.update(ServerStartingEvent(run_id="r", server_id="fs", source="mcp_local", target="x"))
    assert "starting servers: fs" in waits.describe()
    waits.update(ModelRequestEvent(run_id="r", node_id="A", round=2, messages=3))
    waits.update(ToolCallEvent(run_id="r", node_id="B", call_id="c1", tool="fs_read"))
    line = waits.describe()
    assert "A waiting on the model (round 2)" in line
    assert "B waiting on tool fs_read" in line
    assert line.endswith("elapsed")


def test_shorten_keeps_short_text_and_marks_cuts() -> None:
    assert shorten("one\ntwo") == "one\ntwo"
    cut = shorten("\n".join(str(i) for i in range(20)), lines=3)
    assert cut.startswith("0\n1\n2\n… (17 more lines")
