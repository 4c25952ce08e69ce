"""One run session: the run's id and directory (held by this run alone), the workflow's one
Redactor, the event bus, the recorder that every sink reads instead of keeping its own, the
prices its model calls are costed by and the budget they are held against (if any).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from devall_cli.config.model import Workflow
from devall_cli.config.pricing import PriceEntry, price_table
from devall_cli.engine.budget import BudgetMeter
from devall_cli.events import EventBus, EventSink
from devall_cli.redaction import Redactor
from devall_cli.run_files import locked_run_dir
from devall_cli.trace.recorder import RunRecorder


class RunSession:
    """Everything one run shares between the engine, the tool layer and the sinks."""

    def __init__(
        self,
        workflow: Workflow,
        *,
        run_id: str,
        run_dir: Path,
        on_sink_error: Callable[[EventSink, BaseException], None] | None = None,
        bus: EventBus | None = None,
        price_file: Sequence[PriceEntry] = (),
        budget: BudgetMeter | None = None,
    ) -> None:
        self.workflow = workflow
        self.run_id = run_id
        self.run_dir = run_dir
        self.redactor: Redactor = workflow.redactor
        self.bus = bus if bus is not None else EventBus(on_sink_error=on_sink_error)
        # `--pricing FILE` over the workflow's `pricing:` over the built-in prices.
        self.pricing = price_table(workflow.pricing, price_file)
        # Shared by every run of a batch (its budget is the batch's); None: no budget.
        self.budget = budget
        self.recorder = RunRecorder(self.pricing)
        self.bus.subscribe(self.recorder)  # first, so every sink sees it up to date

    def subscribe(self, sink: EventSink) -> None:
        """Add a sink after the recorder."""
        self.bus.subscribe(sink)

    @contextlib.contextmanager
    def held(self) -> Iterator[RunSession]:
        """Hold the run directory for this run alone (a second run there is refused)."""
        with locked_run_dir(self.run_dir):
            yield self
