"""The report: a Rich table on the terminal, and the same rows as JSON or Markdown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.core import Row

STYLES = {"PASS": "green", "MISS": "bold red", "INFO": "dim", "SKIP": "yellow"}


def figure(value: float | None, unit: str) -> str:
    """A value with its unit, with sensible precision."""
    if value is None:
        return "-"
    if unit == "ms/call":
        return f"{value:.3f} ms"
    if unit == "ms/task":
        return f"{value:.2f} ms"
    if unit == "tasks/s":
        return f"{value:.2f}/s"
    if unit == "ms":
        return f"{value:.0f} ms"
    if unit == "MB":
        return f"{value:.1f} MB"
    if unit == "KB":
        return f"{value:.0f} KB"
    if unit == "ms/task CPU":
        return f"{value:.2f} ms"
    return f"{value:g} {unit}"


def ratio_text(row: Row) -> str:
    """`1.03x`, or `-`."""
    return "-" if row.ratio is None else f"{row.ratio:.2f}x"


def table_rows(rows: Sequence[Row]) -> list[list[str]]:
    """The cells of every row, in table order."""
    return [
        [
            row.id,
            row.title,
            figure(row.devall, row.unit),
            figure(row.comparison, row.unit),
            row.compared_with,
            ratio_text(row),
            row.target,
            row.status,
        ]
        for row in rows
    ]


HEADERS = ["#", "scenario", "devall", "comparison", "compared with", "ratio", "target", "result"]


def print_table(rows: Sequence[Row], console: Console) -> None:
    """The results table, then the notes of the rows that have one."""
    table = Table(*HEADERS, title="devall benchmarks (medians)")
    for row, cells in zip(rows, table_rows(rows), strict=True):
        table.add_row(*cells[:-1], f"[{STYLES[row.status]}]{row.status}[/]")
    console.print(table)
    for row in rows:
        if row.note:
            console.print(f"  {row.id}: {row.note}", markup=False, highlight=False)
    missed = [row.id for row in rows if row.status == "MISS"]
    skipped = [row.id for row in rows if row.status == "SKIP"]
    if skipped:
        console.print(f"[yellow]SKIP[/]: {', '.join(skipped)} (not measured here: see the notes)")
    if missed:
        console.print(f"[bold red]MISS[/]: {', '.join(missed)} (see docs/benchmarks.md)")
    else:
        console.print("[green]every target met[/]")


def markdown(rows: Sequence[Row]) -> str:
    """The results as a Markdown table (for docs/benchmarks.md)."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(cells) + " |" for cells in table_rows(rows)]
    return "\n".join(lines) + "\n"


def write_json(path: Path, rows: Sequence[Row], meta: dict[str, Any]) -> None:
    """Rows, samples and machine facts as one JSON document."""
    document = {**meta, "rows": [row.as_dict() for row in rows]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
