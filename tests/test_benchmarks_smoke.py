"""The benchmark harness still runs: its cheapest scenario (startup) in smoke mode, end to end.

Only the shape of the report is checked, never a timing: figures depend on the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT


def test_quick_startup_scenario_reports_its_rows(tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", "5", "--json", str(report)],
        cwd=REPO_ROOT,
        env=dict(os.environ, NO_COLOR="1"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(report.read_text())
    rows = {row["id"]: row for row in document["rows"]}
    assert {"5a", "5b", "5c"} <= set(rows)
    for row_id in ("5a", "5b"):
        assert rows[row_id]["status"] in ("PASS", "MISS")
        assert rows[row_id]["devall"] > 0 and rows[row_id]["comparison"] > 0
    assert rows["5c"]["status"] in ("PASS", "MISS")
    assert document["failed"] == []
    assert "devall --help" in done.stdout and "ratio" in done.stdout


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


def test_the_engine_overhead_scenario_runs_on_its_stand_in_tools() -> None:
    """Scenario 4's engine row runs devall's whole loop on a stand-in of the ToolManager: the
    stand-in must take what ToolManager.call takes (it crashed when `context=` was added)."""
    import asyncio
    import inspect

    from benchmarks.core import Settings
    from benchmarks.overhead import InstantTools, engine_overhead
    from devall_cli.tools.manager import ToolManager

    stand_in = set(inspect.signature(InstantTools.call).parameters)
    assert set(inspect.signature(ToolManager.call).parameters) <= stand_in
    row = asyncio.run(engine_overhead(Settings(quick=True), None))
    assert row.devall is not None and row.devall > 0
