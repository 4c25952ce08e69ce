"""summary.json: what the batch's results add up to, over every task of the TASKS file.

Counts are of each task's latest result (this batch's, or an earlier one's kept by resume);
throughput is of the tasks this batch ran. Only a few numbers are kept per task, never its
output, so memory stays flat however many tasks there are.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from devall_cli.batch.results import TaskOutcome
from devall_cli.config.cost import CostTotals

SLOWEST = 5


@dataclass(frozen=True)
class _Entry:
    status: str
    duration_ms: float
    prompt: int
    completion: int
    total: int
    run_dir: str
    cost: CostTotals


def _entry(outcome: TaskOutcome) -> _Entry:
    tokens = outcome.tokens
    return _Entry(
        outcome.status,
        outcome.duration_ms,
        int(tokens.get("prompt", 0)),
        int(tokens.get("completion", 0)),
        int(tokens.get("total", 0)),
        outcome.run_dir,
        outcome.cost,
    )


class Tally:
    """The latest result of each task, in the few numbers the summary needs."""

    def __init__(self, task_ids: Iterable[str], previous: Mapping[str, TaskOutcome]) -> None:
        self.task_ids = list(task_ids)
        known = set(self.task_ids)
        self._latest = {i: _entry(o) for i, o in previous.items() if i in known}
        self.ran: dict[str, int] = {"ok": 0, "failed": 0, "interrupted": 0, "budget": 0}
        self.skipped = 0  # already ok in an earlier batch

    def record(self, outcome: TaskOutcome) -> None:
        """A task of this batch ended."""
        self._latest[outcome.id] = _entry(outcome)
        self.ran[outcome.status] = self.ran.get(outcome.status, 0) + 1

    @property
    def finished(self) -> int:
        """Tasks this batch ran to an end (ok or failed)."""
        return self.ran["ok"] + self.ran["failed"]

    def counts(self) -> dict[str, int]:
        """total, ok, failed, interrupted, budget (stopped by it), not_run; ran and skipped by
        this batch."""
        counts = dict.fromkeys(("ok", "failed", "interrupted", "budget"), 0)
        counts = {"total": len(self.task_ids), **counts}
        for task_id in self.task_ids:
            entry = self._latest.get(task_id)
            if entry is not None:
                counts[entry.status] = counts.get(entry.status, 0) + 1
        counts["not_run"] = counts["total"] - counts["ok"] - counts["failed"]
        counts["not_run"] -= counts["interrupted"] + counts["budget"]
        counts["ran"] = sum(self.ran.values())
        counts["skipped"] = self.skipped
        return counts

    def tokens(self) -> dict[str, int]:
        """Token totals of the tasks' latest results."""
        entries = [self._latest[i] for i in self.task_ids if i in self._latest]
        return {
            "prompt": sum(e.prompt for e in entries),
            "completion": sum(e.completion for e in entries),
            "total": sum(e.total for e in entries),
        }

    def cost(self) -> CostTotals:
        """Tokens and cost of the tasks' latest results (unknown if one of them had no price)."""
        total = CostTotals()
        for task_id in self.task_ids:
            entry = self._latest.get(task_id)
            if entry is not None:
                total = total + entry.cost
        return total

    def slowest(self, count: int = SLOWEST) -> list[dict[str, Any]]:
        """The tasks whose latest result took longest."""
        present = [(i, self._latest[i]) for i in self.task_ids if i in self._latest]
        top = heapq.nlargest(count, present, key=lambda item: item[1].duration_ms)
        return [
            {"id": i, "status": e.status, "duration_ms": e.duration_ms, "run_dir": e.run_dir}
            for i, e in top
        ]


def iso(ts: float) -> str:
    """A UNIX time as ISO 8601 UTC."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")


def build_summary(
    tally: Tally,
    *,
    about: Mapping[str, Any],
    status: str,
    exit_code: int,
    started_at: float,
    finished_at: float,
    wall_ms: float,
    stopped_early: bool,
    budget: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary document (`budget`: the batch's budget that stopped it, if it did)."""
    seconds = wall_ms / 1000
    document: dict[str, Any] = {
        **about,
        "status": status,
        "exit_code": exit_code,
        "stopped_early": stopped_early,
        "started_at": iso(started_at),
        "finished_at": iso(finished_at),
        "wall_ms": round(wall_ms, 3),
        "counts": tally.counts(),
        "throughput_per_s": round(tally.finished / seconds, 3) if seconds > 0 else 0.0,
        "tokens": tally.tokens(),
        "cost": tally.cost().record(),
        "slowest": tally.slowest(),
    }
    if budget is not None:
        document["budget"] = dict(budget)
    return document
