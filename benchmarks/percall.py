"""Scenarios 1-3: the cost of one tool call through devall's tool layer, and session reuse.

1. stdio: `ToolManager.call` on an mcp_local fixture server vs a plain fastmcp
   `Client.call_tool` loop on a fixture server it spawned itself (same script, same tool).
2. streamable HTTP: the same two, on one fixture HTTP server. Row 2x does the same on the
   example server of `mcp_example/` as it ships (informational).
3. devall's reused remote session vs a new `Client` per call (what ChatDev does).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.core import Row, Settings, alternate_async, median, per_call_ms, rounded, verdict
from benchmarks.fixtures import (
    ServerScript,
    fixture_script,
    http_server,
    local_tooling,
    raw_http_client,
    raw_stdio_client,
    remote_tooling,
    scratch_dir,
    single_node_workflow,
)
from devall_cli.tools.manager import ToolManager
from tests.servers.serve import EXAMPLE_SERVER

ARGS = {"text": "ping"}
RAND_ARGS = {"a": 1, "b": 100}
PER_CALL_TARGET = 1.10
REUSE_TARGET = 10.0
NAGLE_SUSPECT_MS = 30.0
SETTLE_S = 0.2  # lets the server close the connections of a batch of new sessions


async def _compare(
    devall: Callable[[], Awaitable[Any]], raw: Callable[[], Awaitable[Any]], settings: Settings
) -> dict[str, list[float]]:
    """Warm both up, then alternate batches; ms per call of each batch."""
    # Short batches, many rounds: both sides see the same background load on a shared machine.
    batch = settings.pick(20, 3)
    rounds = settings.pick(1000, 3) // batch
    warmup = settings.pick(50, 1)
    await per_call_ms(devall, warmup)
    await per_call_ms(raw, warmup)
    return await alternate_async(
        {"devall": lambda: per_call_ms(devall, batch), "raw": lambda: per_call_ms(raw, batch)},
        rounds,
    )


def _per_call_row(
    row_id: str, title: str, samples: dict[str, list[float]], *, target: float | None
) -> Row:
    devall, raw = median(samples["devall"]), median(samples["raw"])
    ratio = devall / raw
    return Row(
        id=row_id,
        title=title,
        devall=devall,
        comparison=raw,
        unit="ms/call",
        ratio=ratio,
        target=f"<= {target:.2f}x" if target else "-",
        status=verdict(ratio <= target) if target else "INFO",
        compared_with="fastmcp Client.call_tool loop",
        samples={k: rounded(v) for k, v in samples.items()},
    )


async def stdio_per_call(settings: Settings) -> Row:
    """Scenario 1."""
    with scratch_dir("stdio") as tmp:
        server = fixture_script(settings.quick)
        workflow = single_node_workflow(tmp, "stdio", [local_tooling(server=server)])
        async with ToolManager(workflow) as manager, raw_stdio_client(tmp, server) as raw:
            await manager.start()
            await manager.specs_for("a")
            samples = await _compare(
                lambda: manager.call("a", "echo", ARGS),
                lambda: raw.call_tool("echo", ARGS),
                settings,
            )
    return _per_call_row("1", "per call, stdio", samples, target=PER_CALL_TARGET)


async def _http_samples(
    settings: Settings,
    script: Path | ServerScript | None = None,
    tool: str = "echo",
    args: Any = ARGS,
) -> dict[str, list[float]]:
    script = script or fixture_script(settings.quick)
    with scratch_dir("http") as tmp, http_server(script) as url:
        workflow = single_node_workflow(tmp, "http", [remote_tooling(url)])
        async with ToolManager(workflow) as manager, raw_http_client(url) as raw:
            await manager.start()
            await manager.specs_for("a")
            return await _compare(
                lambda: manager.call("a", tool, args),
                lambda: raw.call_tool(tool, args),
                settings,
            )


async def http_per_call(settings: Settings) -> Row:
    """Scenario 2."""
    samples = await _http_samples(settings)
    return _per_call_row("2", "per call, streamable HTTP", samples, target=PER_CALL_TARGET)


async def http_per_call_example(settings: Settings) -> Row:
    """Scenario 2 on the example server (`rand_num`), as it ships: informational, few calls."""
    if settings.quick:  # the same code path as row 2, without a second FastMCP server's start
        samples = await _http_samples(settings)
    else:
        samples = await _http_samples(Settings(quick=True), EXAMPLE_SERVER, "rand_num", RAND_ARGS)
    row = _per_call_row("2x", "per call, HTTP, example server", samples, target=None)
    if median(samples["raw"]) > NAGLE_SUSPECT_MS:
        row.note = (
            "the example server's listening socket lacks TCP_NODELAY: every response waits "
            "~40 ms for the client's delayed ACK (devall and the plain client alike)"
        )
    return row


async def session_reuse(settings: Settings) -> Row:
    """Scenario 3: devall's one session per server vs a new client and session per call."""
    calls = settings.pick(10, 2)
    reused_calls = calls * 5  # a batch of reused-session calls lasts long enough to time
    rounds = settings.pick(10, 1)
    with scratch_dir("reuse") as tmp, http_server(fixture_script(settings.quick)) as url:
        workflow = single_node_workflow(tmp, "reuse", [remote_tooling(url)])

        async def new_session_per_call() -> None:
            async with raw_http_client(url) as client:
                await client.call_tool("echo", ARGS)

        async with ToolManager(workflow) as manager:
            await manager.start()
            await manager.specs_for("a")
            await per_call_ms(new_session_per_call, 2)  # warm-up: imports, first SSL context
            samples = await alternate_async(
                {
                    "devall": lambda: per_call_ms(
                        lambda: manager.call("a", "echo", ARGS), reused_calls
                    ),
                    "new_session": lambda: per_call_ms(new_session_per_call, calls),
                },
                rounds,
                settle_s=SETTLE_S,
            )
    devall, fresh = median(samples["devall"]), median(samples["new_session"])
    speedup = fresh / devall
    return Row(
        id="3",
        title="remote session reuse (speed-up)",
        devall=devall,
        comparison=fresh,
        unit="ms/call",
        ratio=speedup,
        target=f">= {REUSE_TARGET:.0f}x faster",
        status=verdict(speedup >= REUSE_TARGET),
        compared_with="new Client per call (ChatDev)",
        samples={k: rounded(v) for k, v in samples.items()},
    )
