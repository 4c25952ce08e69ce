"""The JSONL event log: one complete, redacted JSON object per event, per line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from devall_cli.errors import RunFailedError
from devall_cli.events import Event, event_to_dict
from devall_cli.redaction import Redactor
from devall_cli.run_files import open_run_file, write_failure
from devall_cli.text import clean_text


def _json_default(value: Any) -> Any:
    """Whatever json cannot write natively (paths, sets, odd objects) becomes its text."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


class JsonlSink:
    """Writes every event to `path` (`events.jsonl`), flushed line by line.

    An event that cannot be written is raised; `failure` says which file could not be written
    and why, for the command to report at the end. After a failed write (a full disk) the sink
    stops.
    """

    def __init__(self, path: Path, redactor: Redactor) -> None:
        self.path = Path(path)
        self.redactor = redactor
        self.failure: str | None = None
        try:
            # Line-buffered, so a crash or Ctrl-C leaves every event written so far on disk;
            # the file is created afresh, never written through a link in its place.
            self._file: IO[str] | None = open_run_file(self.path)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise RunFailedError(f"cannot write the event log {self.path}: {reason}") from exc

    def __call__(self, event: Event) -> None:
        """Append one event."""
        if self._file is None:
            return
        try:
            record = self.redactor.value(event_to_dict(event))
            line = json.dumps(record, ensure_ascii=False, default=_json_default)
            # Redact the serialized line too: a secret may hide in a value json had to stringify.
            # clean_text: a lone surrogate that slipped past the boundaries must not lose the event.
            self._file.write(clean_text(self.redactor.text(line)) + "\n")
            self._file.flush()
        except Exception as exc:
            self.failure = self.failure or write_failure(self.path, exc)
            if isinstance(exc, OSError):
                self.close()  # the disk is full or gone: later events cannot be written either
            raise

    def close(self) -> None:
        """Close the file (idempotent); a failure to write its last bytes is kept in `failure`."""
        file, self._file = self._file, None
        if file is None:
            return
        try:
            file.close()
        except OSError as exc:
            self.failure = self.failure or write_failure(self.path, exc)

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
