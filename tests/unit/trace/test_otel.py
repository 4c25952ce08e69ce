"""OpenTelemetry export: a run's spans (nesting, GenAI and MCP attributes, redaction), the trace
context each tool call sends its server, the settings, the bounded flush and the lazy import."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from devall_cli.engine.runner import run_workflow
from devall_cli.engine.session import RunSession
from devall_cli.errors import UsageError
from devall_cli.events import (
    EventBus,
    NodeFinishedEvent,
    NodeStartedEvent,
    RunFinishedEvent,
    RunStartedEvent,
)
from devall_cli.nodes.agent_calls import REQUEST_META
from devall_cli.tools.base import CallContext, TextBlock, ToolResult
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.mcp_local import LocalSource
from devall_cli.trace import otel_export
from devall_cli.trace.otel import OtelSink
from devall_cli.trace.otel_attributes import node_infos
from devall_cli.trace.otel_export import otel_settings
from tests.conftest import REPO_ROOT, SERVERS_DIR
from tests.helpers import cli, direct_local_source, free_port, write_tool_flow
from tests.unit.engine.builders import FakeTools, agent, turn, workflow
from tests.unit.trace.scenario import SECRET, run_secret_flow, secret_flow

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    yield InMemorySpanExporter()


def sink_on(exporter: InMemorySpanExporter, wf: Any, *, content: bool = False) -> OtelSink:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelSink(provider.get_tracer("test"), wf.redactor, node_infos(wf), content=content)


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def everything_said(spans: tuple[ReadableSpan, ...]) -> str:
    """Every name, attribute and status text of the spans, as one string."""
    parts = [
        json.dumps([s.name, dict(s.attributes or {}), s.status.description]) for s in spans
    ]
    return "\n".join(parts)


async def test_a_run_is_one_trace_with_nodes_models_and_tools_nested_as_they_ran(
    exporter: InMemorySpanExporter,
) -> None:
    bus = EventBus()
    bus.subscribe(sink_on(exporter, secret_flow()))
    await run_secret_flow(bus)
    spans = exporter.get_finished_spans()
    assert len({s.context.trace_id for s in spans}) == 1
    named = by_name(spans)
    (run,) = named["run flow"]
    assert run.parent is None and run.attributes["devall.run.status"] == "ok"
    (server,) = named["start_server db"]  # started before the run began: still its child
    assert parent_of(server) == run.context.span_id and server.start_time <= run.start_time
    assert server.attributes["server.address"] == "127.0.0.1"
    assert server.attributes["network.transport"] == "tcp"
    assert server.attributes["mcp.protocol.version"] == "2025-11-25"
    (intro,) = named["node intro"]
    (worker,) = named["invoke_agent worker"]
    assert parent_of(intro) == parent_of(worker) == run.context.span_id
    assert worker.attributes["gen_ai.provider.name"] == "scripted"
    models = sorted(named["chat script"], key=lambda s: s.start_time or 0)
    assert [parent_of(m) for m in models] == [worker.context.span_id] * 3
    assert [m.attributes["gen_ai.response.finish_reasons"] for m in models] == [
        ("tool_call",),
        ("tool_call",),
        ("stop",),
    ]
    assert models[0].attributes["gen_ai.operation.name"] == "chat"
    assert models[0].attributes["gen_ai.request.model"] == "script"
    assert "gen_ai.usage.input_tokens" in models[0].attributes
    tools = named["execute_tool lookup"] + named["execute_tool plot"] + named["execute_tool query"]
    assert [parent_of(t) for t in tools] == [worker.context.span_id] * 3
    assert {t.attributes["gen_ai.operation.name"] for t in tools} == {"execute_tool"}
    assert tools[0].attributes["gen_ai.tool.call.id"] != tools[1].attributes["gen_ai.tool.call.id"]
    (query,) = named["execute_tool query"]
    assert query.status.status_code.name == "ERROR"
    assert query.attributes["error.type"] == "tool_error"
    # Without --otel-content no content: no arguments, replies or task.
    assert "gen_ai.tool.call.arguments" not in tools[0].attributes
    assert "devall.task" not in run.attributes
    assert "tok-abc" not in everything_said(spans)


async def test_no_secret_reaches_an_attribute_even_with_content(
    exporter: InMemorySpanExporter,
) -> None:
    bus = EventBus()
    bus.subscribe(sink_on(exporter, secret_flow(), content=True))
    await run_secret_flow(bus)
    spans = exporter.get_finished_spans()
    said = everything_said(spans)
    assert SECRET not in said
    (lookup,) = by_name(spans)["execute_tool lookup"]
    arguments = json.loads(str(lookup.attributes["gen_ai.tool.call.arguments"]))
    assert arguments == {"text": "***", "token": "tok-abc"}  # content, masked
    assert "found ***" in str(lookup.attributes["gen_ai.tool.call.result"])
    (run,) = by_name(spans)["run flow"]
    assert run.attributes["devall.task"] == "use ***"


class ContextTools(FakeTools):
    """FakeTools that also keep the `_meta` each call would send its server."""

    def __init__(self, tools: Mapping[str, Any]) -> None:
        super().__init__(tools)
        self.metas: dict[str, Mapping[str, str]] = {}

    async def call(
        self, node_id: str, name: str, arguments: Mapping[str, Any], **kwargs: Any
    ) -> ToolResult:
        context: CallContext = kwargs["context"]
        self.metas[node_id] = context.request_meta
        return await super().call(node_id, name, arguments)


async def slow(arguments: Mapping[str, Any]) -> ToolResult:
    await asyncio.sleep(0.05)  # both nodes' calls are running at once
    return ToolResult(blocks=(TextBlock("done"),))


async def test_parallel_calls_each_send_the_trace_context_of_their_own_span(
    exporter: InMemorySpanExporter,
) -> None:
    calling = [turn(None, ("slow", {})), turn("finished")]
    wf = workflow([agent("a", *calling), agent("b", *calling)], start=["a", "b"])
    bus = EventBus()
    sink = sink_on(exporter, wf)
    bus.subscribe(sink)
    tools = ContextTools({"slow": slow})
    session = RunSession(wf, run_id="run-2", run_dir=Path("run"), bus=bus)
    await run_workflow(
        session,
        task="go",
        tool_manager_factory=tools.factory,
        extras={REQUEST_META: sink.request_meta},
    )
    spans = by_name(exporter.get_finished_spans())
    for node in ("a", "b"):
        (visit,) = spans[f"invoke_agent {node}"]
        (call,) = [s for s in spans["execute_tool slow"] if parent_of(s) == visit.context.span_id]
        found = TRACEPARENT.match(tools.metas[node]["traceparent"])
        assert found is not None
        assert found.groups() == (
            f"{call.context.trace_id:032x}",
            f"{call.context.span_id:016x}",
        )
    a_call, b_call = spans["execute_tool slow"]
    assert a_call.start_time < b_call.end_time and b_call.start_time < a_call.end_time
    assert sink.request_meta("a", "no-such-call") == {}


def test_units_and_subgraph_nodes_nest_inside_their_nodes(exporter: InMemorySpanExporter) -> None:
    sink = sink_on(exporter, workflow([agent("x")]))
    sink(RunStartedEvent(run_id="r", workflow="flow", task="t"))
    paths = ["team", "team/critic", "writer", "writer#2", "team#1/critic"]
    for path in paths:
        sink(NodeStartedEvent(run_id="r", node_id=path))
    for path in reversed(paths):
        sink(NodeFinishedEvent(run_id="r", node_id=path, status="ok"))
    sink(RunFinishedEvent(run_id="r", status="ok"))
    spans = {s.name.removeprefix("node "): s for s in exporter.get_finished_spans()}
    parents = {path: parent_of(spans[path]) for path in paths}
    run_id = spans["run flow"].context.span_id
    assert parents == {
        "team": run_id,
        "team/critic": spans["team"].context.span_id,
        "writer": run_id,
        "writer#2": spans["writer"].context.span_id,
        "team#1/critic": spans["team"].context.span_id,  # no `team#1` visit: its node's
    }


@pytest.mark.parametrize("client", ["direct", "fastmcp"])
async def test_both_mcp_clients_send_the_trace_context_in_the_call_meta(
    client: str, tmp_path: Path
) -> None:
    log = tmp_path / "meta.jsonl"
    config = McpLocalConfig(
        command=sys.executable,
        args=(str(SERVERS_DIR / "raw_server.py"), "--fixture", "--meta-log", str(log)),
        wait_for_log="raw server ready",
        startup_timeout=20,
    )
    make = direct_local_source if client == "direct" else LocalSource
    source = make(id="raw", config=config)
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    context = CallContext("n", "c1", "echo", request_meta={"traceparent": parent})
    try:
        await source.call_tool("echo", {"text": "hi"}, context=context)
    finally:
        await source.close()
    (line,) = [json.loads(text) for text in log.read_text().splitlines()]
    assert line["name"] == "echo"
    assert line["meta"]["traceparent"] == parent
    assert "progressToken" in line["meta"]  # beside the progress token, not instead of it


def test_settings_come_from_the_flags_and_the_standard_variables() -> None:
    assert otel_settings(False, False, {}) is None
    default = otel_settings(True, False, {})
    assert default is not None and default.endpoint == "http://127.0.0.1:4318/v1/traces"
    assert default.service_name == "devall"
    base = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_SERVICE_NAME": "ci"}
    on = otel_settings(False, False, base)
    assert on is not None and on.endpoint == "http://collector:4318/v1/traces"
    assert on.service_name == "ci" and not on.asked
    traces = {**base, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t.example/otlp"}
    assert getattr(otel_settings(False, False, traces), "endpoint", None) == (
        "https://t.example/otlp"
    )
    assert otel_settings(False, False, {**base, "OTEL_SDK_DISABLED": "true"}) is None
    content = otel_settings(False, True, {})
    assert content is not None and content.content and content.asked
    with pytest.raises(UsageError, match="OTEL_EXPORTER_OTLP_ENDPOINT must be an http"):
        otel_settings(False, False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"})


def test_a_dead_collector_costs_a_bounded_wait_and_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Long enough for one retry (about a second later), whose warning says why.
    monkeypatch.setattr(otel_export, "EXPORT_SECONDS", 1.5)
    monkeypatch.setattr(otel_export, "FLUSH_SECONDS", 2.0)
    port = free_port()  # nothing listens there
    flow = write_tool_flow(tmp_path)
    done = cli(
        "run", str(flow), "--task", "go", "--quiet",
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"ok": true' in done.stdout
    assert done.stderr.splitlines() == [
        f"devall: warning: OpenTelemetry: spans not sent to http://127.0.0.1:{port}/v1/traces: "
        "connection refused"
    ]


def test_otel_without_the_extra_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(otel_export, "sdk_installed", lambda: False)
    flow = write_tool_flow(tmp_path)
    done = cli("run", str(flow), "--task", "go", "--otel")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        "devall: error: --otel needs the otel extra, which is not installed: "
        "pip install 'devall-cli[otel]'"
    )


def test_help_and_validate_import_no_opentelemetry() -> None:
    script = textwrap.dedent(
        """
        import sys
        from typer.testing import CliRunner
        from devall_cli.cli.app import app
        for args in (["--help"], ["run", "--help"], ["validate", "workflows/demo_offline.yaml"]):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, result.output
        print(sorted({m.split(".")[0] for m in sys.modules if m.startswith("opentelemetry")}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
