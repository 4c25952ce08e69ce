"""Scenario 9: `devall batch`: throughput against a slow model, per-task overhead, memory.

9a/9b throughput at --concurrency 1-256 against a 50 ms model, and devall's CPU per task: see
`benchmarks/batch_rate.py`.

9c per-task overhead: in this process, one-turn tasks with a scripted provider (no model, no
server), in alternating rounds of N tasks each: through the batch machinery (BatchRun, the local
executor at concurrency 1, results.jsonl, the progress display, and each task's run directory);
as `devall run` runs them (a held run directory with events.jsonl and result.json each, one
after the other, no batch); and through bare `run_workflow` (no files). The batch machinery's
overhead = batch - run, per task; target <= 5 ms. The run directory's own cost (run - bare) is
in the note: the batch writes it because a task's records must be exactly a run's.

9d memory: the installed `devall batch` runs 2,000 scripted tasks at `--concurrency 8`; its
resident set (VmRSS) is sampled from /proc while the lines of results.jsonl are counted. Flat:
the RSS once all tasks are done at most 5 MB above the RSS at 500 tasks done (what a batch must
keep per task is a few numbers for the summary, ~0.2 KB).
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks.core import Row, Settings, alternate_async, bench_env, median, rounded, verdict
from benchmarks.core import venv_command as installed
from benchmarks.fixtures import scratch_dir

LATENCY_S = 0.5
OVERHEAD_TARGET_MS = 5.0
MEMORY_GROWTH_TARGET_MB = 5.0
KB = 1024


# --- workflows and task files ---------------------------------------------------------------------


def write_flow(folder: Path, name: str, config: dict[str, Any]) -> Path:
    """A one-agent workflow (JSON is YAML) with the agent's `config`."""
    document = {"graph": {"id": name, "start": ["a"], "nodes": [{"id": "a", "type": "agent"}]}}
    document["graph"]["nodes"][0]["config"] = config  # type: ignore[index]
    path = folder / f"{name}.yaml"
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


def scripted_flow(folder: Path) -> Path:
    """One turn of a scripted agent."""
    return write_flow(folder, "scripted", {"provider": "scripted", "script": ["done: {input}"]})


def model_flow(folder: Path, base_url: str) -> Path:
    """One turn of an agent on an OpenAI-compatible endpoint, no retries."""
    config = {
        "provider": "openai",
        "name": "bench-model",
        "base_url": base_url,
        "api_key": "sk-bench",
        "params": {"retries": 0},
    }
    return write_flow(folder, "model", config)


def task_file(folder: Path, count: int, name: str = "tasks.jsonl") -> Path:
    """`count` JSONL tasks t0000, t0001, ..."""
    path = folder / name
    path.write_text(
        "".join(json.dumps({"id": f"t{i:04d}", "task": f"task {i}"}) + "\n" for i in range(count))
    )
    return path


def run_batch(flow: Path, tasks: Path, out: Path, concurrency: int) -> dict[str, Any]:
    """`devall batch` as a fresh process; its summary.json (fails unless every task is ok)."""
    argv = [
        installed("devall"),
        "batch",
        str(flow),
        str(tasks),
        "--out",
        str(out),
        "--concurrency",
        str(concurrency),
        "--json",
    ]
    started = time.perf_counter()
    done = subprocess.run(argv, env=bench_env(), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"devall batch exited {done.returncode}: {done.stderr[-2000:]}")
    summary: dict[str, Any] = json.loads(done.stdout)
    summary["process_s"] = time.perf_counter() - started  # start-up and shutdown included
    return summary


# --- 9c per-task overhead -------------------------------------------------------------------------


