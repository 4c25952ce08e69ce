"""One small run, full of a secret, whose events the trace sinks are tested with."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from devall_cli.config.model import Workflow
from devall_cli.engine.runner import RunResult, run_workflow
from devall_cli.engine.session import RunSession
from devall_cli.events import EventBus, ServerReadyEvent, ServerStartingEvent
from devall_cli.tools.base import AttachmentBlock, TextBlock, ToolResult
from tests.unit.engine.builders import FakeTools, agent, edge, literal, turn, workflow

SECRET = "SECRET-7f3a9c"
LONG_LINES = 40


async def lookup(arguments: Mapping[str, Any]) -> ToolResult:
    lines = [f"row {i}: value {i * i}" for i in range(LONG_LINES)]
    return ToolResult(blocks=(TextBlock("\n".join([f"found {arguments['text']}", *lines])),))


async def plot(arguments: Mapping[str, Any]) -> ToolResult:
    return ToolResult(
        blocks=(
            AttachmentBlock("attachments/plot_image_1.png", "image/png", 68, "e3" * 32, "image"),
        )
    )


async def failing(arguments: Mapping[str, Any]) -> ToolResult:
    return ToolResult(blocks=(TextBlock("no such table"),), is_error=True, error_class="tool_error")


def secret_flow() -> Workflow:
    return workflow(
        [
            literal("intro", "look it up"),
            agent(
                "worker",
                turn(None, ("lookup", {"text": SECRET, "token": "tok-abc"}), ("plot", {})),
                turn(None, ("query", {"sql": "select 1"})),
                turn(f"answer with {SECRET}: {{tool_result}}"),
            ),
        ],
        [edge("intro", "worker")],
        secrets=[SECRET],
    )


def tools() -> FakeTools:
    return FakeTools({"lookup": lookup, "plot": plot, "query": failing})


async def run_secret_flow(bus: EventBus) -> RunResult:
    """Run the flow, with server events as the ToolManager would emit them."""
    bus.emit(
        ServerStartingEvent(
            run_id="run-1",
            server_id="db",
            source="mcp_remote",
            target=f"http://127.0.0.1:9/mcp?token={SECRET}",
        )
    )
    bus.emit(
        ServerReadyEvent(
            run_id="run-1",
            server_id="db",
            protocol_version="2025-11-25",
            server_name="db-server",
            tools=3,
            connect_ms=12.5,
        )
    )
    return await run_workflow(
        RunSession(secret_flow(), run_id="run-1", run_dir=Path("run"), bus=bus),
        task=f"use {SECRET}",
        tool_manager_factory=tools().factory,
    )
