"""Opening the files devall writes in a run directory without ever following a symlink.

The run directory (`--out DIR`) is the user's choice and is taken as given. Below it, devall owns
the names it writes (`events.jsonl`, `result.json`, `servers/<id>.log`): a symlink found in the
place of such a file is removed and a regular file created instead, so the link's target is
never opened. A symlink in the place of a folder devall writes into (`servers/`) is refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import IO

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_run_file(path: Path, *, append: bool = False, own_folder: bool = False) -> IO[str]:
    """Open `path` for writing text (truncated, or appended to), never through a symlink.

    `own_folder`: the parent folder is devall's too (e.g. `servers/`): it is created if
    missing and refused (OSError ELOOP/ENOTDIR) when it is a symlink. Raises OSError.
    """
    path = Path(path)
    dir_fd = _open_folder(path.parent, own_folder)
    try:
        mode = os.O_APPEND if append else os.O_TRUNC
        # Non-blocking, so a FIFO in the file's place is refused instead of hanging the run.
        flags = os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK | mode
        try:
            fd = os.open(path.name, flags, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO nobody reads
                raise OSError(exc.errno, f"{path} is not a regular file") from None
            if exc.errno != errno.ELOOP:
                raise
            # A symlink where our file belongs: drop the link (never its target), start afresh.
            os.unlink(path.name, dir_fd=dir_fd)
            fd = os.open(path.name, flags | os.O_EXCL, 0o644, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file")
        os.set_blocking(fd, True)
        # Line-buffered: a crash or Ctrl-C leaves every line written so far on disk.
        return os.fdopen(fd, "a" if append else "w", encoding="utf-8", buffering=1)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def move_run_file(path: Path, new_name: str) -> None:
    """Rename `path` to `new_name` in its own folder of the run (replacing what had that name)."""
    dir_fd = _open_folder(Path(path).parent, True)
    try:
        os.replace(Path(path).name, new_name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _open_folder(folder: Path, own: bool) -> int:
    """A descriptor of `folder`, created if missing; with `own`, refusing a symlink."""
    folder.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDONLY | _DIRECTORY | _CLOEXEC | (_NOFOLLOW if own else 0)
    try:
        return os.open(folder, flags)
    except OSError as exc:
        if own and exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OSError(exc.errno, f"{folder} is a symlink, not a folder of the run") from None
        raise
