"""Scenario 5: wall time of `devall --help` and `devall validate`, next to `python -c pass`.

Each is a fresh process of the venv's interpreter or `devall` script, run alternately; best and
median of the runs are reported. The package's bytecode is compiled first (`compileall`), as
`make` installs it: the figures are those of an installed devall, not of a first run. A separate
in-process check runs both commands and lists the heavy modules (fastmcp, mcp, httpx, httpx2)
they left in `sys.modules`: there must be none. Targets: `--help` < 150 ms, validate < 250 ms.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks.core import (
    REPO_ROOT,
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
from benchmarks.fixtures import (
    agent_node,
    local_tooling,
    remote_tooling,
    scratch_dir,
    write_workflow,
)

HELP_TARGET_MS = 150.0
VALIDATE_TARGET_MS = 250.0
HEAVY = ("fastmcp", "mcp", "httpx", "httpx2")

# Runs one devall command in-process and prints which heavy modules it imported.
_IMPORT_CHECK = """
import json, sys
heavy, args = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["devall", *args]
from devall_cli.cli.app import main
try:
    main()
except SystemExit:
    pass
print("@@" + json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def validate_workflow_file(directory: Path) -> Path:
    """A two-node workflow with a local and a remote MCP server (validate starts neither)."""
    first = agent_node(
        "writer", [local_tooling(), remote_tooling("http://127.0.0.1:9/mcp", prefix="web")]
    )
    second = agent_node("critic", [])
    return write_workflow(directory, "startup", [first, second], ["writer"])


def heavy_modules(args: list[str]) -> list[str]:
    """The heavy modules `devall <args>` imports (run in a fresh interpreter)."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_CHECK, json.dumps(HEAVY), json.dumps(args)],
        capture_output=True,
        text=True,
        env=bench_env(),
        timeout=60,
    )
    marker = done.stdout.rsplit("@@", 1)
    if len(marker) != 2:
        raise RuntimeError(f"import check of {args} failed: {done.stderr[-500:]}")
    loaded: list[str] = json.loads(marker[1])
    return loaded


def compile_bytecode() -> None:
    """Compile devall_cli's bytecode (what `make` installs do), so no run pays for it."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO_ROOT / "devall_cli")],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=300,
    )


def _timer(argv: list[str]) -> Callable[[], float]:
    """A measurement: run `argv` once, return its wall time in ms."""
    env = bench_env()

    def run() -> float:
        timing = time_process(argv, env=env)
        if timing.returncode != 0:
            raise RuntimeError(f"{argv} exited with {timing.returncode}")
        return timing.wall_s * 1000

    return run


def startup(settings: Settings) -> list[Row]:
    """Scenario 5: rows 5a (--help), 5b (validate), 5c (heavy imports)."""
    devall = venv_command("devall")
    rounds = settings.pick(10, 1)
    compile_bytecode()
    with scratch_dir("startup") as tmp:
        workflow = str(validate_workflow_file(tmp))
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "devall --help": [devall, "--help"],
            "devall validate": [devall, "validate", workflow],
        }
        timers = {name: _timer(argv) for name, argv in commands.items()}
        if not settings.quick:
            for timer in timers.values():
                timer()  # warm-up: page cache
        samples = alternate_sync(timers, rounds)
        imported = {
            "--help": heavy_modules(["--help"]),
            "validate": heavy_modules(["validate", workflow]),
        }
    floor = median(samples["python -c pass"])
    rows = []
    for row_id, name, target in (
        ("5a", "devall --help", HELP_TARGET_MS),
        ("5b", "devall validate", VALIDATE_TARGET_MS),
    ):
        values = samples[name]
        best, mid = min(values), median(values)
        rows.append(
            Row(
                id=row_id,
                title=f"startup: {name}",
                devall=mid,
                comparison=floor,
                unit="ms",
                ratio=mid / floor,
                target=f"< {target:.0f} ms",
                status=verdict(mid < target),
                compared_with="python -c pass",
                note=f"best {best:.0f} ms, floor best {min(samples['python -c pass']):.0f} ms",
                samples={
                    name: rounded(values, 1),
                    "python -c pass": rounded(samples["python -c pass"], 1),
                },
            )
        )
    found = sorted({m for mods in imported.values() for m in mods})
    rows.append(
        Row(
            id="5c",
            title="startup: heavy imports",
            devall=float(len(found)),
            comparison=0.0,
            unit="modules",
            ratio=None,
            target="none of " + ", ".join(HEAVY),
            status=verdict(not found),
            note="imported: " + (", ".join(found) if found else "none"),
        )
    )
    return rows
