"""The run's AttachmentStore: binary tool results saved under `<run dir>/attachments/`.

File names come from tool output (tool names, MIME types), so they are sanitized and every file
is created with O_CREAT|O_EXCL|O_NOFOLLOW relative to the opened folder: nothing can be written
outside it, through a symlink, or over an existing file. Files are the owner's alone (0600): a
tool's output may be private.
"""

from __future__ import annotations

import errno
import hashlib
import mimetypes
import os
import re
import threading
from pathlib import Path

from devall_cli.run_files import FILE_MODE
from devall_cli.tools.base import AttachmentBlock

ATTACHMENTS_DIR = "attachments"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SAFE_EXT = re.compile(r"\.[A-Za-z0-9]{1,12}")
_MAX_PART = 64
_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/jpg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/wave": ".wav",
    "audio/mpeg": ".mp3",
    "audio/mp3": ".mp3",
    "audio/ogg": ".ogg",
    "video/mp4": ".mp4",
    "application/json": ".json",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "application/octet-stream": ".bin",
}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def safe_part(text: str, fallback: str) -> str:
    """`text` reduced to `[A-Za-z0-9._-]`, without leading dots, at most 64 characters."""
    cleaned = _UNSAFE.sub("_", text).lstrip(".")[:_MAX_PART]
    return cleaned or fallback


# Extensions a browser runs or renders as a page (scripts, HTML, SVG, XML with style sheets):
# a server's bytes never get one, or opening the file from the report would run its script
# as a file:// page, outside the report's content policy. They are saved as text instead.
_ACTIVE = frozenset(
    {".htm", ".html", ".xhtml", ".xht", ".shtml", ".svg", ".svgz", ".xml", ".xsl", ".xslt",
     ".js", ".mjs", ".es", ".hta", ".swf", ".php", ".jsp", ".asp", ".mht", ".mhtml"}
)  # fmt: skip
_ACTIVE_MIME = re.compile(r"html|xml|svg|script|x-shockwave")


def extension_for(mime_type: str) -> str:
    """A safe file extension for a MIME type; `.bin` when unknown, `.txt` for active content."""
    mime = mime_type.split(";", 1)[0].strip().lower()
    if _ACTIVE_MIME.search(mime):
        return ".txt"
    ext = _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime) or ".bin"
    if not _SAFE_EXT.fullmatch(ext):
        return ".bin"
    return ".txt" if ext.lower() in _ACTIVE else ext


def attachment_name(tool_name: str, kind: str, mime_type: str, n: int) -> str:
    """`<tool>_<kind>_<n><ext>`, sanitized."""
    tool = safe_part(tool_name, "tool")
    return f"{tool}_{safe_part(kind, 'file')}_{n}{extension_for(mime_type)}"


class AttachmentStore:
    """Saves binary tool results of one run; thread-safe."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.directory = self.run_dir / ATTACHMENTS_DIR
        self._lock = threading.Lock()
        self._counters: dict[tuple[str, str], int] = {}
        self._saved: list[AttachmentBlock] = []

    def saved(self) -> tuple[AttachmentBlock, ...]:
        """Every attachment saved so far, in order (for result.json)."""
        with self._lock:
            return tuple(self._saved)

    def save(
        self,
        data: bytes,
        *,
        tool_name: str,
        kind: str,
        mime_type: str,
        uri: str | None = None,
        source: str = "mcp_tool",
    ) -> AttachmentBlock:
        """Write `data` to a new file and describe it; raises OSError when it cannot."""
        with self._lock:
            name = self._write_new(bytes(data), tool_name, kind, mime_type)
            block = AttachmentBlock(
                path=f"{ATTACHMENTS_DIR}/{name}",
                mime_type=mime_type,
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
                kind=kind,
                tool_name=tool_name,
                uri=uri,
                source=source,
            )
            self._saved.append(block)
            return block

    def _open_directory(self) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            return os.open(self.directory, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise OSError(exc.errno, f"{self.directory} is not a plain folder") from None
            raise

    def _write_new(self, data: bytes, tool_name: str, kind: str, mime_type: str) -> str:
        """Create the next free `<tool>_<kind>_<n><ext>` and write `data` into it."""
        key = (safe_part(tool_name, "tool"), safe_part(kind, "file"))
        dir_fd = self._open_directory()
        try:
            n = self._counters.get(key, 0)
            while True:
                n += 1
                name = attachment_name(tool_name, kind, mime_type, n)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY
                try:
                    fd = os.open(name, flags, FILE_MODE, dir_fd=dir_fd)
                except FileExistsError:
                    continue  # never overwrite: a file (or symlink) of that name is already there
                self._counters[key] = n
                break
            try:
                _write_all(fd, data)
            except OSError:
                os.unlink(name, dir_fd=dir_fd)
                raise
            finally:
                os.close(fd)
            return name
        finally:
            os.close(dir_fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
