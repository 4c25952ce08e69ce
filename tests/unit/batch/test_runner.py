"""BatchRun, the sink every executor reports to: records, stopping early, the summary.

The executor here is a stand-in, as another executor (a cluster) would be: it gets the tasks to
run and reports outcomes; BatchRun writes results.jsonl and summary.json whatever happens.
"""

from __future__ import annotations

import asyncio
import errno
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from devall_cli.batch.executor import BatchSink
from devall_cli.batch.results import ResultsLog, TaskOutcome
from devall_cli.batch.runner import BatchRun, open_results, plan_resume
from devall_cli.batch.tasks import BatchTask

TASKS = [BatchTask(f"t{i}", f"task {i}", line=i + 1) for i in range(6)]


class StandIn:
    """Runs tasks by reporting what `statuses` says, one at a time, until told to stop."""

    name = "stand-in"

    def __init__(self, statuses: Sequence[str], cancel_at: int | None = None) -> None:
        self.statuses = list(statuses)
        self.cancel_at = cancel_at
        self.received: list[str] = []
        self.closed = False

    async def run(self, tasks: Sequence[BatchTask], sink: BatchSink) -> None:
        for index, task in enumerate(tasks):
            if sink.should_stop():
                return
            self.received.append(task.id)
            sink.task_started(task)
            if index == self.cancel_at:
                sink.task_finished(TaskOutcome(task.id, "interrupted", exit_code=143))
                raise asyncio.CancelledError
            status = self.statuses[index]
            sink.task_finished(TaskOutcome(task.id, status, duration_ms=10.0 * (index + 1)))

    async def close(self) -> None:
        self.closed = True


def batch(tmp_path: Path, resume: bool = True, **options: object) -> BatchRun:
    previous, log = open_results(tmp_path, resume)
    plan = plan_resume(TASKS, previous.outcomes, resume)
    return BatchRun(
        TASKS, plan, log, previous=previous.outcomes, about={"out": str(tmp_path)}, **options
    )  # type: ignore[arg-type]


def statuses(tmp_path: Path) -> list[tuple[str, str]]:
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    return [(json.loads(line)["id"], json.loads(line)["status"]) for line in lines]


async def test_an_executor_gets_the_tasks_left_and_its_outcomes_are_recorded(
    tmp_path: Path,
) -> None:
    executor = StandIn(["ok", "failed", "ok", "ok", "ok", "ok"])
    summary = await batch(tmp_path).run(executor, lambda: 130)
    assert executor.received == [t.id for t in TASKS] and executor.closed
    assert statuses(tmp_path)[1] == ("t1", "failed")
    assert summary["status"] == "failed" and summary["exit_code"] == 1
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    # Resumed, the executor is handed only the task that is not ok.
    again = StandIn(["ok"])
    summary = await batch(tmp_path).run(again, lambda: 130)
    assert again.received == ["t1"] and summary["status"] == "ok"
    assert summary["counts"]["skipped"] == 5 and summary["slowest"][0]["id"] == "t5"


async def test_max_failures_stops_the_executor_from_starting_more(tmp_path: Path) -> None:
    executor = StandIn(["failed", "ok", "failed", "ok", "ok", "ok"])
    run = batch(tmp_path, max_failures=2)
    summary = await run.run(executor, lambda: 130)
    assert executor.received == ["t0", "t1", "t2"]
    assert summary["stopped_early"] is True and summary["counts"]["not_run"] == 3


async def test_a_cancelled_batch_still_writes_its_summary(tmp_path: Path) -> None:
    executor = StandIn(["ok", "ok"], cancel_at=2)
    run = batch(tmp_path)
    with pytest.raises(asyncio.CancelledError):
        await run.run(executor, lambda: 143)
    assert executor.closed
    assert statuses(tmp_path) == [("t0", "ok"), ("t1", "ok"), ("t2", "interrupted")]
    document = json.loads((tmp_path / "summary.json").read_text())
    assert document["status"] == "interrupted" and document["exit_code"] == 143
    assert document["counts"]["interrupted"] == 1 and document["counts"]["not_run"] == 3


async def test_results_that_cannot_be_written_stop_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: ResultsLog, outcome: TaskOutcome) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ResultsLog, "append", full)
    executor = StandIn(["ok"] * 6)
    run = batch(tmp_path)
    summary = await run.run(executor, lambda: 130)
    assert executor.received == ["t0"]
    assert run.write_failure == (
        f"could not write {tmp_path / 'results.jsonl'}: No space left on device"
    )
    assert summary["status"] == "failed"


async def test_results_that_cannot_be_flushed_to_disk_fail_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_disk(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr("devall_cli.batch.results.os.fsync", broken_disk)
    run = batch(tmp_path)
    summary = await run.run(StandIn(["ok"] * 6), lambda: 130)
    # Every line was written (a kill -9 would not lose them), but none is known to be on disk.
    assert len(statuses(tmp_path)) in range(1, 7)
    assert run.write_failure == (
        f"could not write {tmp_path / 'results.jsonl'}: Input/output error"
    )
    assert summary["status"] == "failed" and summary["exit_code"] == 1
