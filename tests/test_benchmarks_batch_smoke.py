"""The batch benchmark still runs against the batch's API: its in-process row (9c), tiny N.

Only the shape of the row is checked, never a timing: figures depend on the machine.
"""

from __future__ import annotations

import asyncio

from benchmarks.batch import overhead
from benchmarks.core import Settings


def test_the_batch_overhead_row_runs_all_three_contenders() -> None:
    row = asyncio.run(overhead(Settings(quick=True), sizes=(4, 1)))
    assert row.id == "9c" and row.status in ("PASS", "MISS")
    assert row.devall is not None and row.comparison is not None and row.devall > 0
    assert set(row.samples) == {"batch_s", "run_s", "bare_s"}
    assert all(len(values) == 1 for values in row.samples.values())
