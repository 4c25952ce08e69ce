"""The process table as Linux shows it in /proc: parent, group, state and start of each process.

Where there is no /proc the table is empty: callers then know only the processes they started.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessInfo:
    """One process: who its parent is, its group, its state letter and when it started."""

    pid: int
    ppid: int
    pgid: int
    state: str  # R, S, D, Z (zombie), T, ...
    start: int  # clock ticks after boot; with the pid it names one process, even after reuse

    @property
    def running(self) -> bool:
        """Whether it can still run code (a zombie cannot)."""
        return self.state != "Z"


def read_process(pid: int) -> ProcessInfo | None:
    """What /proc says about `pid`, or None when it is gone (or there is no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    # The command name in parentheses may hold spaces and parentheses: split after the last one.
    fields = text.rpartition(")")[2].split()
    try:
        return ProcessInfo(pid, int(fields[1]), int(fields[2]), fields[0], int(fields[19]))
    except (IndexError, ValueError):
        return None


def process_table() -> dict[int, ProcessInfo]:
    """Every process /proc shows, by pid."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    table = {}
    for name in entries:
        if name.isdigit() and (info := read_process(int(name))) is not None:
            table[info.pid] = info
    return table


def descendants(roots: Iterable[int], table: dict[int, ProcessInfo]) -> list[ProcessInfo]:
    """The processes below `roots` in `table` (children, their children, ...), roots excluded."""
    children: dict[int, list[ProcessInfo]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info)
    found: list[ProcessInfo] = []
    seen = set(roots)
    pending = list(seen)
    while pending:  # a loop, not recursion: process trees may be deep
        for child in children.get(pending.pop(), ()):
            if child.pid not in seen:
                seen.add(child.pid)
                found.append(child)
                pending.append(child.pid)
    return found
