"""Scenario 6: `devall tools list` and `devall probe` with 1 and with 8 local servers.

Every server is a distinct mcp_local config (its own process), all started concurrently. Each
command is a fresh `devall` process, runs alternate between the 1- and the 8-server workflow.

Starting a fastmcp fixture server costs about a second of CPU (imports), so 8 of them need at
least 8 x that / cores of wall time, whatever devall does: the rows report that floor, measured
from the CPU time of the runs (devall and its reaped servers, via wait4). The same commands on
a standard-library server that starts in milliseconds show devall's own concurrency.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from benchmarks.core import (
    ProcessTiming,
    Row,
    Settings,
    alternate_sync,
    bench_env,
    median,
    rounded,
    skip_row,
    time_process,
    venv_command,
    verdict,
)
from benchmarks.fixtures import (
    LIGHT_SERVER,
    ServerScript,
    agent_node,
    fixture_script,
    local_tooling,
    scratch_dir,
    write_workflow,
)

MANY = 8
MANY_TARGET = 1.6
QUICK_SKIPS = ("6b", "6c")
LIGHT = ServerScript(LIGHT_SERVER, (), "light server ready", "")


def servers_workflow(directory: Path, count: int, server: ServerScript) -> Path:
    """One agent node with `count` distinct local servers running `server`."""
    tooling = [
        local_tooling(server=server, prefix=f"s{i}", env={"BENCH_SERVER": str(i)})
        for i in range(count)
    ]
    name = f"{server.path.stem}-{count}"
    return write_workflow(directory, name.replace("_", "-"), [agent_node("a", tooling)], ["a"])


def _timer(argv: list[str], cpu: list[float]) -> Callable[[], float]:
    env = bench_env()

    def run() -> float:
        timing: ProcessTiming = time_process(argv, env=env)
        if timing.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited with {timing.returncode}")
        cpu.append(timing.cpu_s)
        return timing.wall_s

    return run


def _compare(
    command: list[str], one: Path, many: Path, rounds: int, warm_up: bool = True
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    cpu: dict[str, list[float]] = {"1": [], str(MANY): []}
    timers = {
        "1": _timer([*command, str(one)], cpu["1"]),
        str(MANY): _timer([*command, str(many)], cpu[str(MANY)]),
    }
    if warm_up:
        timers["1"]()
        cpu["1"].clear()
    return alternate_sync(timers, rounds), cpu


def many_servers(settings: Settings) -> list[Row]:
    """Scenario 6: rows 6a (tools list), 6b (probe), 6c/6d (the same with light servers)."""
    devall = venv_command("devall")
    rounds = settings.pick(3, 1)
    cores = os.cpu_count() or 1
    rows: list[Row] = []
    with scratch_dir("servers") as tmp:
        fixture = fixture_script(settings.quick)
        cases = [
            ("6a", "tools list", ["tools", "list"], fixture),
            ("6b", "probe", ["probe"], fixture),
            ("6c", "tools list, light server", ["tools", "list"], LIGHT),
            ("6d", "probe, light server", ["probe"], LIGHT),
        ]
        for row_id, title, sub, server in cases:
            if settings.quick and row_id in QUICK_SKIPS:
                reason = "--quick runs 6a and 6d (the same code paths)"
                rows.append(skip_row(row_id, f"{MANY} servers vs 1: {title}", "ms", reason))
                continue
            one = servers_workflow(tmp, 1, server)
            many = servers_workflow(tmp, MANY, server)
            samples, cpu = _compare([devall, *sub], one, many, rounds, not settings.quick)
            t1, t8 = median(samples["1"]), median(samples[str(MANY)])
            floor = max(t1, median(cpu[str(MANY)]) / cores)
            ratio = t8 / t1
            rows.append(
                Row(
                    id=row_id,
                    title=f"{MANY} servers vs 1: {title}",
                    devall=t8 * 1000,
                    comparison=t1 * 1000,
                    unit="ms",
                    ratio=ratio,
                    target=f"<= {MANY_TARGET:.1f}x",
                    status=verdict(ratio <= MANY_TARGET),
                    compared_with="1 server",
                    note=(
                        f"CPU time of the run (devall and its servers): 1 server "
                        f"{median(cpu['1']):.2f} s, {MANY} servers {median(cpu[str(MANY)]):.2f} s; "
                        f"on {cores} cores the {MANY}-server run needs >= {floor:.2f} s "
                        f"= {floor / t1:.2f}x"
                    ),
                    samples={k: rounded(v) for k, v in samples.items()}
                    | {f"cpu_{k}": rounded(v) for k, v in cpu.items()},
                )
            )
    return rows
