"""The batch's progress on stderr: a few plain lines without a terminal, a bar with one."""

from __future__ import annotations

import io

from rich.console import Console

from devall_cli.batch.progress import BatchProgress
from devall_cli.batch.results import TaskOutcome
from devall_cli.batch.tasks import BatchTask


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def console(terminal: bool) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=terminal, width=120, no_color=True), buffer


def plain_progress(to_run: int) -> tuple[BatchProgress, io.StringIO]:
    """A progress display without a terminal, its batch of `to_run` tasks started."""
    out, buffer = console(False)
    progress = BatchProgress(out, live=False, clock=Clock())
    progress.batch_started(total=to_run, to_run=to_run, skipped=0)
    return progress, buffer


def test_without_a_terminal_a_line_every_few_seconds_and_one_per_failure() -> None:
    out, buffer = console(False)
    clock = Clock()
    progress = BatchProgress(out, live=False, clock=clock)
    progress.batch_started(total=12, to_run=10, skipped=2)
    for number in range(10):
        clock.now += 1.0
        progress.task_started(BatchTask(f"t{number}", "x"))
        status = "failed" if number == 3 else "ok"
        error = "model endpoint said 500\x1b[2J" if status == "failed" else None
        progress.task_finished(TaskOutcome(f"t{number}", status, error=error))
    progress.close()
    assert buffer.getvalue().splitlines() == [
        "batch: 10 tasks to run (2 of 12 already ok, skipped)",
        "task t3 failed: model endpoint said 500\\x1b[2J",
        "batch: 5/10 done, 1 failed, 0 running, 1.0 tasks/s, ETA 5 s",
        "batch: 10/10 done, 1 failed, 0 running, 1.0 tasks/s",
    ]


def test_a_failures_details_and_hint_are_shown_once_however_many_tasks_they_fit() -> None:
    progress, buffer = plain_progress(4)
    venv = "activate the virtualenv that has the server's packages"
    tail = ("  | Traceback (most recent call last):", "  | ModuleNotFoundError: No module 'x'")
    for task_id, details, hint in [
        ("a", tail, venv),
        ("b", tail, venv),
        ("c", (), None),
        ("d", ("  | 401",), "give the token"),
    ]:
        failed = TaskOutcome(task_id, "failed", error="server exited", details=details, hint=hint)
        progress.task_finished(failed)
    lines = buffer.getvalue().splitlines()
    assert lines[1:10] == [
        "task a failed: server exited",
        *(f"  {line}" for line in tail),
        f"  hint: {venv}",
        "task b failed: server exited",
        "task c failed: server exited",
        "task d failed: server exited",
        "    | 401",
        "  hint: give the token",
    ]


def test_an_executors_notes_get_lines_of_their_own() -> None:
    progress, buffer = plain_progress(1)
    progress.note("starting a local Ray cluster on 127.0.0.1")
    assert buffer.getvalue().splitlines()[1] == "batch: starting a local Ray cluster on 127.0.0.1"


def test_on_a_terminal_a_live_bar_that_leaves_the_last_state_line() -> None:
    out, buffer = console(True)
    progress = BatchProgress(out, live=True, clock=Clock())
    progress.batch_started(total=2, to_run=2, skipped=0)
    progress.task_started(BatchTask("a", "x"))
    progress.task_finished(TaskOutcome("a", "ok"))
    progress.task_started(BatchTask("b", "x"))
    progress.task_finished(TaskOutcome("b", "interrupted"))
    progress.close()
    text = buffer.getvalue()
    assert "batch: 2 tasks to run" in text
    assert text.rstrip().endswith("batch: 1/2 done, 0 failed, 0 running, 0.0 tasks/s")
