"""Scenario 10: the Ray executor on a local cluster against the local executor, same concurrency.

The fake OpenAI-compatible server answers every request after 0.5 s; the installed `devall
batch` (a fresh process) runs the same one-turn tasks at `--concurrency 16`, first with the
local executor, then with `--executor ray --ray-address` on a local two-CPU cluster started
beforehand on 127.0.0.1 ("once the cluster is up"). The figure is the task span throughput:
tasks over the time from the first task's first event to the last task's last event (read from
the run directories' events.jsonl), which leaves out what precedes the tasks in both (process
start-up; for Ray also joining the cluster and starting the pool's workers). The note gives
summary.json's throughput too, which includes the pool's start. Target: Ray's within 1.5x of
local's. Skipped (INFO row) when the ray extra is not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.batch import LATENCY_S, model_flow, task_file
from benchmarks.core import Row, Settings, bench_env, verdict
from benchmarks.core import venv_command as installed
from benchmarks.fixtures import scratch_dir

CONCURRENCY = 16
RATIO_TARGET = 1.5


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


def ray_scenario(settings: Settings) -> list[Row]:
    """Row 10: span throughput with Ray vs local at the same concurrency."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return [
            Row(
                id="10",
                title="batch on a local Ray cluster vs the local executor",
                devall=None,
                comparison=None,
                unit="tasks/s",
                ratio=None,
                target=f"<= {RATIO_TARGET}x",
                status="INFO",
                note="skipped: the ray extra is not installed (pip install 'devall-cli[ray]')",
            )
        ]
    from tests.servers.fake_llm import FakeLLM

    count = settings.pick(128, 32)
    with scratch_dir("batch-ray") as tmp, FakeLLM() as llm:
        flow = model_flow(tmp, llm.base_url)
        tasks = task_file(tmp, count)
        llm.enqueue(*(FakeLLM.text_reply("ok", delay=LATENCY_S) for _ in range(count)))
        local = run(flow, tasks, tmp / "local", [], bench_env())
        started = time.perf_counter()
        cluster, info = start_cluster(tmp)
        cluster_s = time.perf_counter() - started
        try:
            env = bench_env({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": info["token"]})
            llm.enqueue(*(FakeLLM.text_reply("ok", delay=LATENCY_S) for _ in range(count)))
            extra = ["--executor", "ray", "--ray-address", info["address"]]
            on_ray = run(flow, tasks, tmp / "ray", extra, env)
        finally:
            assert cluster.stdin is not None
            cluster.stdin.close()
            cluster.wait(120)
        local_rate, ray_rate = span_rate(tmp / "local"), span_rate(tmp / "ray")
    ratio = local_rate / ray_rate if ray_rate else float("inf")
    return [
        Row(
            id="10",
            title=f"batch, {count} tasks x 0.5 s model, -c {CONCURRENCY}: Ray vs local",
            devall=ray_rate,
            comparison=local_rate,
            unit="tasks/s",
            ratio=ratio,
            target=f"<= {RATIO_TARGET}x",
            status=verdict(ratio <= RATIO_TARGET),
            compared_with="the local executor (span of the tasks)",
            note=f"summary throughput (pool start included): Ray "
            f"{on_ray['throughput_per_s']:.1f}, local {local['throughput_per_s']:.1f} tasks/s; "
            f"cluster start {cluster_s:.1f} s",
        )
    ]
