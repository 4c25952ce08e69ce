"""results.jsonl: one line per finished task, appended whole and fsync'd as each task ends.

A line is written with one `write` on a file opened for appending as the task ends: once that
call returns the line is the kernel's, so a batch killed at any moment (`kill -9`) loses no
finished task. A flusher thread fsyncs the file every `FSYNC_EVERY` seconds when lines were
added since its last fsync, so that a power cut loses at most the lines of that last moment;
no task waits for the disk, and lines finishing close together share one fsync (group commit).
Closing the log fsyncs once more, on the caller's thread. At worst the file ends with the start
of a line that was being written; reading back keeps the last line of each id and ignores that
unfinished tail, which `ResultsLog` cuts off before it appends again.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from devall_cli import json_limits
from devall_cli.config.cost import CostTotals
from devall_cli.errors import RunFailedError
from devall_cli.run_files import open_run_file
from devall_cli.run_values import LARGE_CHARS, ValueStore, is_ref, read_value
from devall_cli.text import clean_text

RESULTS_NAME = "results.jsonl"
FSYNC_EVERY = 0.05  # seconds: the most a finished line waits for its fsync
STATUSES = ("ok", "failed", "interrupted", "budget")


@dataclass(frozen=True)
class TaskOutcome:
    """How one task ended: a line of results.jsonl."""

    id: str
    status: str  # ok | failed | interrupted | budget (the batch's budget stopped it)
    output: str = ""
    error: str | None = None
    duration_ms: float = 0.0
    tokens: Mapping[str, int] = field(default_factory=dict)
    run_dir: str = ""  # relative to the batch directory: runs/<task>
    exit_code: int = 0
    details: tuple[str, ...] = ()  # what the failure's message leaves out (a server's stderr)
    hint: str | None = None  # how to fix the failure, where devall can tell
    cost: CostTotals = field(default_factory=CostTotals)  # of the task's model calls

    def record(self) -> dict[str, Any]:
        """The JSON object of the line."""
        return {
            "id": self.id,
            "status": self.status,
            "output": self.output,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "tokens": dict(self.tokens),
            "run_dir": self.run_dir,
            "exit_code": self.exit_code,
            "details": list(self.details),
            "hint": self.hint,
            "cost": self.cost.record(),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TaskOutcome:
        """The outcome a line describes (fields missing from older lines take defaults)."""
        tokens = record.get("tokens") or {}
        if not isinstance(tokens, Mapping):
            raise TypeError("tokens is not an object")
        counts = {key: _count(tokens.get(key, 0), key) for key in TOKEN_KEYS}
        return cls(
            id=str(record["id"]),
            status=str(record["status"]),
            output=str(record.get("output") or ""),
            error=record.get("error"),
            duration_ms=_number(record.get("duration_ms") or 0.0, "duration_ms"),
            tokens=counts,
            run_dir=str(record.get("run_dir") or ""),
            exit_code=int(_count(record.get("exit_code") or 0, "exit_code")),
            details=tuple(str(line) for line in record.get("details") or ()),
            hint=str(record["hint"]) if record.get("hint") else None,
            cost=CostTotals.from_record(record.get("cost")),
        )


TOKEN_KEYS = ("prompt", "completion", "total")


def _count(value: Any, name: str) -> int:
    """A whole number a line must hold (TypeError otherwise: the line is not read)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is not a whole number")
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} is not a number")
    return float(value)


@dataclass
class PreviousResults:
    """What an earlier batch into the same directory recorded."""

    outcomes: dict[str, TaskOutcome] = field(default_factory=dict)  # the last line of each id
    bad_lines: list[int] = field(default_factory=list)  # lines that are not a result
    whole_bytes: int = 0  # length of the file up to its last complete line


def read_results(path: Path) -> PreviousResults:
    """The last outcome of each task in `path`; an absent file is an empty result."""
    previous = PreviousResults()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return previous
    except OSError as exc:
        raise RunFailedError(f"cannot read {path}: {exc.strerror or exc}") from None
    previous.whole_bytes = data.rfind(b"\n") + 1
    lines = data[: previous.whole_bytes].split(b"\n")[:-1]
    for number, raw in enumerate(lines, start=1):
        outcome = _parse_line(raw, path.parent)
        if outcome is None:
            if raw.strip():
                previous.bad_lines.append(number)
            continue
        previous.outcomes[outcome.id] = outcome
    return previous


def _parse_line(raw: bytes, batch_dir: Path) -> TaskOutcome | None:
    try:
        record = json_limits.loads(raw)
        if not isinstance(record, dict) or record.get("status") not in STATUSES:
            return None
        if is_ref(record.get("output")):  # a long output, kept in the task's run directory
            record["output"] = read_value(record["output"], batch_dir)
        return TaskOutcome.from_record(record)
    except (ValueError, KeyError, TypeError):
        return None


class ResultsLog:
    """Appends outcomes to results.jsonl, one whole line each, fsync'd by a flusher thread."""

    def __init__(self, path: Path, *, keep_bytes: int | None = None) -> None:
        """Open `path`; `keep_bytes` continues it (cut to that length), None starts it afresh."""
        self.path = Path(path)
        try:
            self._file: IO[str] = open_run_file(self.path, append=keep_bytes is not None)
            if keep_bytes is not None and os.fstat(self._file.fileno()).st_size > keep_bytes:
                os.truncate(self._file.fileno(), keep_bytes)  # an unfinished last line
        except OSError as exc:
            raise RunFailedError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self._dirty = False  # lines written since the flusher's last fsync
        self._stop = threading.Event()
        self._sync_error: OSError | None = None
        self.syncs = 0  # fsyncs done (fewer than lines when lines finish close together)
        self._flusher = threading.Thread(target=self._flush_loop, name="results-fsync", daemon=True)
        self._flusher.start()

    def append(self, outcome: TaskOutcome) -> None:
        """Write the outcome's line in one piece, for the flusher to fsync; OSError on failure."""
        if self._sync_error is not None:
            raise self._sync_error
        line = json.dumps(self._record(outcome), ensure_ascii=False, default=str) + "\n"
        data = clean_text(line).encode("utf-8")
        fd = self._file.fileno()
        # The text layer is never used: one write of the whole line, no buffer in between.
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        self._dirty = True  # no wake-up: a thread switch per line would cost more than the fsync

    def _record(self, outcome: TaskOutcome) -> dict[str, Any]:
        """The line's object; a long output refers to the task's run directory's copy of it."""
        record = outcome.record()
        if len(outcome.output) > LARGE_CHARS and outcome.run_dir:
            prefix = f"{outcome.run_dir}/"
            store = ValueStore(self.path.parent / outcome.run_dir, prefix=prefix)
            record["output"] = store.stored(outcome.output)
        return record

    def close(self) -> None:
        """Stop the flusher, fsync what is left and close the file; OSError when it cannot."""
        if self._file.closed:
            return
        self._stop.set()
        self._flusher.join()
        try:
            if self._sync_error is not None:
                raise self._sync_error
            os.fsync(self._file.fileno())
            self.syncs += 1
        finally:
            self._file.close()

    def _flush_loop(self) -> None:
        while not self._stop.wait(FSYNC_EVERY):
            if not self._dirty:
                continue
            self._dirty = False  # set before the fsync: a line written during it gets the next
            try:
                os.fsync(self._file.fileno())
                self.syncs += 1
            except OSError as exc:
                self._sync_error = exc
                return
