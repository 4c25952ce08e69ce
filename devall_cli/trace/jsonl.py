"""The JSONL event log: one complete, redacted JSON object per event, per line."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from devall_cli.errors import RunFailedError
from devall_cli.events import Event, event_to_dict
from devall_cli.redaction import Redactor
from devall_cli.run_files import open_run_file, write_failure
from devall_cli.run_values import LARGE_CHARS, ValueStore
from devall_cli.text import clean_text


def _json_default(value: Any) -> Any:
    """Whatever json cannot write natively (paths, sets, odd objects) becomes its text."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


class _Unplain(Exception):
    """A value masking would turn into another type (a mapping that is not a dict)."""


def _strict_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        raise _Unplain
    return _json_default(value)


@functools.lru_cache(maxsize=64)
def _json_plain(secrets: tuple[str, ...]) -> bool:
    """No secret holds a character JSON escapes: each one is found in JSON text as it is."""
    return not any(ch in '"\\' or ch < " " for secret in secrets for ch in secret)


def nothing_to_mask(redactor: Redactor, text: str) -> bool:
    """True when `text` (JSON of a value) shows that masking the value changes nothing: no
    secret in it, no URL credentials, no query parameters (what `Redactor.text` looks for)."""
    if "://" in text or "=" in text:
        return False
    secrets = redactor.secrets
    return not secrets or (_json_plain(secrets) and not any(s in text for s in secrets))


def unmasked_json(redactor: Redactor, value: Any) -> str | None:
    """`value` as compact JSON when masking it would change nothing; else None (mask it)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=_strict_default)
    except _Unplain:
        return None
    return text if nothing_to_mask(redactor, text) else None


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
        self.values = ValueStore(self.path.parent)  # the run's large texts, each stored once
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
            record: Any = event_to_dict(event)
            # Most events hold nothing to mask, which their JSON shows at once: masking them
            # value by value (then the line) would give the very same line, at many times the cost.
            line = unmasked_json(self.redactor, record)
            masked = line is None
            if line is None:
                record = self.redactor.value(record)
                line = json.dumps(record, ensure_ascii=False, default=_json_default)
            if len(line) > LARGE_CHARS:  # it may hold a text to store once, in values/
                line = json.dumps(
                    self.values.stored(record), ensure_ascii=False, default=_json_default
                )
            if masked:
                # Redact the serialized line too: a secret may hide in a value json stringified.
                line = self.redactor.text(line)
            # clean_text: a lone surrogate that slipped past the boundaries must not lose the event.
            self._file.write(clean_text(line) + "\n")
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
