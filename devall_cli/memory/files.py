"""Memory files: JSON read within limits, written atomically (a crash never leaves half a file)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from devall_cli import json_limits, limits
from devall_cli.errors import RunFailedError


def read_memory_file(path: Path, store: str) -> Any | None:
    """The JSON of a store's file; None when there is no file yet.

    A file devall cannot read is an error rather than an empty memory: saving over it would lose
    what it holds.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise unreadable_error(path, store, exc.strerror or str(exc)) from exc
    if size > limits.MEMORY_FILE_BYTES:
        reason = f"it holds {size} bytes, more than the {limits.MEMORY_FILE_BYTES} devall reads"
        raise unreadable_error(path, store, reason)
    try:
        return json_limits.loads(path.read_bytes())
    except OSError as exc:
        raise unreadable_error(path, store, exc.strerror or str(exc)) from exc
    except ValueError as exc:
        raise unreadable_error(path, store, f"not valid JSON ({exc})") from exc


def unreadable_error(path: Path, store: str, reason: str) -> RunFailedError:
    """The error for a store file devall cannot use."""
    return RunFailedError(
        f"memory store '{store}': cannot read {path}: {reason}",
        details=["move the file away to start this store afresh"],
    )


def write_memory_file(path: Path, data: Any) -> None:
    """Write JSON beside `path`, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=2)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