async def batch_seconds(flow: Path, tasks: list[Any], out: Path, concurrency: int = 1) -> float:
    """Wall seconds of the tasks through the batch machinery, one at a time."""
    from rich.console import Console

    from devall_cli.batch.executor import ExecutorOptions, make_executor
    from devall_cli.batch.progress import BatchProgress
    from devall_cli.batch.runner import BatchRun, open_results, plan_resume
    from devall_cli.batch.shared_tools import SharedSources
    from devall_cli.batch.task_run import TaskEnv
    from devall_cli.batch.workflows import WorkflowSet

    started = time.perf_counter()
    previous, log = open_results(out, True)
    plan = plan_resume(tasks, previous.outcomes, True)
    env = TaskEnv(batch_dir=out, workflows=WorkflowSet(flow), pool=SharedSources(out))
    executor = make_executor("local", env, ExecutorOptions(concurrency=concurrency))
    progress = BatchProgress(Console(file=io.StringIO()), live=False)
    run = BatchRun(tasks, plan, log, previous=previous.outcomes, about={}, listener=progress)
    summary = await run.run(executor, lambda: 130)
    progress.close()
    if summary["counts"]["ok"] != len(tasks):
        raise RuntimeError(f"not every task ok: {summary['counts']}")
    return time.perf_counter() - started


async def bare_seconds(flow: Path, tasks: list[Any], out: Path) -> float:
    """Wall seconds of the same tasks through `run_workflow` alone, one after the other."""
    from devall_cli.engine.runner import run_workflow
    from devall_cli.engine.session import RunSession
    from devall_cli.workflow.loader import load_workflow

    started = time.perf_counter()
    workflow = load_workflow(flow)
    for task in tasks:
        session = RunSession(workflow, run_id=task.id, run_dir=out / task.id)
        result = await run_workflow(session, task=task.task)
        if not result.output.startswith("done:"):
            raise RuntimeError(f"unexpected output {result.output!r}")
    return time.perf_counter() - started


async def run_dir_seconds(flow: Path, tasks: list[Any], out: Path) -> float:
    """Wall seconds of the same tasks each written as `devall run` writes a run, no batch."""
    from devall_cli.config.model import walk_nodes
    from devall_cli.engine.runner import run_workflow
    from devall_cli.engine.session import RunSession
    from devall_cli.trace.jsonl import JsonlSink
    from devall_cli.trace.result import ResultSink
    from devall_cli.workflow.loader import load_workflow

    started = time.perf_counter()
    workflow = load_workflow(flow)
    node_ids = [path for path, _ in walk_nodes(workflow.graph)]
    for task in tasks:
        run_dir = out / task.id
        session = RunSession(workflow, run_id=task.id, run_dir=run_dir)
        with session.held():
            jsonl = JsonlSink(run_dir / "events.jsonl", session.redactor)
            session.subscribe(jsonl)
            session.subscribe(
                ResultSink(
                    run_dir / "result.json",
                    session.redactor,
                    node_ids=node_ids,
                    recorder=session.recorder,
                )
            )
            result = await run_workflow(session, task=task.task)
            jsonl.close()
        if not result.output.startswith("done:"):
            raise RuntimeError(f"unexpected output {result.output!r}")
    return time.perf_counter() - started


