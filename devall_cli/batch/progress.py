"""The progress of `devall batch` on stderr: a live bar on a terminal, plain lines elsewhere.

The bar shows done/total, failed, running, the rate and the time left. Without a terminal (CI
logs, `--no-color`, NO_COLOR) a line is printed at most every few seconds and once at the end,
and each failed task gets a line of its own (followed by its details and hint the first time
they come up), so a log stays short however many tasks there are.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from devall_cli.batch.results import TaskOutcome
from devall_cli.batch.tasks import BatchTask
from devall_cli.text import visible

PLAIN_EVERY = 5.0  # seconds between two plain progress lines
ERROR_CHARS = 300


class BatchProgress:
    """A BatchListener drawing the batch's progress on `console` (stderr)."""

    def __init__(
        self,
        console: Console,
        *,
        live: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.live = live
        self.clock = clock
        self.total = self.done = self.failed = self.running = self.skipped = 0
        self._started = 0.0
        self._last_line = 0.0
        self._progress: Progress | None = None
        self._bar: TaskID | None = None
        self._last_text = ""
        # What explains a failure is shown once, however many tasks it fits.
        self._details_shown: set[tuple[str, ...]] = set()
        self._hints_shown: set[str] = set()

    # --- BatchListener -----------------------------------------------------------------------

    def batch_started(self, total: int, to_run: int, skipped: int) -> None:
        """Show what will run."""
        self.total, self.skipped = to_run, skipped
        self._started = self._last_line = self.clock()
        resumed = f" ({skipped} of {total} already ok, skipped)" if skipped else ""
        self._print(f"batch: {to_run} tasks to run{resumed}")
        if self.live and to_run:
            self._progress = Progress(
                TextColumn("batch"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[state]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._bar = self._progress.add_task("batch", total=to_run, state=self._state())
            self._progress.start()

    def task_started(self, task: BatchTask) -> None:
        """One more task running."""
        self.running += 1
        self._update(advance=0)

    def task_finished(self, outcome: TaskOutcome) -> None:
        """Count the task; a failure gets a line of its own."""
        self.running = max(0, self.running - 1)
        if outcome.status != "interrupted":
            self.done += 1
        if outcome.status == "failed":
            self.failed += 1
            error = (outcome.error or "failed")[:ERROR_CHARS]
            self._print(f"task {outcome.id} failed: {error}", style="red")
            self._explain(outcome)
        self._update(advance=1 if outcome.status != "interrupted" else 0)
        now = self.clock()
        if not self.live and now - self._last_line >= PLAIN_EVERY:
            self._last_line = now
            self._print(self.line())

    def note(self, text: str) -> None:
        """A line of what the executor is doing (`batch: starting a local Ray cluster ...`)."""
        self._print(f"batch: {text}")

    def close(self) -> None:
        """Stop the bar and print the last state line."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        if self.total and self.line() != self._last_text:
            self._print(self.line())

    # --- rendering ---------------------------------------------------------------------------

    def _explain(self, outcome: TaskOutcome) -> None:
        """A failure's details (a server's stderr) and hint, as `devall run` prints them."""
        if outcome.details and outcome.details not in self._details_shown:
            self._details_shown.add(outcome.details)
            for line in outcome.details:
                self._print(f"  {line[:ERROR_CHARS]}")
        if outcome.hint and outcome.hint not in self._hints_shown:
            self._hints_shown.add(outcome.hint)
            self._print(f"  hint: {outcome.hint}")

    def line(self) -> str:
        """`batch: 12/64 done, 1 failed, 8 running, 3.1 tasks/s, ETA 17 s`."""
        text = f"batch: {self.done}/{self.total} done, {self._state()}"
        eta = self._eta()
        return text + (f", ETA {eta:.0f} s" if eta is not None else "")

    def _state(self) -> str:
        return f"{self.failed} failed, {self.running} running, {self._rate():.1f} tasks/s"

    def _rate(self) -> float:
        elapsed = self.clock() - self._started
        return self.done / elapsed if elapsed > 0 else 0.0

    def _eta(self) -> float | None:
        rate, left = self._rate(), self.total - self.done
        return left / rate if rate > 0 and left > 0 else None

    def _update(self, advance: int) -> None:
        if self._progress is not None and self._bar is not None:
            self._progress.update(self._bar, advance=advance, state=self._state())

    def _print(self, text: str, style: str | None = None) -> None:
        self._last_text = text
        self.console.print(Text(visible(text), style=style or ""))
