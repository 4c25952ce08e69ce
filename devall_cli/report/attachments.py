"""Attachments in a report: images and audio embedded as data URIs, other files linked.

Only files inside the run directory are read (a recorded path that leads elsewhere, through
`..` or a link, is shown as refused); what is read is checked against the recorded sha256.
Embedding stops at a size per file and for the whole report; past it, files are linked by a
path relative to the report, which a browser opens only when it is clicked.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from devall_cli import limits

EMBED_FILE = 5 * limits.MB  # at most this much of one file is embedded
EMBED_TOTAL = 25 * limits.MB  # and this much in all
IMAGE_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/svg+xml"}
)
AUDIO_TYPES = frozenset(
    {
        "audio/wav",
        "audio/x-wav",
        "audio/wave",
        "audio/mpeg",
        "audio/mp3",
        "audio/ogg",
        "audio/webm",
        "audio/flac",
        "audio/aac",
        "audio/mp4",
    }
)


@dataclass(frozen=True)
class AttachmentView:
    """How an attachment appears: embedded (`data_uri`), linked (`href`), or a note why not."""

    path: str
    mime_type: str
    size: int | None
    sha256: str
    kind: str  # image | audio | file
    data_uri: str | None = None
    href: str | None = None
    note: str = ""


class Attachments:
    """Reads and embeds the attachments of one run directory, each once."""

    def __init__(self, run_dir: Path, report_dir: Path) -> None:
        self.run_dir = run_dir
        self.root = run_dir.resolve()
        self.report_dir = report_dir
        self.embedded = 0
        self._seen: dict[str, AttachmentView] = {}

    def view(self, record: dict[str, Any]) -> AttachmentView:
        """The view of an attachment block (or result.json entry): path, mime_type, size, sha256."""
        path = str(record.get("path") or "")
        if path not in self._seen:
            self._seen[path] = self._make(path, record)
        return self._seen[path]

    def all(self) -> list[AttachmentView]:
        """Every attachment viewed so far, in order."""
        return list(self._seen.values())

    def _make(self, path: str, record: dict[str, Any]) -> AttachmentView:
        mime = str(record.get("mime_type") or "application/octet-stream").lower()
        size = record.get("size") if isinstance(record.get("size"), int) else None
        sha = str(record.get("sha256") or "")
        kind = "image" if mime in IMAGE_TYPES else "audio" if mime in AUDIO_TYPES else "file"
        base = AttachmentView(path, mime, size, sha, kind)
        file = self._inside(path)
        if file is None:
            return _with(base, note="not read: the path leads outside the run directory")
        if not file.is_file():
            return _with(base, note="missing from the run directory")
        href = self._href(path)
        actual = file.stat().st_size
        if kind == "file" or actual > EMBED_FILE or self.embedded + actual > EMBED_TOTAL:
            note = "" if kind == "file" else "too large to embed; open the file"
            return _with(base, href=href, note=note)
        data = file.read_bytes()
        if sha and hashlib.sha256(data).hexdigest() != sha:
            return _with(base, href=href, note="changed since the run: sha256 differs")
        self.embedded += len(data)
        uri = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        return _with(base, data_uri=uri, href=href)

    def _inside(self, path: str) -> Path | None:
        """The file a recorded path names, if it is inside the run directory."""
        relative = PurePosixPath(path)
        if not path or relative.is_absolute() or ".." in relative.parts:
            return None
        file = self.run_dir / relative
        try:
            real = file.resolve()
        except (OSError, RuntimeError):
            return None
        return file if real.is_relative_to(self.root) and real != self.root else None

    def _href(self, path: str) -> str:
        target = os.path.relpath(self.run_dir / PurePosixPath(path), self.report_dir)
        return quote(Path(target).as_posix())


def _with(base: AttachmentView, **changes: Any) -> AttachmentView:
    from dataclasses import replace

    return replace(base, **changes)