async def overhead(settings: Settings, sizes: tuple[int, int] | None = None) -> Row:
    """Row 9c: what the batch adds to each task, scripted one-turn tasks (`sizes`: N, rounds)."""
    from devall_cli.batch.tasks import BatchTask

    count, rounds = sizes or (settings.pick(200, 3), settings.pick(7, 1))
    tasks = [BatchTask(f"t{i:04d}", f"task {i}", line=i + 1) for i in range(count)]
    with scratch_dir("batch-overhead") as tmp:
        flow = scripted_flow(tmp)
        made = iter(range(10**6))

        async def batch() -> float:
            return await batch_seconds(flow, tasks, tmp / f"batch-{next(made)}")

        async def run() -> float:
            return await run_dir_seconds(flow, tasks, tmp / f"run-{next(made)}")

        async def bare() -> float:
            return await bare_seconds(flow, tasks, tmp / f"bare-{next(made)}")

        await batch()  # warm-up: imports, first loads
        contenders = {"batch": batch, "run": run, "bare": bare}
        samples = await alternate_async(contenders, rounds)
    per = {name: median(values) * 1000 / count for name, values in samples.items()}
    extra = per["batch"] - per["run"]
    return Row(
        id="9c",
        title="batch overhead per task (scripted, one turn)",
        devall=per["batch"],
        comparison=per["run"],
        unit="ms/task",
        ratio=per["batch"] / per["run"] if per["run"] else None,
        target=f"<= {OVERHEAD_TARGET_MS:.0f} ms more",
        status=verdict(extra <= OVERHEAD_TARGET_MS),
        compared_with="the same runs, no batch",
        note=f"batch machinery {extra:.2f} ms a task; the run directory (events.jsonl, "
        f"result.json) {per['run'] - per['bare']:.2f} ms; bare run_workflow {per['bare']:.2f} ms "
        f"({count} tasks a round, {rounds} rounds)",
        samples={f"{name}_s": rounded(values) for name, values in samples.items()},
    )


# --- 9d memory ------------------------------------------------------------------------------------


def rss_kb(pid: int) -> int | None:
    """VmRSS of a process in KB (None once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def lines_in(path: Path) -> int:
    """Whole lines written so far."""
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def sample_batch(flow: Path, tasks: Path, out: Path) -> list[tuple[int, int]]:
    """Run `devall batch` (-c 8), sampling (tasks done, RSS KB) every 50 ms until it exits."""
    argv = [
        installed("devall"),
        "batch",
        str(flow),
        str(tasks),
        "--out",
        str(out),
        "--concurrency",
        "8",
        "--json",
    ]
    samples: list[tuple[int, int]] = []
    with subprocess.Popen(
        argv, env=bench_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        while proc.poll() is None:
            rss = rss_kb(proc.pid)
            done = lines_in(out / "results.jsonl")
            if rss is not None and proc.poll() is None:
                samples.append((done, rss))
            time.sleep(0.05)
    if proc.returncode != 0:
        raise RuntimeError(f"devall batch exited {proc.returncode}")
    return samples


def rss_at(samples: list[tuple[int, int]], done: int) -> int:
    """The highest RSS sampled while the first `done` tasks had finished (KB)."""
    upto = [rss for count, rss in samples if count <= done]
    return max(upto) if upto else samples[0][1]


def memory(settings: Settings) -> Row:
    """Row 9d: RSS of a batch of 2,000 tasks, after 500 and at the end."""
    count = settings.pick(2000, 8)
    early = count // 4
    with scratch_dir("batch-memory") as tmp:
        samples = sample_batch(scripted_flow(tmp), task_file(tmp, count), tmp / "out")
        if lines_in(tmp / "out" / "results.jsonl") != count:
            raise RuntimeError("not every task finished")
    at_early, at_end = rss_at(samples, early), max(rss for _, rss in samples)
    growth_mb = (at_end - at_early) / KB
    per_task_kb = (at_end - at_early) / (count - early)
    return Row(
        id="9d",
        title=f"batch peak RSS, {count} scripted tasks, -c 8",
        devall=at_end / KB,
        comparison=at_early / KB,
        unit="MB",
        ratio=at_end / at_early,
        target=f"growth <= {MEMORY_GROWTH_TARGET_MB:.0f} MB",
        status=verdict(growth_mb <= MEMORY_GROWTH_TARGET_MB),
        compared_with=f"same after {early} tasks",
        note=f"growth {growth_mb:.2f} MB from task {early} to {count} "
        f"({per_task_kb:.2f} KB a task); {len(samples)} samples",
    )


def batch_scenario(settings: Settings) -> list[Row]:
    """Scenario 9: rows 9a-9d."""
    from benchmarks.batch_rate import batch_rate

    rows = batch_rate(settings)
    rows.append(asyncio.run(overhead(settings)))
    rows.append(memory(settings))
    return rows
