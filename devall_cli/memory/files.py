"""Memory files: read within limits, written atomically under a lock.

What is read is a regular file only (a FIFO, a socket or a device is refused before it is
opened, so nothing blocks or streams without end) and at most its limit and one byte, whatever
its size says. A store writes its file back under an exclusive lock on `.<name>.lock` beside it,
re-reading the file under the lock so that it adds to what other runs wrote since it loaded it
instead of writing over that; the result is written to a temporary name and renamed into place,
so a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from devall_cli import json_limits, limits
from devall_cli.errors import RunFailedError

LOCK_WAIT_S = 60.0  # how long a save waits for another run to finish writing the same file
_LOCK_POLL_S = 0.01
_READ_CHUNK = 1024 * 1024
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class RefusedFileError(Exception):
    """A file devall does not read: not a regular file, or larger than its limit."""


def read_regular_file(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file at `path` (symlinks followed); None when there is none.

    RefusedFileError for anything but a regular file, checked before it is opened (and again
    on the descriptor, opened without blocking, should the name change in between), and for
    more than `limit` bytes: refused from the size when it says so, else after `limit` + 1
    bytes are read. OSError when it cannot be read.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    _check_regular(info)
    if info.st_size > limit:
        raise RefusedFileError(f"it holds {info.st_size} bytes, more than the {limit} devall reads")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    try:
        _check_regular(os.fstat(fd))
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, _READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    if left <= 0:
        raise RefusedFileError(f"it holds more than the {limit} bytes devall reads")
    return b"".join(chunks)


def _check_regular(info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise RefusedFileError(f"it is {_kind(info.st_mode)}, not a regular file")


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def read_memory_file(path: Path, store: str) -> Any | None:
    """The JSON of a store's file; None when there is no file yet.

    A file devall cannot read is an error rather than an empty memory: saving over it would lose
    what it holds.
    """
    try:
        raw = read_regular_file(path, limits.MEMORY_FILE_BYTES)
    except RefusedFileError as exc:
        raise unreadable_error(path, store, str(exc)) from exc
    except OSError as exc:
        raise unreadable_error(path, store, exc.strerror or str(exc)) from exc
    if raw is None:
        return None
    try:
        return json_limits.loads(raw)
    except ValueError as exc:
        raise unreadable_error(path, store, f"not valid JSON ({exc})") from exc


def unreadable_error(path: Path, store: str, reason: str) -> RunFailedError:
    """The error for a store file devall cannot use."""
    return RunFailedError(
        f"memory store '{store}': cannot read {path}: {reason}",
        details=["move the file away to start this store afresh"],
    )


def update_memory_file(path: Path, store: str, merge: Callable[[Any | None], Any]) -> None:
    """Replace a store's file with `merge(what it holds now)`, under the store's lock.

    `merge` gets the file's JSON as it is at this moment (None: there is none), so what other
    runs wrote since this one loaded it is kept. A file that cannot be read now is refused as
    at loading, and not written.
    """
    with _locked(path, store):
        write_memory_file(path, merge(read_memory_file(path, store)))


@contextlib.contextmanager
def _locked(path: Path, store: str) -> Iterator[None]:
    """Hold the exclusive lock of the file at `path` (an flock on `.<name>.lock` beside it)."""
    lock = path.with_name(f".{path.name}.lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, _LOCK_FLAGS | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise _lock_error(store, path, f"cannot open {lock}: {exc.strerror or exc}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _lock_error(store, path, f"{lock} is not a regular file")
        _acquire(fd, store, path)
        yield
    finally:
        os.close(fd)  # releases the lock


def _acquire(fd: int, store: str, path: Path) -> None:
    # Polled rather than blocking: a run holds the lock only while it writes, and a blocking
    # wait has no end, during which devall would not hear Ctrl-C.
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                reason = f"another process has held its lock for {LOCK_WAIT_S:g} s"
                raise _lock_error(store, path, reason) from None
            time.sleep(_LOCK_POLL_S)
        except OSError as exc:
            raise _lock_error(store, path, exc.strerror or str(exc)) from exc


def _lock_error(store: str, path: Path, reason: str) -> RunFailedError:
    return RunFailedError(f"memory store '{store}': cannot write {path}: {reason}")


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
