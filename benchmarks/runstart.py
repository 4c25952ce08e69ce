"""Scenario 12: `devall run` of the offline demo against `devall tools list` of the same workflow.

Both are fresh processes of the installed `devall`, alternating, on `workflows/demo_offline.yaml`
as it ships (its local server is the example server, started by both commands). `tools list`
is the floor a run should start at: it spawns the same server and lists its tools; `run` then
makes the demo's one tool call and writes its run directory. Two rows: wall time (12a) and peak
resident set (12b), each within 1.3x of `tools list`'s.

The peak is devall's own: the VmHWM (high-water mark) of the devall process, read from /proc
every 5 ms while it runs. wait4's `ru_maxrss` is in the note: it is the largest of the process
and of the children it reaped, and the example server (a FastMCP process) is larger than the
command that starts it, so it would measure the server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.core import (
    REPO_ROOT,
    ProcessTiming,
    Row,
    Settings,
    alternate_sync,
    bench_env,
    median,
    rounded,
    venv_command,
    verdict,
)
from benchmarks.fixtures import scratch_dir

DEMO = REPO_ROOT / "workflows" / "demo_offline.yaml"
RATIO_TARGET = 1.3
POLL_S = 0.005


def vm_hwm_kb(pid: int) -> int | None:
    """The peak resident set of a live process so far, in KB (None once it has exited)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def time_with_peak(
    argv: Sequence[str], env: dict[str, str], cwd: Path
) -> tuple[ProcessTiming, int]:
    """Run `argv` to completion; its timing (wait4) and its own peak RSS in KB (VmHWM)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    peak = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, vm_hwm_kb(proc.pid) or 0)
        time.sleep(POLL_S)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    cpu = usage.ru_utime + usage.ru_stime
    return ProcessTiming(wall, cpu, code, usage.ru_maxrss), peak


def demo_env() -> dict[str, str]:
    """The demo's server is `python`: this interpreter's, as in the project's venv."""
    env = bench_env()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _timer(
    argv: Callable[[], list[str]], cwd: Path, peaks: list[float], maxrss: list[float]
) -> Callable[[], float]:
    env = demo_env()

    def run() -> float:
        command = argv()
        timing, peak = time_with_peak(command, env, cwd)
        if timing.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited with {timing.returncode}")
        peaks.append(peak / 1024)
        maxrss.append(timing.maxrss_kb / 1024)
        return timing.wall_s * 1000

    return run


def run_vs_list(settings: Settings) -> list[Row]:
    """Scenario 12: rows 12a (wall time) and 12b (peak RSS)."""
    devall = venv_command("devall")
    rounds = settings.pick(10, 1)
    peaks: dict[str, list[float]] = {"run": [], "list": []}
    maxrss: dict[str, list[float]] = {"run": [], "list": []}
    with scratch_dir("runstart") as tmp:
        made = iter(range(10**6))

        def run_argv() -> list[str]:
            out = tmp / f"run-{next(made)}"
            return [devall, "run", str(DEMO), "--task", "bench", "--out", str(out), "-q"]

        def list_argv() -> list[str]:
            return [devall, "tools", "list", str(DEMO)]

        timers = {
            "run": _timer(run_argv, tmp, peaks["run"], maxrss["run"]),
            "list": _timer(list_argv, tmp, peaks["list"], maxrss["list"]),
        }
        if not settings.quick:
            for name, timer in timers.items():
                timer()  # warm-up: page cache
                peaks[name].clear()
                maxrss[name].clear()
        samples = alternate_sync(timers, rounds)
    wall_run, wall_list = median(samples["run"]), median(samples["list"])
    rss_run, rss_list = median(peaks["run"]), median(peaks["list"])
    return [
        Row(
            id="12a",
            title="devall run of the offline demo: wall time",
            devall=wall_run,
            comparison=wall_list,
            unit="ms",
            ratio=wall_run / wall_list,
            target=f"<= {RATIO_TARGET:.1f}x",
            status=verdict(wall_run / wall_list <= RATIO_TARGET),
            compared_with="devall tools list, same workflow",
            note=f"best {min(samples['run']):.0f} ms, "
            f"tools list best {min(samples['list']):.0f} ms",
            samples={k: rounded(v, 1) for k, v in samples.items()},
        ),
        Row(
            id="12b",
            title="devall run of the offline demo: peak RSS",
            devall=rss_run,
            comparison=rss_list,
            unit="MB",
            ratio=rss_run / rss_list,
            target=f"<= {RATIO_TARGET:.1f}x",
            status=verdict(rss_run / rss_list <= RATIO_TARGET),
            compared_with="devall tools list, same workflow",
            note=f"VmHWM of the devall process; wait4 ru_maxrss (the largest of it and its "
            f"reaped server): run {median(maxrss['run']):.0f} MB, tools list "
            f"{median(maxrss['list']):.0f} MB",
            samples={f"{k}_mb": rounded(v, 1) for k, v in peaks.items()},
        ),
    ]
