"""The batch: resume from results.jsonl, run the tasks left, record each, stop early, summarize.

`BatchRun` is the sink every executor reports to: it appends each outcome to results.jsonl as
it arrives, counts failures against `--max-failures`, tells its listener (the progress display),
and writes summary.json at the end, also when the batch is interrupted.

A budget (`--max-cost`, `--max-tokens`, `--max-model-calls`) is the whole batch's: one meter
shared by the tasks. Once it is reached no task starts; a task still running stops at its next
model call (status `budget`). The batch then ends with status `budget` and exit 8, and running
the command again (resume) runs the tasks that are not ok, with a fresh budget.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from devall_cli.batch.executor import Executor
from devall_cli.batch.results import RESULTS_NAME, PreviousResults, ResultsLog, TaskOutcome
from devall_cli.batch.summary import Tally, build_summary
from devall_cli.batch.tasks import BatchTask
from devall_cli.engine.budget import BudgetMeter
from devall_cli.errors import BudgetError, ExitCode
from devall_cli.run_files import write_failure

SUMMARY_NAME = "summary.json"


class BatchListener(Protocol):
    """Told what the batch does (the progress display)."""

    def batch_started(self, total: int, to_run: int, skipped: int) -> None:
        """The batch begins: `to_run` of `total` tasks, `skipped` already ok."""
        ...

    def task_started(self, task: BatchTask) -> None:
        """A task began."""
        ...

    def task_finished(self, outcome: TaskOutcome) -> None:
        """A task ended."""
        ...

    def note(self, text: str) -> None:
        """What the executor is doing, when it takes a while."""
        ...


@dataclass(frozen=True)
class ResumePlan:
    """Which tasks run now."""

    to_run: list[BatchTask]
    skipped: list[BatchTask]  # ok in an earlier batch into the same directory


def plan_resume(
    tasks: Sequence[BatchTask], previous: Mapping[str, TaskOutcome], resume: bool
) -> ResumePlan:
    """With `resume`, every task not already ok runs; without, every task runs."""
    if not resume:
        return ResumePlan(list(tasks), [])
    done = {task_id for task_id, outcome in previous.items() if outcome.status == "ok"}
    return ResumePlan([t for t in tasks if t.id not in done], [t for t in tasks if t.id in done])


def open_results(batch_dir: Path, resume: bool) -> tuple[PreviousResults, ResultsLog]:
    """What earlier batches recorded (nothing without `resume`), and the log to append to."""
    from devall_cli.batch.results import read_results

    path = batch_dir / RESULTS_NAME
    if not resume:
        return PreviousResults(), ResultsLog(path)
    previous = read_results(path)
    return previous, ResultsLog(path, keep_bytes=previous.whole_bytes)


class BatchRun:
    """One batch run: the sink of its executor and the keeper of its records."""

    def __init__(
        self,
        tasks: Sequence[BatchTask],
        plan: ResumePlan,
        log: ResultsLog,
        *,
        previous: Mapping[str, TaskOutcome],
        about: Mapping[str, Any],
        listener: BatchListener | None = None,
        max_failures: int | None = None,
        budget: BudgetMeter | None = None,
    ) -> None:
        self.tasks = tasks
        self.plan = plan
        self.log = log
        self.about = dict(about)
        self.listener = listener
        self.max_failures = max_failures
        self.budget = budget
        self.tally = Tally((t.id for t in tasks), previous)
        self.tally.skipped = len(plan.skipped)
        self.failures = 0
        self.write_failure: str | None = None
        self.summary: dict[str, Any] | None = None
        self.summary_failure: str | None = None

    # --- BatchSink ---------------------------------------------------------------------------

    def task_started(self, task: BatchTask) -> None:
        """A task began."""
        if self.listener is not None:
            self.listener.task_started(task)

    def task_finished(self, outcome: TaskOutcome) -> None:
        """Record the outcome on disk first, then in the counts and on the display."""
        try:
            if self.write_failure is None:
                self.log.append(outcome)
        except OSError as exc:
            self.write_failure = write_failure(self.log.path, exc)
        self.tally.record(outcome)
        if outcome.status == "failed":
            self.failures += 1
        if self.listener is not None:
            self.listener.task_finished(outcome)

    def note(self, text: str) -> None:
        """Pass the executor's note on to the display."""
        if self.listener is not None:
            self.listener.note(text)

    def should_stop(self) -> bool:
        """Stop when `--max-failures` or the budget is reached, or results.jsonl cannot be
        written."""
        if self.write_failure is not None or self.budget_stop() is not None:
            return True
        return self.max_failures is not None and self.failures >= self.max_failures

    def budget_stop(self) -> BudgetError | None:
        """The batch's budget, if it is reached."""
        return self.budget.reached() if self.budget is not None else None

    # --- the run -----------------------------------------------------------------------------

    async def run(self, executor: Executor, interrupt_code: Callable[[], int]) -> dict[str, Any]:
        """Run the planned tasks on `executor`; summary.json is written however it ends."""
        started_at, started = time.time(), time.monotonic()
        if self.listener is not None:
            self.listener.batch_started(
                len(self.tasks), len(self.plan.to_run), len(self.plan.skipped)
            )
        code: int | None = None
        try:
            await executor.run(self.plan.to_run, self)
        except asyncio.CancelledError:
            code = interrupt_code()
            raise
        finally:
            try:
                await executor.close()
            finally:
                self._close_log()
                self._finish(code, started_at, started)
        assert self.summary is not None
        return self.summary

    def _close_log(self) -> None:
        """The last fsync of results.jsonl; a failure fails the batch."""
        try:
            self.log.close()
        except OSError as exc:
            if self.write_failure is None:
                self.write_failure = write_failure(self.log.path, exc)

    def _finish(self, interrupted: int | None, started_at: float, started: float) -> None:
        counts = self.tally.counts()
        stop = self.budget_stop()
        # The budget stopped the batch when it kept a task from starting or cut one off.
        stopped = stop is not None and (counts["not_run"] > 0 or self.tally.ran["budget"] > 0)
        if interrupted is not None:
            status, code = "interrupted", interrupted
        elif stopped:
            status, code = "budget", int(ExitCode.BUDGET)
        elif counts["ok"] == counts["total"] and self.write_failure is None:
            status, code = "ok", int(ExitCode.OK)
        else:
            status, code = "failed", int(ExitCode.FAILED)
        self.summary = build_summary(
            self.tally,
            about=self.about,
            status=status,
            exit_code=code,
            started_at=started_at,
            finished_at=time.time(),
            wall_ms=(time.monotonic() - started) * 1000,
            stopped_early=self.stopped_early,
            budget=stop.record() if stop is not None and stopped else None,
        )
        from devall_cli.trace.result import write_json_atomic

        path = Path(self.log.path).parent / SUMMARY_NAME
        try:
            write_json_atomic(path, self.summary)
        except OSError as exc:
            self.summary_failure = write_failure(path, exc)

    @property
    def stopped_early(self) -> bool:
        """`--max-failures` (or a failed write) kept tasks from starting."""
        return self.should_stop() and self.tally.counts()["not_run"] > 0
