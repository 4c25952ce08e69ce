"""The benchmark harness still runs: its command and scale scenarios in quick mode.

The other half of test_benchmarks_smoke.py (see its docstring), in a file of its own so that
a test worker runs each half.
"""

from __future__ import annotations

from pathlib import Path

from tests.test_benchmarks_smoke import GROUPS, rows_by_id, run_quick


def test_quick_command_scenarios(tmp_path: Path) -> None:
    rows = rows_by_id(run_quick(tmp_path, GROUPS["commands"]))
    assert {"5a", "5b", "5c", "6a", "6d", "12a", "12b"} <= set(rows)
    assert rows["12b"]["devall"] > 0 and rows["12b"]["comparison"] > 0


def test_quick_scale_and_surface_scenarios(tmp_path: Path) -> None:
    rows = rows_by_id(run_quick(tmp_path, GROUPS["scale"]))
    assert {"13a", "13b", "13c", "13d", "14a", "14b", "14c", "14d"} <= set(rows)
