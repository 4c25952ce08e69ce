"""The benchmark harness still runs: every scenario in its quick mode, end to end.

`--quick` shrinks every N to a handful and uses the cheapest servers, so figures mean nothing;
what is checked is that each scenario runs to its rows against the code as it is (a scenario
that raises lands in the report's `failed` list). Never a timing: figures depend on the machine.
The scenarios are split in a few groups, each one harness process; two of the groups are in
test_benchmarks_smoke_commands.py, so that the two halves can run in two test workers.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO_ROOT

GROUPS = {
    "tool calls": (1, 2, 3, 4, 7, 8),
    "commands": (5, 6, 11, 12),
    "scale": (13, 14),
    "batch": (9, 10),
}
STATUSES = {"PASS", "MISS", "INFO", "SKIP"}


def run_quick(tmp_path: Path, numbers: tuple[int, ...]) -> dict[str, Any]:
    """`python -m benchmarks --quick --only <numbers>`; its JSON report, checked for shape."""
    report = tmp_path / "bench.json"
    only = ",".join(map(str, numbers))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", only, "--json", str(report)],
        cwd=REPO_ROOT,
        env=dict(os.environ, NO_COLOR="1"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    document: dict[str, Any] = json.loads(report.read_text()) if report.exists() else {}
    assert document.get("failed") == [], done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-2000:]
    rows = document["rows"]
    scenarios = {int(re.match(r"\d+", row["id"]).group()) for row in rows}  # type: ignore[union-attr]
    assert scenarios == set(numbers)
    for row in rows:
        assert row["status"] in STATUSES, row
        if row["status"] == "SKIP":
            assert row["note"].startswith("skipped: "), row
        elif row["status"] in ("PASS", "MISS"):
            assert row["devall"] is not None, row
    assert "ratio" in done.stdout
    return document


def rows_by_id(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The report's rows by id."""
    return {row["id"]: row for row in document["rows"]}


def test_every_scenario_is_in_a_smoke_group() -> None:
    from benchmarks.__main__ import SCENARIOS

    grouped = [n for numbers in GROUPS.values() for n in numbers]
    assert sorted(grouped) == sorted(SCENARIOS)


def test_the_stand_in_tool_layer_takes_what_the_tool_manager_takes() -> None:
    """Scenario 4's engine row runs devall's loop on a stand-in of the ToolManager; it crashed
    once when `ToolManager.call` gained a keyword the stand-in lacked."""
    from benchmarks.overhead import InstantTools
    from devall_cli.tools.manager import ToolManager

    for name in ("call", "specs_for", "start", "close"):
        real = inspect.signature(getattr(ToolManager, name)).parameters
        stand_in = inspect.signature(getattr(InstantTools, name)).parameters
        assert [(p.name, p.kind) for p in real.values()] == [
            (p.name, p.kind) for p in stand_in.values()
        ], name


def test_floor_scenario_workflows_load(tmp_path: Path) -> None:
    from benchmarks.floor import SERVERS, server_workflow
    from devall_cli.tools.kinds.mcp_local import McpLocalConfig
    from devall_cli.workflow.loader import load_workflow

    for server in SERVERS:
        workflow = load_workflow(server_workflow(tmp_path, server))
        (node,) = workflow.graph.nodes
        (entry,) = node.config.tooling  # type: ignore[union-attr]
        assert isinstance(entry.config, McpLocalConfig)
        assert (entry.config.command, entry.config.args) == (server.command, server.args)
        assert entry.config.wait_for_log == server.ready


def test_quick_tool_call_scenarios(tmp_path: Path) -> None:
    rows = rows_by_id(run_quick(tmp_path, GROUPS["tool calls"]))
    assert {"1", "2", "3", "4", "4n", "4a", "4h", "4e", "7a", "7b", "8"} <= set(rows)


def test_quick_batch_scenarios(tmp_path: Path) -> None:
    rows = rows_by_id(run_quick(tmp_path, GROUPS["batch"]))
    assert {"9a1", "9b", "9c", "9d"} <= set(rows)
    assert set(rows["9c"]["samples"]) == {"batch_s", "run_s", "bare_s"}
