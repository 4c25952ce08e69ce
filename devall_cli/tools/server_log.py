"""`servers/<id>.log`: a local server's log lines, in a file of bounded size.

The file grows to `limits.SERVER_LOG_BYTES`; then it moves to `<id>.log.1` (replacing an older
one) and a new file starts with a line saying so. At most twice the limit is kept on disk, the
latest lines always among it. A line longer than the room left is cut with a marker.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from devall_cli import limits
from devall_cli.run_files import move_run_file, open_run_file

OLDER_SUFFIX = ".1"


class ServerLogFile:
    """One server's log file of the run; every method may raise OSError."""

    def __init__(self, path: Path, *, append: bool = False) -> None:
        self.path = Path(path)
        # `servers/` and the file belong to the run: never written through a link.
        self._file: IO[str] = open_run_file(self.path, append=append, own_folder=True)
        self._size = os.fstat(self._file.fileno()).st_size

    def write(self, line: str) -> None:
        """Append one line (moving the file aside first when it is full)."""
        limit = limits.SERVER_LOG_BYTES
        data = line + "\n"
        size = _bytes(data)
        if self._size > 0 and self._size + size > limit:
            self._start_anew(limit)
        room = limit - self._size
        if size > room:
            data = cut_line(line, room - 1) + "\n"
            size = _bytes(data)
        self._file.write(data)
        self._file.flush()
        self._size += size

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._file.close()

    def _start_anew(self, limit: int) -> None:
        older = self.path.name + OLDER_SUFFIX
        self._file.close()
        move_run_file(self.path, older)
        self._file = open_run_file(self.path, own_folder=True)
        self._size = 0
        self.write(f"[devall: the log reached {limit} bytes; the lines before are in {older}]")


def cut_line(line: str, room: int) -> str:
    """`line` cut to at most `room` bytes of UTF-8, marker included (the marker at least)."""
    if _bytes(line) <= room:
        return line
    # The longest marker this line can get, so that the real one fits in what is left.
    budget = max(room - _bytes(limits.cut_marker(len(line), len(line))), 0)
    head = line.encode("utf-8", errors="replace")[:budget].decode("utf-8", errors="ignore")
    return head + limits.cut_marker(len(head), len(line))


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", errors="replace"))
