"""Events and the bus: plain-dict form, and sinks that fail without breaking the run."""

from __future__ import annotations

import json
from pathlib import Path

from devall_cli.engine.runner import run_workflow
from devall_cli.engine.session import RunSession
from devall_cli.events import (
    Event,
    EventBus,
    ModelReplyEvent,
    ServerStartingEvent,
    ToolErrorEvent,
    ToolResultEvent,
    event_to_dict,
)
from tests.unit.engine.builders import Collector, FakeTools, literal, workflow


def test_event_to_dict_has_kind_ts_run_id_and_plain_fields() -> None:
    event = ToolResultEvent(
        run_id="r1",
        node_id="A",
        call_id="c1",
        tool="fs_read",
        original_name="read",
        source="mcp_local",
        server="python server.py",
        blocks=({"type": "text", "text": "hi"},),
        duration_ms=3.5,
    )
    data = event_to_dict(event)
    assert data["kind"] == "tool.result"
    assert data["run_id"] == "r1" and isinstance(data["ts"], float)
    assert data["blocks"] == [{"type": "text", "text": "hi"}]
    assert data["original_name"] == "read"
    json.dumps(data)  # JSON-able as it is


def test_every_kind_is_distinct_and_tool_error_is_a_tool_result() -> None:
    error = ToolErrorEvent(run_id="r", node_id="A", call_id="c", tool="t")
    assert error.kind == "tool.error" and error.is_error
    assert isinstance(error, ToolResultEvent)
    assert ServerStartingEvent.kind == "server.starting"
    assert (
        event_to_dict(ServerStartingEvent(server_id="s", source="mcp_local", target="x"))["source"]
        == "mcp_local"
    )
    reply = ModelReplyEvent(node_id="A", round=1, usage={"total_tokens": 3})
    assert event_to_dict(reply)["usage"] == {"total_tokens": 3}


def test_a_failing_sink_is_reported_once_and_others_still_receive_events() -> None:
    reports: list[str] = []
    bus = EventBus(on_sink_error=lambda sink, exc: reports.append(str(exc)))

    def broken(event: Event) -> None:
        raise OSError("disk full")

    collector = Collector()
    bus.subscribe(broken)
    bus.subscribe(collector)
    for _ in range(3):
        bus.emit(ServerStartingEvent(server_id="s", source="mcp_local", target="x"))
    assert len(collector.events) == 3
    assert reports == ["disk full"]
    assert len(bus.sink_errors) == 1 and "OSError: disk full" in bus.sink_errors[0]


async def test_a_run_survives_a_broken_sink() -> None:
    bus = EventBus()

    def broken(event: Event) -> None:
        raise RuntimeError("renderer bug")

    bus.subscribe(broken)
    events = Collector(bus)
    result = await run_workflow(
        RunSession(workflow([literal("A", "out")]), run_id="r", run_dir=Path("r"), bus=bus),
        task="t",
        tool_manager_factory=FakeTools().factory,
    )
    assert result.output == "out"
    assert events.kinds() == ["run.started", "node.started", "node.finished", "run.finished"]
