"""The files devall writes in a run directory: one run at a time, never through a link.

The run directory (`--out DIR`) is the user's choice and is taken as given. Below it, devall owns
the names it writes (`events.jsonl`, `result.json`, `servers/<id>.log`, `attachments/`):
- a run holds an exclusive lock on the directory (`.lock`) from start to end, so a second run
  into the same directory is refused instead of interleaving its lines with the first;
- a file is created afresh, with mode 0600 (it may hold tool output): whatever had its name (an
  old file, a symlink, a hard link to some other file) is removed first, never written through;
- a symlink in the place of a folder devall writes into (`servers/`) is refused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

from devall_cli.errors import RunFailedError


class Named(Protocol):
    """Anything with a name (a loaded workflow)."""

    @property
    def name(self) -> str: ...


FILE_MODE = 0o600
LOCK_NAME = ".lock"
# The run directory's folder for code: python nodes' scripts, ChatDev function tools' files.
CODE_WORKSPACE = "code_workspace"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC


def new_run_id(workflow: Named | str, *, now: datetime | None = None) -> str:
    """`<graph-id or name>-YYYYmmdd-HHMMSS-<4 hex>`, safe as a directory name."""
    label = workflow if isinstance(workflow, str) else workflow.name
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-.") or "run"
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return f"{name}-{stamp}-{secrets.token_hex(2)}"


@contextlib.contextmanager
def locked_run_dir(run_dir: Path, what: str = "run") -> Iterator[Path]:
    """Hold an exclusive lock on `run_dir` (created if missing) for the block.

    Raises RunFailedError when another process holds it or the directory cannot be used;
    `what` names it in the message (`run`, `batch`).
    """
    try:
        fd = _lock(Path(run_dir))
    except BlockingIOError:
        raise RunFailedError(
            f"the {what} directory {run_dir} is in use by another devall {what};"
            " give another --out"
        ) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise RunFailedError(f"cannot use the {what} directory {run_dir}: {reason}") from None
    try:
        yield Path(run_dir)
    finally:
        os.close(fd)  # releases the lock; the file stays, so its inode is the lock for the next


def _lock(run_dir: Path) -> int:
    dir_fd = _open_folder(run_dir, False)
    try:
        # Nothing is ever written into the lock file: a planted link can only be locked.
        flags = os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC
        try:
            fd = os.open(LOCK_NAME, flags, FILE_MODE, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            os.unlink(LOCK_NAME, dir_fd=dir_fd)  # a symlink: runs never create one
            fd = os.open(LOCK_NAME, flags | os.O_EXCL, FILE_MODE, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_run_file(path: Path, *, append: bool = False, own_folder: bool = False) -> IO[str]:
    """Open `path` for writing text: created afresh, or with `append` continued.

    Only a regular file of the run with no other name is continued; anything else in its place
    is replaced by a new file. `own_folder`: the parent folder is devall's too (e.g. `servers/`):
    it is created if missing and refused (OSError ELOOP/ENOTDIR) when it is a symlink.
    A folder or a FIFO in the file's place is refused. Raises OSError.
    """
    path = Path(path)
    dir_fd = _open_folder(path.parent, own_folder)
    try:
        fd = _continue(dir_fd, path) if append else None
        if fd is None:
            fd = _create(dir_fd, path)
    finally:
        os.close(dir_fd)
    try:
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


def write_failure(path: Path, exc: BaseException) -> str:
    """`could not write PATH: reason`, for a file of the run that could not be written."""
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc)
    else:
        reason = f"{type(exc).__name__}: {exc}"
    return f"could not write {path}: {reason}"


def _continue(dir_fd: int, path: Path) -> int | None:
    """A descriptor appending to the existing file, or None when a new one must be created."""
    # Non-blocking, so a FIFO in the file's place is refused instead of hanging the run.
    flags = os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path.name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP):
            return None  # missing, or a symlink: a new file replaces it
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise OSError(exc.errno, f"{path} is not a regular file") from None
        raise
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
        return fd
    os.close(fd)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, f"{path} is not a regular file")
    return None  # another name shares the file (a planted hard link): never write through it


def _create(dir_fd: int, path: Path) -> int:
    """A new file in `path`'s place: what had its name is removed first (not followed)."""
    try:  # the common case, a fresh run directory: nothing to remove, one call
        return os.open(path.name, _CREATE, FILE_MODE, dir_fd=dir_fd)
    except FileExistsError:
        _remove(dir_fd, path)
        return os.open(path.name, _CREATE, FILE_MODE, dir_fd=dir_fd)


def _remove(dir_fd: int, path: Path) -> None:
    """Remove a file or link in `path`'s place; refuse a folder, a FIFO or a device."""
    try:
        info = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
        os.unlink(path.name, dir_fd=dir_fd)
    elif stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    else:
        raise OSError(errno.EINVAL, f"{path} is not a regular file")


def _open_folder(folder: Path, own: bool) -> int:
    """A descriptor of `folder`, created if missing; with `own`, refusing a symlink."""
    flags = os.O_RDONLY | _DIRECTORY | _CLOEXEC | (_NOFOLLOW if own else 0)
    try:
        try:  # mostly there already: a mkdir first would cost two more calls each time
            return os.open(folder, flags)
        except (FileNotFoundError, NotADirectoryError):  # missing, or what mkdir reports
            folder.mkdir(parents=True, exist_ok=True)
            return os.open(folder, flags)
    except OSError as exc:
        if own and exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OSError(exc.errno, f"{folder} is a symlink, not a folder of the run") from None
        raise
