"""result.json: status, outputs, tool summary, attachments, timings; redacted and atomic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devall_cli.engine.runner import run_workflow
from devall_cli.engine.session import RunSession
from devall_cli.errors import RunFailedError
from devall_cli.events import EventBus
from devall_cli.redaction import Redactor
from devall_cli.trace.result import ResultSink, error_details, write_result
from tests.unit.engine.builders import FakeTools, agent, edge, literal, workflow
from tests.unit.trace.scenario import SECRET, run_secret_flow


async def test_result_json_summarizes_the_run(tmp_path: Path) -> None:
    bus = EventBus()
    sink = ResultSink(tmp_path / "result.json", Redactor([SECRET]), node_ids=["intro", "worker"])
    bus.subscribe(sink)
    result = await run_secret_flow(bus)
    raw = (tmp_path / "result.json").read_text(encoding="utf-8")
    assert SECRET not in raw
    doc = json.loads(raw)
    assert doc == sink.document
    assert (doc["status"], doc["exit_code"], doc["run_id"], doc["workflow"]) == (
        "ok",
        0,
        "run-1",
        "flow",
    )
    assert doc["output"] == "answer with ***: no such table"
    assert [(n["id"], n["status"]) for n in doc["nodes"]] == [("intro", "ok"), ("worker", "ok")]
    assert doc["nodes"][1]["model_calls"] == 3 and doc["nodes"][1]["tool_calls"] == 3
    tools = {t["tool"]: (t["calls"], t["errors"]) for t in doc["tools"]}
    assert tools == {"lookup": (1, 0), "plot": (1, 0), "query": (1, 1)}
    assert doc["attachments"] == [
        {
            "path": "attachments/plot_image_1.png",
            "mime_type": "image/png",
            "size": 68,
            "sha256": "e3" * 32,
            "tool": "plot",
            "node": "worker",
        }
    ]
    assert doc["duration_ms"] > 0 and doc["started_at"].endswith("+00:00")
    assert doc["totals"]["tool_calls"] == result.tool_calls == 3
    assert list(tmp_path.iterdir()) == [tmp_path / "result.json"]  # no temporary file left


async def test_a_failed_run_still_writes_result_json(tmp_path: Path) -> None:
    flow = workflow(
        [literal("A", "x"), agent("B"), literal("C", "never")],
        [edge("A", "B"), edge("B", "C")],
    )

    def exploding(config, **_):  # type: ignore[no-untyped-def]
        raise RunFailedError("node 'B' failed: no model")

    bus = EventBus()
    bus.subscribe(ResultSink(tmp_path / "result.json", Redactor(), node_ids=["A", "B", "C"]))
    with pytest.raises(RunFailedError):
        await run_workflow(
            RunSession(flow, run_id="r", run_dir=tmp_path, bus=bus),
            task="t",
            tool_manager_factory=FakeTools().factory,
            provider_factory=exploding,
        )
    doc = json.loads((tmp_path / "result.json").read_text())
    assert (doc["status"], doc["exit_code"]) == ("failed", 1)
    assert "no model" in doc["error"]
    assert [(n["id"], n["status"]) for n in doc["nodes"]] == [
        ("A", "ok"),
        ("B", "failed"),
        ("C", "not_run"),
    ]


async def test_write_result_replaces_the_file_atomically(tmp_path: Path) -> None:
    bus = EventBus()
    sink = ResultSink(tmp_path / "unused.json", Redactor())
    bus.subscribe(sink)
    await run_secret_flow(bus)
    target = tmp_path / "out" / "result.json"
    target.parent.mkdir()
    target.write_text("old content")
    document = write_result(target, sink.recorder.result(), Redactor([SECRET]))
    assert json.loads(target.read_text()) == document
    assert SECRET not in target.read_text()
    assert sorted(p.name for p in target.parent.iterdir()) == ["result.json"]


def test_an_errors_details_keep_their_last_lines_each_cut_short() -> None:
    lines = [f"  | line {n} " + "x" * (1000 if n == 29 else 0) for n in range(30)]
    kept = error_details(lines)
    assert len(kept) == 20 and kept[0] == "  | line 10 " and kept[-2] == "  | line 28 "
    assert len(kept[-1]) == 500 and kept[-1].endswith("…")


def test_result_json_text_is_exactly_what_json_dumps_writes() -> None:
    from devall_cli.trace.result import json_text

    document = {
        "a": [1, -2.5, 1e-07, float("inf"), None, True, False, "é\"\\\n\u2028"],
        "b": {"nested": {}, "empty": [], 3: (1, 2), None: Path("p"), 1.5: {"x"}},
        "c": [[], [{}], [[1]]],
    }
    expected = json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"
    assert json_text(document) == expected
