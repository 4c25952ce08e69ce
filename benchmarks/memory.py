"""Scenario 8: memory of the scenario-4 run with N = 500 and N = 5,000 tool calls.

Each size runs in a fresh child process (`python -m benchmarks.memory N`), which reports its
peak resident set (VmHWM from /proc, falling back to ru_maxrss) before and after the run, the
size of the events.jsonl it wrote, and the size of the conversation the model was sent on its
last turn (measured by wrapping the scripted provider). The fixture server is a grandchild and
is not counted.

What must not happen: memory growing with N beyond what the run has to hold. The conversation
(every assistant turn and tool result, ~1 KB a call here) is sent to the model on every turn, so
it grows by design; the event log goes to disk. The check: peak below 150 MB at N = 5,000, and
the peak's growth from N = 500 at most the growth of the conversation plus the event log's size
(as if the log were kept in memory too). A second pair of children runs with tracemalloc and
reports what is still allocated after the run: it must not depend on N (no leak).
"""

from __future__ import annotations

import asyncio
import gc
import json
import resource
import subprocess
import sys
import tracemalloc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.core import REPO_ROOT, Row, Settings, bench_env, verdict

PEAK_TARGET_MB = 150.0
MB = 2**20


def peak_mb() -> float:
    """This process's peak resident set size so far, in MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes of `obj` and of the dicts, lists and strings it holds (each object counted once)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, Mapping):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, list | tuple):
        size += sum(deep_size(item, seen) for item in obj)
    return size


class ConversationMeter:
    """Wraps the scripted provider; measures the messages of the last scripted turn."""

    def __init__(self, inner: Any, turns: int) -> None:
        self.inner = inner
        self.turns = turns
        self.calls = 0
        self.bytes = 0

    async def complete(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> Any:
        """Delegate; measure once, on the last turn (when the conversation is longest)."""
        self.calls += 1
        if self.calls == self.turns:
            self.bytes = deep_size(list(messages))
        return await self.inner.complete(messages, tools)

    async def aclose(self) -> None:
        """Delegate."""
        await self.inner.aclose()


def child(calls: int, trace: bool = False, quick: bool = False) -> dict[str, Any]:
    """Run N calls in this process; peak memory, conversation and event log sizes."""
    # The MCP client stack is loaded before the baseline is taken.
    import devall_cli.tools.manager
    import devall_cli.tools.mcp_local  # noqa: F401
    from benchmarks.fixtures import scratch_dir
    from benchmarks.fixtures import with_script as scripted
    from benchmarks.runloop import base_workflow, run_once
    from devall_cli.providers import make_provider

    meters: list[ConversationMeter] = []

    def provider_factory(config: Any, **kwargs: Any) -> Any:
        provider = make_provider(config, **kwargs)
        if not trace:
            return provider  # measuring the conversation allocates too: not in a peak run
        meters.append(ConversationMeter(provider, len(config.provider_config)))
        return meters[-1]

    with scratch_dir("memory") as tmp:
        workflow = scripted(base_workflow(tmp, quick), "a", calls)
        baseline = peak_mb()
        if trace:
            tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0] if trace else 0
        run_dir = tmp / "run"
        seconds = asyncio.run(run_once(workflow, run_dir, "jsonl", provider_factory)).total
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before if trace else 0
        events_bytes = (run_dir / "events.jsonl").stat().st_size
    return {
        "calls": calls,
        "baseline_mb": round(baseline, 2),
        "peak_mb": round(peak_mb(), 2),
        "events_mb": round(events_bytes / MB, 3),
        "conversation_mb": round(sum(m.bytes for m in meters) / MB, 3),
        "retained_kb": round(retained / 1024, 1),
        "seconds": round(seconds, 2),
    }


def measure(calls: int, *, trace: bool = False, quick: bool = False) -> dict[str, Any]:
    """Run `child(calls)` in a fresh interpreter and return its report."""
    argv = [sys.executable, "-m", "benchmarks.memory", str(calls)]
    argv += (["trace"] if trace else []) + (["quick"] if quick else [])
    done = subprocess.run(
        argv, capture_output=True, text=True, cwd=REPO_ROOT, env=bench_env(), timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory child failed: {done.stderr[-800:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def memory(settings: Settings) -> Row:
    """Scenario 8."""
    small_n, large_n = settings.pick(500, 3), settings.pick(5000, 12)
    if settings.quick:  # two children, untraced (tracemalloc makes the imports ~10x slower)
        small = leak_small = measure(small_n, quick=True)
        large = leak_large = measure(large_n, quick=True)
    else:
        small, large = measure(small_n), measure(large_n)
        leak_small, leak_large = measure(small_n, trace=True), measure(small_n * 4, trace=True)
    growth = large["peak_mb"] - small["peak_mb"]
    extra_calls = large_n - small_n
    # The conversation grows by the same bytes every call: its per-call size comes from the
    # traced pair, since measuring it in the peak runs would raise their peak.
    conversation = _rate(leak_large, leak_small, "conversation_mb") * extra_calls
    allowed = conversation + large["events_mb"] - small["events_mb"]
    ok = large["peak_mb"] < PEAK_TARGET_MB and growth <= max(allowed, 1.0)
    return Row(
        id="8",
        title=f"peak RSS, run loop N={large_n}",
        devall=large["peak_mb"],
        comparison=small["peak_mb"],
        unit="MB",
        ratio=large["peak_mb"] / small["peak_mb"],
        target=f"< {PEAK_TARGET_MB:.0f} MB, growth <= conv.+log",
        status=verdict(ok),
        compared_with=f"same at N={small_n}",
        note=(
            f"peak growth {growth:.1f} MB = {growth * 1024 / extra_calls:.2f} KB/call; "
            f"conversation {_rate(leak_large, leak_small, 'conversation_mb') * 1024:.2f} "
            f"KB/call, events.jsonl {_rate(large, small, 'events_mb') * 1024:.2f} KB/call; "
            f"baseline before the run {large['baseline_mb']:.0f} MB; still allocated after the "
            f"run: {leak_small['retained_kb']:.0f} KB at N={small_n}, "
            f"{leak_large['retained_kb']:.0f} KB at N={small_n * 4}"
        ),
        samples={
            "small": [small["peak_mb"]],
            "large": [large["peak_mb"]],
            "retained_kb": [leak_small["retained_kb"], leak_large["retained_kb"]],
        },
    )


def _rate(large: dict[str, Any], small: dict[str, Any], key: str) -> float:
    """MB per call of a figure, between two runs of different sizes."""
    calls: int = large["calls"] - small["calls"]
    return float(large[key] - small[key]) / calls


if __name__ == "__main__":
    flags = sys.argv[2:]
    print(json.dumps(child(int(sys.argv[1]), trace="trace" in flags, quick="quick" in flags)))
