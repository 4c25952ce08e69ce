"""Scenario 4: the cost of a tool call through the whole run loop.

A scripted agent makes N sequential tool calls (one per model turn) on an mcp_local fixture
server; `run_workflow` runs it as `devall run` does (EventBus, JSONL sink). The per-call cost is
(T(N) - T(0)) / N, compared with a plain fastmcp client's per-call cost on the same server
script. T is the wall time of the whole `run_workflow` less the server's start-up (until its
`server.ready` event): start-up is the same work in both runs and cancels out in the difference,
but a Python server's import time varies by a few hundred ms from run to run, which would swamp
N calls of a millisecond. The figure with start-up left in is reported in the note. Runs
alternate: T(0), T(N) with the JSONL sink, T(N) without sinks, T(N) with every sink of
`devall run`, and the raw client loop. Row 4h does the no-sink run and the raw loop again over
streamable HTTP, on one fixture server both reach by URL (targets: 4n and 4h <= 1.1x).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchmarks.core import Row, Settings, alternate_async, median, per_call_ms, rounded, verdict
from benchmarks.fixtures import (
    fixture_script,
    http_server,
    local_tooling,
    raw_http_client,
    raw_stdio_client,
    remote_tooling,
    scratch_dir,
    single_node_workflow,
)
from benchmarks.fixtures import with_script as scripted
from devall_cli.config.model import Workflow
from devall_cli.engine.runner import default_tool_manager, run_workflow
from devall_cli.engine.session import RunSession
from devall_cli.events import Event, EventBus, ServerReadyEvent

RUN_LOOP_TARGET = 1.5
NO_SINKS_TARGET = 1.1
Sinks = Literal["none", "jsonl", "all"]


def base_workflow(directory: Path, quick: bool = False) -> Workflow:
    """The one-node workflow on an mcp_local fixture server (its script is set per run)."""
    return single_node_workflow(
        directory, "runloop", [local_tooling(server=fixture_script(quick))]
    )


@dataclass(frozen=True)
class RunTiming:
    """Wall seconds of a whole `run_workflow`, and of its server start-up part."""

    total: float
    start: float

    @property
    def after_start(self) -> float:
        """The run without its server start-up."""
        return self.total - self.start


class _StartClock:
    """An event sink: when the last server became ready."""

    def __init__(self) -> None:
        self.ready_at = 0.0

    def __call__(self, event: Event) -> None:
        if isinstance(event, ServerReadyEvent):
            self.ready_at = time.perf_counter()


async def run_once(
    workflow: Workflow,
    run_dir: Path,
    sinks: Sinks = "jsonl",
    provider_factory: Callable[..., Any] | None = None,
    tool_manager: Callable[..., Any] | None = None,
) -> RunTiming:
    """Run the workflow as `devall run` does, timing it."""
    from devall_cli.trace.jsonl import JsonlSink

    run_dir.mkdir(parents=True, exist_ok=True)
    bus = EventBus()
    clock = _StartClock()
    bus.subscribe(clock)
    redactor = workflow.redactor
    with ExitStack() as stack:
        if sinks in ("jsonl", "all"):
            jsonl = stack.enter_context(JsonlSink(run_dir / "events.jsonl", redactor))
            bus.subscribe(jsonl)
        if sinks == "all":
            _subscribe_console_and_result(bus, stack, workflow, run_dir, redactor)
        session = RunSession(workflow, run_id=run_dir.name, run_dir=run_dir, bus=bus)
        started = time.perf_counter()
        result = await run_workflow(
            session,
            task="benchmark",
            provider_factory=provider_factory,
            tool_manager_factory=tool_manager or default_tool_manager,
        )
        elapsed = time.perf_counter() - started
    if result.status != "ok":
        raise RuntimeError(f"benchmark run failed: {result.error}")
    return RunTiming(elapsed, max(clock.ready_at - started, 0.0))


def _subscribe_console_and_result(
    bus: EventBus, stack: ExitStack, workflow: Workflow, run_dir: Path, redactor: Any
) -> None:
    """The console trace (to /dev/null, as `devall run 2>/dev/null`) and the result.json sink."""
    from rich.console import Console

    from devall_cli.trace.console import ConsoleSink
    from devall_cli.trace.result import ResultSink

    devnull = stack.enter_context(open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    console = ConsoleSink(Console(file=devnull, no_color=True, width=120), redactor, "normal")
    stack.callback(console.close)
    bus.subscribe(console)
    node_ids = [n.id for n in workflow.graph.nodes]
    bus.subscribe(ResultSink(run_dir / "result.json", redactor, node_ids=node_ids))


def _timed_run(
    workflow: Workflow, tmp: Path, sinks: Sinks, whole: list[float]
) -> Callable[[], Awaitable[float]]:
    """A measurement: one run; returns T without start-up, appends T with it to `whole`."""
    counter = iter(range(1_000_000))

    async def run() -> float:
        timing = await run_once(workflow, tmp / f"run-{sinks}-{next(counter)}", sinks)
        whole.append(timing.total)
        return timing.after_start

    return run


async def _stdio_samples(
    settings: Settings, calls: int, rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """T0, T(N) with each sink, and the raw client loop, on one local server script."""
    server = fixture_script(settings.quick)
    with scratch_dir("runloop") as tmp:
        base = single_node_workflow(tmp, "runloop", [local_tooling(server=server)])
        empty, full = scripted(base, "a", 0), scripted(base, "a", calls)
        async with raw_stdio_client(tmp, server) as raw:
            await per_call_ms(lambda: raw.call_tool("echo", {"text": "ping"}), 5)
            await run_once(full, tmp / "warm-up", "all")

            async def raw_loop() -> float:
                return await per_call_ms(lambda: raw.call_tool("echo", {"text": "ping"}), calls)

            whole: dict[str, list[float]] = {k: [] for k in ("T0", "TN", "TN_no", "TN_all")}
            samples = await alternate_async(
                {
                    "T0": _timed_run(empty, tmp, "jsonl", whole["T0"]),
                    "TN": _timed_run(full, tmp, "jsonl", whole["TN"]),
                    "TN_no": _timed_run(full, tmp, "none", whole["TN_no"]),
                    "TN_all": _timed_run(full, tmp, "all", whole["TN_all"]),
                    "raw": raw_loop,
                },
                rounds,
                settle_s=0.0,
            )
    return samples, whole


async def _http_samples(
    settings: Settings, calls: int, rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """T0 and T(N) without sinks, and the raw client loop, on one streamable HTTP server."""
    with scratch_dir("runloop-http") as tmp, http_server(fixture_script(settings.quick)) as url:
        base = single_node_workflow(tmp, "runloop-http", [remote_tooling(url)])
        empty, full = scripted(base, "a", 0), scripted(base, "a", calls)
        async with raw_http_client(url) as raw:
            await per_call_ms(lambda: raw.call_tool("echo", {"text": "ping"}), 5)
            await run_once(full, tmp / "warm-up", "none")

            async def raw_loop() -> float:
                return await per_call_ms(lambda: raw.call_tool("echo", {"text": "ping"}), calls)

            whole: dict[str, list[float]] = {"T0": [], "TN_no": []}
            samples = await alternate_async(
                {
                    "T0": _timed_run(empty, tmp, "none", whole["T0"]),
                    "TN_no": _timed_run(full, tmp, "none", whole["TN_no"]),
                    "raw": raw_loop,
                },
                rounds,
                settle_s=0.0,
            )
    return samples, whole


def _row(
    row_id: str,
    title: str,
    key: str,
    target: float | None,
    calls: int,
    samples: dict[str, list[float]],
    whole: dict[str, list[float]],
) -> Row:
    """One row: (T(N) - T0) / N against the raw client's per-call time."""
    t0, whole_t0 = median(samples["T0"]), median(whole["T0"])
    raw_ms = median(samples["raw"])
    per_call = (median(samples[key]) - t0) * 1000 / calls
    per_call_whole = (median(whole[key]) - whole_t0) * 1000 / calls
    ratio = per_call / raw_ms
    return Row(
        id=row_id,
        title=title,
        devall=per_call,
        comparison=raw_ms,
        unit="ms/call",
        ratio=ratio,
        target=f"<= {target:.1f}x" if target else "-",
        status=verdict(ratio <= target) if target else "INFO",
        compared_with="fastmcp Client.call_tool loop",
        note=(
            f"N={calls}; T0 {t0:.2f} s, T(N) {median(samples[key]):.2f} s after start-up; "
            f"with start-up {per_call_whole:.3f} ms/call "
            f"(T0 {whole_t0:.2f} s, T(N) {median(whole[key]):.2f} s)"
        ),
        samples={k: rounded(v) for k, v in samples.items() if k in ("T0", key, "raw")}
        | {f"whole_{k}": rounded(whole[k]) for k in ("T0", key)},
    )


async def run_loop(settings: Settings) -> list[Row]:
    """Scenario 4: rows 4 (JSONL sink, as devall run), 4n (no sinks), 4a (all sinks) over
    stdio, and 4h (no sinks) over streamable HTTP."""
    calls = settings.pick(500, 5)
    rounds = settings.pick(7, 1)
    samples, whole = await _stdio_samples(settings, calls, rounds)
    rows = [
        _row(row_id, f"run loop per call, {what}", key, target, calls, samples, whole)
        for row_id, key, what, target in (
            ("4", "TN", "JSONL sink, as devall run", RUN_LOOP_TARGET),
            ("4n", "TN_no", "no sinks, stdio", NO_SINKS_TARGET),
            ("4a", "TN_all", "console+JSONL+result sinks", None),
        )
    ]
    samples, whole = await _http_samples(settings, calls, rounds)
    title = "run loop per call, no sinks, streamable HTTP"
    rows.append(_row("4h", title, "TN_no", NO_SINKS_TARGET, calls, samples, whole))
    return rows
