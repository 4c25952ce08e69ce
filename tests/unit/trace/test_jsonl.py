"""events.jsonl: one complete, redacted JSON object per event per line."""

from __future__ import annotations

import json
from pathlib import Path

from devall_cli.events import EventBus
from devall_cli.redaction import Redactor
from devall_cli.trace.jsonl import JsonlSink
from tests.unit.trace.scenario import LONG_LINES, SECRET, run_secret_flow


async def test_every_event_is_one_redacted_json_line(tmp_path: Path) -> None:
    path = tmp_path / "run" / "events.jsonl"
    bus = EventBus()
    sink = JsonlSink(path, Redactor([SECRET]))
    bus.subscribe(sink)
    await run_secret_flow(bus)
    sink.close()
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert "tok-abc" in text  # an argument named `token` is not a declared secret: kept exact
    records = [json.loads(line) for line in text.splitlines()]
    kinds = [r["kind"] for r in records]
    assert kinds[:3] == ["server.starting", "server.ready", "run.started"]
    assert kinds[-1] == "run.finished"
    assert {"tool.call", "tool.result", "attachment.saved", "model.reply"} <= set(kinds)
    assert all(r["run_id"] == "run-1" and isinstance(r["ts"], float) for r in records)
    lookup = next(r for r in records if r["kind"] == "tool.result" and r["tool"] == "lookup")
    # Complete, not truncated like the console.
    assert lookup["blocks"][0]["text"].count("\n") == LONG_LINES
    assert lookup["blocks"][0]["text"].startswith("found ***")
    call = next(r for r in records if r["kind"] == "tool.call" and r["tool"] == "lookup")
    assert call["arguments"] == {"text": "***", "token": "tok-abc"}


def test_lines_are_on_disk_before_close(tmp_path: Path) -> None:
    from devall_cli.events import ServerLogEvent

    path = tmp_path / "events.jsonl"
    sink = JsonlSink(path, Redactor())
    sink(ServerLogEvent(run_id="r", server_id="s", line="listening"))
    assert json.loads(path.read_text())["line"] == "listening"
    sink.close()
    sink.close()
    sink(ServerLogEvent(run_id="r", server_id="s", line="after close"))  # ignored, no crash
    assert "after close" not in path.read_text()
