"""Scenario 7: 8 independent branches, each calling a tool that sleeps 0.5 s.

Eight start nodes (one layer), each a scripted agent calling `sleep_and_tag(0.5, tag)` once,
all on one shared fixture server: mcp_local with `max_concurrency: 8` (7a) or mcp_remote (7b).
The figure is the graph time: from the first `node.started` to the last `node.finished` event,
stamped with a monotonic clock by a sink on the run's EventBus, so server start-up (done before
any node starts) and teardown are excluded. The ideal is one sleep, 0.5 s.
"""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.core import Row, Settings, median, rounded, verdict
from benchmarks.fixtures import (
    agent_node,
    fixture_script,
    http_server,
    local_tooling,
    remote_tooling,
    scratch_dir,
    write_workflow,
)
from devall_cli.config.model import Workflow
from devall_cli.engine.runner import run_workflow
from devall_cli.engine.session import RunSession
from devall_cli.events import Event, EventBus, NodeFinishedEvent, NodeStartedEvent
from devall_cli.workflow.loader import load_workflow

BRANCHES = 8
SLEEP_S = 0.5
WALL_TARGET_S = 0.8


def branches_workflow(
    directory: Path, name: str, tooling: str, tool: str, seconds: float = SLEEP_S
) -> Workflow:
    """Eight start nodes, each making one call of `tool` sleeping `seconds` on the same server."""
    nodes = []
    for i in range(BRANCHES):
        call = f"{{name: {tool}, arguments: {{seconds: {seconds}, tag: b{i}}}}}"
        script = f"[{{tool_calls: [{call}]}}, {{content: '{{tool_result}}'}}]"
        nodes.append(agent_node(f"b{i}", [tooling], script))
    path = write_workflow(directory, name, nodes, [f"b{i}" for i in range(BRANCHES)])
    return load_workflow(path)


class GraphClock:
    """An event sink: monotonic time of the first node start and the last node finish."""

    def __init__(self) -> None:
        self.first_start: float | None = None
        self.last_finish = 0.0
        self.outputs: dict[str, str | None] = {}

    def __call__(self, event: Event) -> None:
        now = time.perf_counter()
        if isinstance(event, NodeStartedEvent) and self.first_start is None:
            self.first_start = now
        elif isinstance(event, NodeFinishedEvent):
            self.last_finish = now
            self.outputs[event.node_id] = event.output

    @property
    def seconds(self) -> float:
        """Graph wall time."""
        assert self.first_start is not None, "no node started"
        return self.last_finish - self.first_start


async def graph_seconds(workflow: Workflow, run_dir: Path) -> float:
    """Run the workflow once; its graph time in seconds."""
    bus = EventBus()
    clock = GraphClock()
    bus.subscribe(clock)
    session = RunSession(workflow, run_id=run_dir.name, run_dir=run_dir, bus=bus)
    await run_workflow(session, task="go")
    # The raw server's `sleep` answers `<tag> peak=<n>`, the FastMCP fixture's the tag alone.
    outputs = {node: (text or "").split(" ")[0] for node, text in clock.outputs.items()}
    if outputs != {f"b{i}": f"b{i}" for i in range(BRANCHES)}:
        raise RuntimeError(f"unexpected branch outputs: {clock.outputs}")
    return clock.seconds


async def parallel_graph(settings: Settings) -> list[Row]:
    """Scenario 7: rows 7a (shared mcp_local, max_concurrency 8) and 7b (mcp_remote)."""
    rounds = settings.pick(3, 1)
    rows = []
    server = fixture_script(settings.quick)
    with scratch_dir("parallel") as tmp, http_server(server) as url:
        cases = [
            ("7a", "mcp_local", local_tooling(server=server, max_concurrency=BRANCHES)),
            ("7b", "mcp_remote", remote_tooling(url)),
        ]
        for row_id, kind, tooling in cases:
            name = f"parallel-{kind.replace('_', '-')}"
            seconds = 0.05 if settings.quick else SLEEP_S
            workflow = branches_workflow(tmp, name, tooling, server.sleep_tool, seconds)
            samples = [await graph_seconds(workflow, tmp / f"{row_id}-{i}") for i in range(rounds)]
            wall = median(samples)
            rows.append(
                Row(
                    id=row_id,
                    title=f"{BRANCHES} parallel branches x 0.5 s, {kind}",
                    devall=wall * 1000,
                    comparison=SLEEP_S * 1000,
                    unit="ms",
                    ratio=wall / SLEEP_S,
                    target=f"<= {WALL_TARGET_S * 1000:.0f} ms",
                    status=verdict(wall <= WALL_TARGET_S),
                    compared_with="one sleep (ideal)",
                    note=f"sequential would take {BRANCHES * SLEEP_S:.1f} s",
                    samples={"graph_s": rounded(samples)},
                )
            )
    return rows
