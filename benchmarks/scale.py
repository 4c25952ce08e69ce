"""Scenario 13: `devall graph` and `devall report` of big workflows.

The workflows are chains generated here: a `literal` start node and N - 1 `passthrough` nodes,
each feeding the next (no model, no server). 13a/13b: `devall graph W -o x.svg` of the 1,000-
and the 2,000-node chain, fresh processes, alternating; 13b's ratio is the cost of doubling the
graph (2 for linear, 4 for quadratic) and its target is under 1 s at 2,000 nodes. 13c/13d:
`devall report` of a run of each (the runs are made once with `devall run`, not timed); target
under 1 s at 2,000 nodes.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from benchmarks.core import (
    Row,
    Settings,
    alternate_sync,
    bench_env,
    median,
    rounded,
    time_process,
    venv_command,
    verdict,
)
from benchmarks.fixtures import scratch_dir

TARGET_S = 1.0


def chain_workflow(directory: Path, count: int) -> Path:
    """A chain of `count` nodes: a literal, then passthroughs, written as block YAML."""
    lines = ["version: 0.4.0", "graph:", f"  id: chain-{count}", "  start: [n0]", "  nodes:"]
    lines += ["    - id: n0", "      type: literal", "      config:", "        content: hello"]
    for i in range(1, count):
        lines += [f"    - id: n{i}", "      type: passthrough", "      config: {}"]
    lines.append("  edges:")
    for i in range(count - 1):
        lines += [f"    - from: n{i}", f"      to: n{i + 1}"]
    path = directory / f"chain-{count}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _timer(argv: list[str], cwd: Path) -> Callable[[], float]:
    env = bench_env()

    def run() -> float:
        timing = time_process(argv, env=env, cwd=cwd)
        if timing.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited with {timing.returncode}")
        return timing.wall_s

    return run


def make_run(workflow: Path, out: Path) -> None:
    """One `devall run` of the workflow into `out` (not timed)."""
    argv = [venv_command("devall"), "run", str(workflow), "--task", "go", "--out", str(out), "-q"]
    argv += ["--max-steps", "100000"]  # one visit per node: more than the default 1,000
    done = subprocess.run(argv, env=bench_env(), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        tail = done.stderr[-1000:]
        raise RuntimeError(f"devall run of {workflow.name} exited {done.returncode}: {tail}")


def _pair(
    row_ids: tuple[str, str], what: str, sizes: tuple[int, int], samples: dict[str, list[float]]
) -> list[Row]:
    small, large = sizes
    t_small, t_large = median(samples[str(small)]), median(samples[str(large)])
    return [
        Row(
            id=row_ids[0],
            title=f"{what}, {small} nodes",
            devall=t_small * 1000,
            comparison=None,
            unit="ms",
            ratio=None,
            target="-",
            status="INFO",
            note=f"best {min(samples[str(small)]) * 1000:.0f} ms",
            samples={str(small): rounded(samples[str(small)])},
        ),
        Row(
            id=row_ids[1],
            title=f"{what}, {large} nodes",
            devall=t_large * 1000,
            comparison=t_small * 1000,
            unit="ms",
            ratio=t_large / t_small,
            target=f"< {TARGET_S * 1000:.0f} ms",
            status=verdict(t_large < TARGET_S),
            compared_with=f"{small} nodes",
            note=f"the ratio is the cost of doubling the graph (2x linear, 4x quadratic); "
            f"best {min(samples[str(large)]) * 1000:.0f} ms",
            samples={str(large): rounded(samples[str(large)])},
        ),
    ]


def graph_and_report(settings: Settings) -> list[Row]:
    """Scenario 13: rows 13a/13b (graph -o x.svg), 13c/13d (report of a run)."""
    devall = venv_command("devall")
    sizes = (settings.pick(1000, 3), settings.pick(2000, 6))
    rounds = settings.pick(5, 1)
    with scratch_dir("scale") as tmp:
        flows = {n: chain_workflow(tmp, n) for n in sizes}
        graph = {
            str(n): _timer([devall, "graph", str(flows[n]), "-o", str(tmp / f"g{n}.svg")], tmp)
            for n in sizes
        }
        for n in sizes:
            make_run(flows[n], tmp / f"run-{n}")
        report = {
            str(n): _timer(
                [devall, "report", str(tmp / f"run-{n}"), "-o", str(tmp / f"r{n}.html")], tmp
            )
            for n in sizes
        }
        if not settings.quick:
            for timer in [*graph.values(), *report.values()]:
                timer()  # warm-up: page cache
        graph_samples = alternate_sync(graph, rounds)
        report_samples = alternate_sync(report, rounds)
        if not (tmp / f"g{sizes[1]}.svg").stat().st_size:
            raise RuntimeError("devall graph wrote an empty drawing")
    return [
        *_pair(("13a", "13b"), "devall graph -o x.svg", sizes, graph_samples),
        *_pair(("13c", "13d"), "devall report of a run", sizes, report_samples),
    ]
