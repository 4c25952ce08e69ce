"""Scenario 10: the Ray executor on a local cluster against the local executor, same concurrency.

A local cluster of two worker CPUs (the tests' holder, `tests/servers/ray_cluster.py`, loopback
only) is started once; then the installed `devall batch` (a fresh process each time) runs the
same tasks at `--concurrency 16` with the local executor and with `--executor ray
--ray-address`, alternating. The figure is the wall time of the whole `devall batch` process
(joining the cluster included, starting it not); the notes give the task span throughput too
(first task's first event to last task's last event, from the run directories' events.jsonl).

10a: 500 one-turn tasks on the fake model answering after 50 ms (its server in a process of its
own): Ray within 1.2x of local. 10b: 4,000 one-turn scripted tasks (no model: devall's own CPU
is the work), where the local executor has one process and Ray one per worker CPU: Ray faster.
Skipped (SKIP row) when the ray extra is not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.batch import model_flow, task_file
from benchmarks.core import Row, Settings, bench_env, median, rounded, skip_row, verdict
from benchmarks.core import venv_command as installed
from benchmarks.fixtures import scratch_dir

CONCURRENCY = 16
RATIO_TARGET = 1.2
SHORT_LATENCY_S = 0.05
CLUSTER_CPUS = 2  # what tests/servers/ray_cluster.py gives its cluster: this machine's cores


def span_rate(batch_dir: Path) -> float:
    """Tasks per second from the first event of any task to the last event of any task."""
    first, last, count = float("inf"), 0.0, 0
    for events in (batch_dir / "runs").glob("*/events.jsonl"):
        stamps = [json.loads(line)["ts"] for line in events.read_text().splitlines() if line]
        first, last, count = min(first, stamps[0]), max(last, stamps[-1]), count + 1
    return count / (last - first) if count and last > first else 0.0


def run(flow: Path, tasks: Path, out: Path, extra: list[str], env: dict[str, str]) -> Any:
    """`devall batch` as a fresh process; its summary (fails unless every task is ok)."""
    argv = [installed("devall"), "batch", str(flow), str(tasks), "--out", str(out)]
    argv += ["--concurrency", str(CONCURRENCY), "--json", *extra]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"devall batch exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def start_cluster(folder: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """The tests' local cluster holder: loopback only, stopped when its stdin closes."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.servers.ray_cluster"],
        cwd=folder,
        env=bench_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.kill()
        raise RuntimeError("the local Ray cluster did not start")
    return process, json.loads(line)


def _timed(
    flow: Path, tasks: Path, out: Path, extra: list[str], env: dict[str, str]
) -> tuple[float, Any]:
    """Wall seconds of a whole `devall batch` process, and its summary."""
    started = time.perf_counter()
    summary = run(flow, tasks, out, extra, env)
    return time.perf_counter() - started, summary


RayArgs = tuple[list[str], dict[str, str]]  # the extra options of a Ray batch, its environment


def _compare(
    flow: Path, tasks: Path, tmp: Path, name: str, ray: RayArgs, rounds: int
) -> dict[str, list[float]]:
    """Local and Ray batches of the same tasks, alternating; wall seconds and span rates."""
    samples: dict[str, list[float]] = {"local": [], "ray": [], "local_span": [], "ray_span": []}
    made = iter(range(10**6))
    for number in range(rounds):
        order = ["local", "ray"] if number % 2 == 0 else ["ray", "local"]
        for who in order:
            out = tmp / f"{name}-{who}-{next(made)}"
            extra, env = ray if who == "ray" else ([], bench_env())
            wall, _ = _timed(flow, tasks, out, extra, env)
            samples[who].append(wall)
            samples[f"{who}_span"].append(span_rate(out))
    return samples


def _row(
    row_id: str, title: str, samples: dict[str, list[float]], target: float, faster: bool
) -> Row:
    ray_s, local_s = median(samples["ray"]), median(samples["local"])
    ratio = ray_s / local_s
    ok = ratio < 1.0 if faster else ratio <= target
    return Row(
        id=row_id,
        title=title,
        devall=ray_s * 1000,
        comparison=local_s * 1000,
        unit="ms",
        ratio=ratio,
        target="< 1.00x (faster)" if faster else f"<= {target}x",
        status=verdict(ok),
        compared_with="the local executor, same tasks",
        note=f"whole devall batch processes, the cluster already up; span throughput: Ray "
        f"{median(samples['ray_span']):.1f}, local {median(samples['local_span']):.1f} tasks/s",
        samples={k: rounded(v) for k, v in samples.items()},
    )


def ray_scenario(settings: Settings) -> list[Row]:
    """Rows 10a (short model tasks, Ray vs local) and 10b (CPU-bound scripted tasks)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        reason = "the ray extra is not installed (pip install 'devall-cli[ray]')"
        return [skip_row("10", "batch on a local Ray cluster vs the local executor", "ms", reason)]
    from benchmarks.batch import scripted_flow
    from benchmarks.slow_model import slow_model

    short, heavy = settings.pick(500, 3), settings.pick(4000, 4)
    rounds = settings.pick(3, 1)
    with scratch_dir("batch-ray") as tmp, slow_model(SHORT_LATENCY_S) as url:
        started = time.perf_counter()
        cluster, info = start_cluster(tmp)
        cluster_s = time.perf_counter() - started
        try:
            env = bench_env({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": info["token"]})
            ray = (["--executor", "ray", "--ray-address", info["address"]], env)
            flow = model_flow(tmp, url)
            model = _compare(flow, task_file(tmp, short, "short.jsonl"), tmp, "short", ray, rounds)
            scripted = None
            if not settings.quick:  # one Ray batch is enough to exercise the path
                heavy_tasks = task_file(tmp, heavy, "heavy.jsonl")
                scripted = _compare(scripted_flow(tmp), heavy_tasks, tmp, "heavy", ray, rounds)
        finally:
            assert cluster.stdin is not None
            cluster.stdin.close()
            cluster.wait(120)
    title = f"batch, {short} tasks x 50 ms model, -c {CONCURRENCY}: Ray vs local"
    rows = [_row("10a", title, model, RATIO_TARGET, faster=False)]
    title = f"batch, {heavy} scripted (CPU-bound) tasks, -c {CONCURRENCY}: Ray vs local"
    if scripted is None:
        rows.append(skip_row("10b", title, "ms", "--quick runs one Ray comparison (10a)"))
    else:
        rows.append(_row("10b", title, scripted, RATIO_TARGET, faster=True))
    rows[0].note += f"; local cluster of {CLUSTER_CPUS} worker CPUs started in {cluster_s:.1f} s"
    return rows
