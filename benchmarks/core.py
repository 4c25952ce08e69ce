"""What every scenario shares: settings, result rows, alternating timers, machine facts."""

from __future__ import annotations

import asyncio
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

REPO_ROOT = Path(__file__).resolve().parent.parent
Status = Literal["PASS", "MISS", "INFO", "SKIP"]


@dataclass(frozen=True)
class Settings:
    """Sizes of the runs; `quick` shrinks them for a smoke run."""

    quick: bool = False

    def pick(self, full: int, quick: int) -> int:
        """`full` normally, `quick` in smoke mode."""
        return quick if self.quick else full


@dataclass
class Row:
    """One line of the report: devall's figure, the comparison's, their ratio, the verdict."""

    id: str
    title: str
    devall: float | None
    comparison: float | None
    unit: str
    ratio: float | None
    target: str
    status: Status
    compared_with: str = ""
    note: str = ""
    samples: dict[str, list[float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly copy."""
        return dict(self.__dict__)


def verdict(ok: bool) -> Status:
    """PASS or MISS."""
    return "PASS" if ok else "MISS"


def skip_row(row_id: str, title: str, unit: str, reason: str, target: str = "-") -> Row:
    """A row that could not be measured here (a tool is missing), with the reason."""
    return Row(
        id=row_id,
        title=title,
        devall=None,
        comparison=None,
        unit=unit,
        ratio=None,
        target=target,
        status="SKIP",
        note=f"skipped: {reason}",
    )


def median(values: Sequence[float]) -> float:
    """The median (0.0 for no values)."""
    return statistics.median(values) if values else 0.0


def spread(values: Sequence[float]) -> float:
    """(max - min) / median, as a fraction: how much the samples of one figure disagree."""
    mid = median(values)
    return (max(values) - min(values)) / mid if values and mid else 0.0


def rounded(values: Sequence[float], digits: int = 4) -> list[float]:
    """The samples, rounded for the JSON report."""
    return [round(v, digits) for v in values]


# --- alternating timers ------------------------------------------------------------------------

AsyncBatch = Callable[[], Awaitable[float]]


async def alternate_async(
    contenders: dict[str, AsyncBatch], rounds: int, *, settle_s: float | None = None
) -> dict[str, list[float]]:
    """Run each contender once per round, rotating who goes first; the samples per contender.

    With `settle_s`, the garbage of the previous batch is collected before each batch and the
    servers are given `settle_s` to finish their own clean-up, so that no contender pays for
    another's leftovers (for contenders that leave much behind, such as a client per call).
    """
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            if settle_s is not None:
                gc.collect()
                await asyncio.sleep(settle_s)
            samples[name].append(await contenders[name]())
    return samples


def alternate_sync(
    contenders: dict[str, Callable[[], float]], rounds: int
) -> dict[str, list[float]]:
    """As `alternate_async`, for blocking measurements (subprocesses)."""
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            samples[name].append(contenders[name]())
    return samples


async def per_call_ms(call: Callable[[], Awaitable[Any]], count: int) -> float:
    """Milliseconds per call of `count` sequential awaits of `call()`."""
    started = time.perf_counter()
    for _ in range(count):
        await call()
    return (time.perf_counter() - started) * 1000 / count


def run_async(coro: Awaitable[Any]) -> Any:
    """Run a coroutine in a new event loop (one per scenario)."""

    async def wrapper() -> Any:
        return await coro

    return asyncio.run(wrapper())


# --- subprocesses ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessTiming:
    """Wall time of a finished subprocess, the CPU time of it and its reaped children, and its
    peak resident set (wait4's ru_maxrss: the largest of the process and of those children)."""

    wall_s: float
    cpu_s: float
    returncode: int
    maxrss_kb: int = 0


def time_process(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdout: Any = subprocess.DEVNULL,
) -> ProcessTiming:
    """Run `argv` to completion (output discarded), timing it with wait4's resource usage."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd or REPO_ROOT,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return ProcessTiming(wall, cpu, proc.returncode, usage.ru_maxrss)


def bench_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every child: ours, quiet fastmcp servers, no colour."""
    env = dict(os.environ)
    env.update(
        FASTMCP_SHOW_SERVER_BANNER="false",
        FASTMCP_CHECK_FOR_UPDATES="off",
        NO_COLOR="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
    )
    env.update(extra or {})
    return env


def venv_command(name: str) -> str:
    """A console script installed beside the running interpreter (the venv's `devall`)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


# --- machine -----------------------------------------------------------------------------------


def machine_facts() -> dict[str, Any]:
    """CPU count and model, load, Python and library versions, for the report."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    facts: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    for package in ("fastmcp", "mcp", "httpx2", "devall-cli"):
        try:
            facts[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            facts[package] = None
    return facts
