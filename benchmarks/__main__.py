"""`python -m benchmarks [--quick] [--only 1,4] [--json PATH] [--markdown PATH]`.

Runs the scenarios in order and prints one table. The exit status is 0 even when a target is
missed (this is a report); it is 1 only when a scenario could not run at all.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from benchmarks.core import Row, Settings, machine_facts, run_async

SCENARIOS = {
    1: "per-call overhead, stdio",
    2: "per-call overhead, streamable HTTP",
    3: "remote session reuse vs new session per call",
    4: "tool calls through the whole run loop",
    5: "startup: --help and validate",
    6: "many servers: tools list and probe",
    7: "parallel graph",
    8: "memory of the run loop",
    9: "devall batch: throughput, per-task overhead, memory",
    10: "devall batch on a local Ray cluster vs the local executor",
    11: "start-up vs the floor and the Inspector CLI: tools list, tools call, probe",
    12: "devall run of the offline demo vs tools list of it: wall time, peak RSS",
    13: "devall graph and devall report of 1,000- and 2,000-node workflows",
    14: "big surfaces: 5,000 tools, a 1 MB tool result",
}


def scenario_runner(number: int, settings: Settings) -> Callable[[], list[Row]]:
    """The function that runs one scenario (modules are imported only when selected)."""
    if number in (1, 2, 3):
        from benchmarks import percall

        runs = {
            1: [percall.stdio_per_call],
            2: [percall.http_per_call, percall.http_per_call_example],
            3: [percall.session_reuse],
        }[number]
        return lambda: [run_async(run(settings)) for run in runs]
    if number == 4:
        from benchmarks.overhead import engine_overhead
        from benchmarks.runloop import run_loop

        def scenario_4() -> list[Row]:
            rows: list[Row] = run_async(run_loop(settings))
            return [*rows, run_async(engine_overhead(settings, rows[0].comparison))]

        return scenario_4
    if number == 5:
        from benchmarks.startup import startup

        return lambda: startup(settings)
    if number == 6:
        from benchmarks.servers import many_servers

        return lambda: many_servers(settings)
    if number == 7:
        from benchmarks.parallel import parallel_graph

        return lambda: list(run_async(parallel_graph(settings)))
    if number == 9:
        from benchmarks.batch import batch_scenario

        return lambda: batch_scenario(settings)
    if number == 10:
        from benchmarks.batch_ray import ray_scenario

        return lambda: ray_scenario(settings)
    if number == 11:
        from benchmarks.floor import floor_startup

        return lambda: floor_startup(settings)
    if number == 12:
        from benchmarks.runstart import run_vs_list

        return lambda: run_vs_list(settings)
    if number == 13:
        from benchmarks.scale import graph_and_report

        return lambda: graph_and_report(settings)
    if number == 14:
        from benchmarks.surfaces import big_surfaces

        return lambda: big_surfaces(settings)
    from benchmarks.memory import memory

    return lambda: [memory(settings)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small N: a smoke run, not figures")
    parser.add_argument(
        "--only",
        metavar="N,M",
        help=f"run only these scenarios (1-{len(SCENARIOS)}), e.g. --only 1,4",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    parser.add_argument(
        "--markdown", type=Path, metavar="PATH", help="also write the table as Markdown"
    )
    args = parser.parse_args(argv)
    try:
        args.selected = sorted({int(x) for x in args.only.split(",")}) if args.only else []
    except ValueError:
        parser.error(f"--only takes scenario numbers separated by commas, got {args.only!r}")
    if any(n not in SCENARIOS for n in args.selected):
        parser.error(f"scenarios are numbered 1-{len(SCENARIOS)}")
    args.selected = args.selected or list(SCENARIOS)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the selected scenarios, print the table, write the optional reports."""
    args = parse_args(argv)
    settings = Settings(quick=args.quick)
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = 180  # piped or logged: keep each row on one line
    os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
    os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
    facts = machine_facts()
    console.print(
        f"machine: {facts['cpus']} x {facts['cpu_model']}, Python {facts['python']}, "
        f"fastmcp {facts['fastmcp']}, load {facts['load_average']}",
        markup=False,
    )
    rows: list[Row] = []
    failed: list[int] = []
    started = time.perf_counter()
    for number in args.selected:
        console.print(f"[bold]{number}.[/] {SCENARIOS[number]} ...")
        t0 = time.perf_counter()
        try:
            rows += scenario_runner(number, settings)()
        except Exception:
            failed.append(number)
            console.print(f"[bold red]scenario {number} could not run[/]")
            traceback.print_exc()
        console.print(f"   done in {time.perf_counter() - t0:.1f} s", style="dim")
    from benchmarks.report import markdown, print_table, write_json

    print_table(rows, console)
    total = time.perf_counter() - started
    console.print(f"total {total:.0f} s", style="dim")
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "scenarios": args.selected,
        "failed": failed,
        "duration_s": round(total, 1),
        "machine": facts | {"load_average_after": [round(x, 2) for x in os.getloadavg()]},
    }
    if args.json:
        write_json(args.json, rows, meta)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown(rows), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
