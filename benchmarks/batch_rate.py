"""Scenario 9, rows 9a and 9b: `devall batch` throughput and CPU per task against a 50 ms model.

The fake OpenAI-compatible server of the tests runs in a process of its own
(`benchmarks/slow_model.py`) and answers every request after 50 ms. The installed `devall batch`
(a fresh process) runs one-turn tasks on it at `--concurrency` 1, 4, 16, 64 and 256, with
enough tasks at each that the batch lasts a few seconds. 9a: throughput, summary.json's (tasks
over the batch's wall time, the process's start-up excluded), against the ideal (concurrency /
50 ms); target at 256: at least 4x the 164 tasks/s measured before the work on it, 656 tasks/s.
9b: devall's CPU per task: the CPU time of the devall process (wait4; the model's is in another
process) over the tasks, less that of a batch of one task (start-up and shutdown), at 256;
target <= 1 ms.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.batch import model_flow, task_file
from benchmarks.core import Row, Settings, bench_env, time_process, venv_command, verdict
from benchmarks.fixtures import scratch_dir
from benchmarks.slow_model import slow_model

LATENCY_S = 0.05
CONCURRENCY = (1, 4, 16, 64, 256)
# Tasks per concurrency: a few seconds of batch at the ideal rate.
TASKS = {1: 60, 4: 240, 16: 800, 64: 2000, 256: 4000}
# What the issue measured before the work on it, tasks/s (for the notes).
BEFORE = {1: 15, 4: 43, 16: 120, 64: 150, 256: 164}
RATE_TARGET = 4 * BEFORE[256]
CPU_TARGET_MS = 1.0


def timed_batch(
    flow: Path, tasks: Path, out: Path, concurrency: int
) -> tuple[dict[str, Any], float]:
    """`devall batch --json` as a fresh process: its summary and its CPU seconds (wait4)."""
    argv = [venv_command("devall"), "batch", str(flow), str(tasks), "--out", str(out)]
    argv += ["--concurrency", str(concurrency), "--json"]
    with tempfile.TemporaryFile("w+") as stdout:
        timing = time_process(argv, env=bench_env(), cwd=out.parent, stdout=stdout)
        stdout.seek(0)
        text = stdout.read()
    if timing.returncode != 0:
        raise RuntimeError(f"devall batch -c {concurrency} exited {timing.returncode}")
    summary: dict[str, Any] = json.loads(text)
    return summary, timing.cpu_s


def batch_rate(settings: Settings) -> list[Row]:
    """Rows 9a<c> (throughput at concurrency c) and 9b (CPU per task)."""
    levels = (1, 4) if settings.quick else CONCURRENCY
    rates: dict[int, float] = {}
    cpu_ms: dict[int, float] = {}
    with scratch_dir("batch-rate") as tmp, slow_model(LATENCY_S) as url:
        flow = model_flow(tmp, url)
        _, base_cpu = timed_batch(flow, task_file(tmp, 1, "one.jsonl"), tmp / "one", 1)
        for level in levels:
            count = 3 if settings.quick else TASKS[level]
            tasks = task_file(tmp, count, f"tasks-{level}.jsonl")
            summary, cpu = timed_batch(flow, tasks, tmp / f"c{level}", level)
            if summary["counts"]["ok"] != count:
                raise RuntimeError(f"not every task ok at -c {level}: {summary['counts']}")
            rates[level] = summary["throughput_per_s"]
            cpu_ms[level] = (cpu - base_cpu) * 1000 / (count - 1)
    rows = []
    for level in levels:
        ideal = level / LATENCY_S
        top = level == CONCURRENCY[-1]
        rows.append(
            Row(
                id=f"9a{level}",
                title=f"batch throughput, 50 ms model, --concurrency {level}",
                devall=rates[level],
                comparison=ideal,
                unit="tasks/s",
                ratio=rates[level] / ideal,
                target=f">= {RATE_TARGET} tasks/s" if top else "-",
                status=verdict(rates[level] >= RATE_TARGET) if top else "INFO",
                compared_with="ideal (concurrency / 50 ms)",
                note=f"{BEFORE[level]} tasks/s before; devall CPU {cpu_ms[level]:.2f} ms a task",
            )
        )
    last = levels[-1]
    rows.append(
        Row(
            id="9b",
            title=f"devall CPU per one-turn task, --concurrency {last}",
            devall=cpu_ms[last],
            comparison=None,
            unit="ms/task",
            ratio=None,
            target=f"<= {CPU_TARGET_MS:.0f} ms",
            status=verdict(cpu_ms[last] <= CPU_TARGET_MS),
            note="CPU of the devall process over the tasks (less a one-task batch's); "
            + ", ".join(f"-c {c}: {cpu_ms[c]:.2f} ms" for c in levels),
        )
    )
    return rows
