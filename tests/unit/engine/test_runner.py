"""Running a workflow end to end: run events, results, failures, cancellation, cleanup."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from devall_cli.config.model import Workflow
from devall_cli.engine.runner import RunResult, new_run_id, run_workflow
from devall_cli.engine.session import RunSession
from devall_cli.errors import ExitCode, RunFailedError, ServerStartError
from devall_cli.events import EventBus, RunFinishedEvent, RunStartedEvent
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.providers import make_provider
from devall_cli.providers.base import Provider
from devall_cli.tools.base import ToolResult
from tests.unit.engine.builders import (
    Collector,
    FakeTools,
    agent,
    echo_tool,
    edge,
    literal,
    passthrough,
    turn,
    workflow,
)


def three_step_flow() -> Workflow:
    return workflow(
        [
            literal("intro", "Say hello"),
            agent(
                "writer",
                turn(None, ("echo", {"text": "hello"})),
                turn("{input} -> {tool_result}"),
            ),
            passthrough("out"),
        ],
        [edge("intro", "writer"), edge("writer", "out")],
    )


class Providers:
    """A provider factory that remembers the providers it made (to check they are closed)."""

    def __init__(self) -> None:
        self.made: list[Any] = []

    def __call__(self, config: AgentConfig, **options: Any) -> Any:
        provider = make_provider(config, **options)
        closed: list[bool] = []
        original = provider.aclose

        async def aclose() -> None:
            closed.append(True)
            await original()

        provider.aclose = aclose  # type: ignore[method-assign]
        self.made.append(closed)
        return provider


async def run(flow: Workflow, tools: FakeTools, bus: EventBus, **kwargs: Any) -> RunResult:
    session = RunSession(flow, run_id="run-1", run_dir=Path("run"), bus=bus)
    return await run_workflow(
        session, task="the task", tool_manager_factory=tools.factory, **kwargs
    )


async def test_a_run_produces_the_final_output_and_counts() -> None:
    tools = FakeTools({"echo": echo_tool("echo:")})
    bus = EventBus()
    events = Collector(bus)
    providers = Providers()
    result = await run(three_step_flow(), tools, bus, provider_factory=providers)
    assert result.status == "ok"
    assert result.output == "Say hello -> echo:hello"
    assert result.node_outputs == {
        "intro": "Say hello",
        "writer": "Say hello -> echo:hello",
        "out": "Say hello -> echo:hello",
    }
    assert (result.model_calls, result.tool_calls) == (2, 1)
    assert [(t.tool, t.calls, t.errors) for t in result.tools] == [("echo", 1, 0)]
    assert tools.started and tools.closed
    assert providers.made == [[True]]
    kinds = events.kinds()
    assert kinds[0] == "run.started" and kinds[-1] == "run.finished"
    assert kinds.count("node.started") == 3 and kinds.count("node.finished") == 3
    started = events.of(RunStartedEvent)[0]
    assert (started.workflow, started.task, started.run_id) == ("flow", "the task", "run-1")
    finished = events.of(RunFinishedEvent)[0]
    assert (finished.status, finished.exit_code, finished.output) == ("ok", 0, result.output)
    assert bus.sink_errors == []


async def test_a_node_failure_fails_the_run_with_exit_1_and_closes_everything() -> None:
    class Exploding:
        async def complete(self, messages: Any, tools: Any) -> Any:
            raise ValueError("model went away")

        async def aclose(self) -> None:
            pass

    def factory(config: AgentConfig, **_: Any) -> Provider:
        return Exploding()

    tools = FakeTools()
    bus = EventBus()
    events = Collector(bus)
    with pytest.raises(RunFailedError, match="node 'writer' failed: ValueError: model went away"):
        await run(three_step_flow(), tools, bus, provider_factory=factory)
    assert tools.closed
    finished = events.of(RunFinishedEvent)[0]
    assert (finished.status, finished.exit_code) == ("failed", ExitCode.FAILED)
    assert "model went away" in (finished.error or "")


async def test_a_server_that_fails_to_start_keeps_its_exit_code() -> None:
    tools = FakeTools()
    tools.start_error = ServerStartError("server 'fs' exited", status="exited")
    bus = EventBus()
    events = Collector(bus)
    with pytest.raises(ServerStartError):
        await run(three_step_flow(), tools, bus)
    assert tools.closed
    finished = events.of(RunFinishedEvent)[0]
    assert (finished.status, finished.exit_code) == ("failed", ExitCode.CONNECTION)
    assert events.kinds() == ["run.started", "run.finished"]


async def test_cancelling_a_run_reports_interrupted_and_cleans_up() -> None:
    reached = asyncio.Event()

    async def hang(arguments: Mapping[str, Any]) -> ToolResult:
        reached.set()
        await asyncio.sleep(30)
        raise AssertionError("not reached")

    tools = FakeTools({"echo": hang})
    bus = EventBus()
    events = Collector(bus)
    providers = Providers()
    task = asyncio.create_task(run(three_step_flow(), tools, bus, provider_factory=providers))
    await asyncio.wait_for(reached.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert tools.closed
    assert providers.made == [[True]]
    finished = events.of(RunFinishedEvent)[0]
    assert (finished.status, finished.exit_code) == ("interrupted", 130)
    assert events.kinds()[-1] == "run.finished"


def test_run_ids_name_the_graph_and_the_time() -> None:
    flow = workflow([literal("A", "x")], graph_id="my flow/v2")
    run_id = new_run_id(flow)
    assert re.fullmatch(r"my-flow-v2-\d{8}-\d{6}-[0-9a-f]{4}", run_id)
    assert len({new_run_id(flow) for _ in range(20)}) > 1  # the random suffix differs
