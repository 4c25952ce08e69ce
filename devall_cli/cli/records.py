"""The records a command keeps in its run directory (events.jsonl, result.json), and the
`run files: DIR/` line that ends its trace."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devall_cli.cli.common import print_line, stderr_console
from devall_cli.errors import RunFailedError

if TYPE_CHECKING:
    from devall_cli.engine.session import RunSession


class RunRecords:
    """events.jsonl and result.json of one session, written as its events arrive."""

    def __init__(self, session: RunSession, node_ids: Sequence[str] = ()) -> None:
        from devall_cli.trace.jsonl import JsonlSink
        from devall_cli.trace.result import ResultSink

        redactor, run_dir = session.redactor, session.run_dir
        self.redactor = redactor
        self.jsonl = JsonlSink(run_dir / "events.jsonl", redactor)
        self.results = ResultSink(
            run_dir / "result.json", redactor, node_ids=node_ids, recorder=session.recorder
        )
        session.subscribe(self.jsonl)
        session.subscribe(self.results)

    @property
    def document(self) -> dict[str, Any] | None:
        """The result.json document, once the run finished."""
        return self.results.document

    def close(self) -> None:
        """Flush and close events.jsonl (idempotent)."""
        self.jsonl.close()

    def raise_failures(self, *others: str | None) -> None:
        """RunFailedError naming each file that could not be written (a full disk), if any;
        `others` are further failures of the command's files (e.g. its report)."""
        found = (self.jsonl.failure, self.results.failure, *others)
        failures = [self.redactor.text(f) for f in found if f]
        if failures:
            raise RunFailedError(failures[0], details=failures[1:])


@contextlib.contextmanager
def run_records(session: RunSession, node_ids: Sequence[str] = ()) -> Iterator[RunRecords]:
    """RunRecords for the block; events.jsonl is closed when it ends, whatever happens."""
    records = RunRecords(session, node_ids)
    try:
        yield records
    finally:
        records.close()


def print_run_files(run_dir: Path) -> None:
    """`run files: logs/<run-id>/` on stderr: where the records of this command are."""
    print_line(stderr_console(), f"run files: {os.path.join(str(run_dir), '')}")
