"""Whether a path named in a workflow is a directory or a regular file, never raising.

`Path.is_dir()` raises on some names it cannot look up (a component longer than the file system
allows, ENAMETOOLONG); a workflow's paths are input, so such a name simply is not there.
"""

from __future__ import annotations

from pathlib import Path


def is_dir(path: Path) -> bool:
    """Whether `path` is a directory; False when it cannot be looked up at all."""
    try:
        return path.is_dir()
    except OSError:
        return False


def is_file(path: Path) -> bool:
    """Whether `path` is a regular file; False when it cannot be looked up at all."""
    try:
        return path.is_file()
    except OSError:
        return False
