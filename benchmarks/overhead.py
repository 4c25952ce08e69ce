"""Scenario 4, row 4e: devall's own cost per tool call, with the tool taken out of the picture.

The same scripted agent as scenario 4 runs through `run_workflow`, but with a stand-in tool layer
whose one tool answers at once, in process. What is left of each call is devall's own work: the
model turn, events, sinks, result rendering. It does not depend on a server process or on
another core being free, so it is the steadiest figure of the run loop (and the one the fixes
recorded in docs/benchmarks.md were measured with).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.core import Row, Settings, alternate_async, median, rounded
from benchmarks.fixtures import scratch_dir, single_node_workflow
from benchmarks.fixtures import with_script as scripted
from benchmarks.runloop import Sinks, run_once
from devall_cli.config.model import Workflow
from devall_cli.tools.base import TextBlock, ToolResult, ToolSpec

ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
# Only the function tooling has no server; the stand-in ignores the config anyway.
TOOLING = "{type: mcp_local, config: {command: python, args: [fixture_server.py]}}"


class InstantTools:
    """A ToolManager stand-in with one `echo` tool that answers at once."""

    def __init__(self, workflow: Workflow, **_: Any) -> None:
        self.spec = ToolSpec(
            name="echo",
            original_name="echo",
            description="Return the text unchanged.",
            input_schema=ECHO_SCHEMA,
            source="mcp_local",
            server="python fixture_server.py",
            source_id="fixture",
        )

    async def start(self, node_ids: Sequence[str] | None = None) -> None:
        """Nothing to start."""

    async def close(self) -> None:
        """Nothing to stop."""

    async def specs_for(self, node_id: str) -> list[ToolSpec]:
        """The one tool."""
        return [self.spec]

    async def call(
        self, node_id: str, name: str, arguments: Mapping[str, Any], *, context: Any = None
    ) -> ToolResult:
        """The text back, as a fixture server's echo would give it (`context` as ToolManager
        takes it: who answers the server's requests during the call; nobody asks here)."""
        block = TextBlock(str(arguments.get("text", "")), tool_name=name, source="mcp_tool")
        return ToolResult((block,), False, None, 0.01)


async def engine_overhead(settings: Settings, raw_ms: float | None) -> Row:
    """Row 4e: ms per call of devall alone (JSONL sink), next to a plain client's whole call."""
    calls = settings.pick(2000, 5)
    rounds = settings.pick(5, 1)
    with scratch_dir("overhead") as tmp:
        base = single_node_workflow(tmp, "overhead", [TOOLING])
        empty, full = scripted(base, "a", 0), scripted(base, "a", calls)
        counter = iter(range(1_000_000))

        def measure(workflow: Workflow, sinks: Sinks) -> Any:
            async def run() -> float:
                run_dir = tmp / f"run-{next(counter)}"
                timing = await run_once(workflow, run_dir, sinks, tool_manager=InstantTools)
                return timing.total

            return run

        await measure(full, "all")()  # warm-up
        contenders = {
            f"{k}{s}": measure(w, s)
            for k, w in (("T0_", empty), ("TN_", full))
            for s in ("none", "jsonl", "all")
        }
        samples = await alternate_async(contenders, rounds)
    per_call = {
        s: (median(samples[f"TN_{s}"]) - median(samples[f"T0_{s}"])) * 1000 / calls
        for s in ("none", "jsonl", "all")
    }
    return Row(
        id="4e",
        title="devall's own cost per call (instant tool)",
        devall=per_call["jsonl"],
        comparison=raw_ms,
        unit="ms/call",
        ratio=per_call["jsonl"] / raw_ms if raw_ms else None,
        target="-",
        status="INFO",
        compared_with="a whole plain-client call",
        note=(
            f"N={calls}; JSONL sink {per_call['jsonl'] * 1000:.0f} us/call, no sinks "
            f"{per_call['none'] * 1000:.0f} us/call, console+JSONL+result "
            f"{per_call['all'] * 1000:.0f} us/call"
        ),
        samples={k: rounded(v) for k, v in samples.items()},
    )
