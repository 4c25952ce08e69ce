"""Large values of a run stored once, in `values/`, and referred to from the records.

A tool result of a megabyte shows up in many records of a run: the `tool.result` event, the
`node.finished` and `run.finished` events, and result.json's `output`, its node's `output` and
its visit's `outputs`. Each text longer than `LARGE_CHARS` is written once, to
`values/<sha256>.txt` (UTF-8, named by the hash of its text, so the same text is one file
however often it appears), and each record holds a small reference in its place:

    {"$ref": "values/<sha256>.txt", "chars": 1048576, "sha256": "<sha256>"}

`$ref` is relative to the folder of the file holding the reference (the run directory; a
batch's results.jsonl refers to `runs/<task>/values/...`). The value file is complete before
any record refers to it. Shorter texts stay inline, so small runs read as they always did.
`resolve()` gives back the value with every reference replaced by its text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from devall_cli.run_files import move_run_file, open_run_file
from devall_cli.text import clean_text

LARGE_CHARS = 64 * 1024  # texts longer than this are stored in values/
VALUES_DIR = "values"
REF_KEY = "$ref"
MISSING = "[value missing: {ref}]"  # what a reference whose file is gone resolves to


def is_ref(value: Any) -> bool:
    """Whether `value` is a reference to a stored value."""
    return isinstance(value, Mapping) and isinstance(value.get(REF_KEY), str) and "chars" in value


class ValueStore:
    """Writes the large texts of one run directory into `values/`, each once."""

    def __init__(self, run_dir: Path, *, prefix: str = "") -> None:
        self.run_dir = Path(run_dir)
        self.prefix = prefix  # put before `values/` in a reference (results.jsonl: runs/<task>/)
        self._written: set[str] = set()

    def stored(self, value: Any) -> Any:
        """`value` with every text longer than LARGE_CHARS replaced by its reference (the very
        same object when it holds none: most records are not copied)."""
        if isinstance(value, str):
            return self._ref(value) if len(value) > LARGE_CHARS else value
        if isinstance(value, dict):
            items = {key: self.stored(item) for key, item in value.items()}
            same = all(items[key] is item for key, item in value.items())
            return value if same else items
        if isinstance(value, list | tuple):
            listed = [self.stored(item) for item in value]
            return value if all(a is b for a, b in zip(listed, value, strict=True)) else listed
        return value

    def _ref(self, text: str) -> dict[str, Any]:
        # As the records' lines are: a lone surrogate must not lose the value.
        text = clean_text(text)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        name = f"{digest}.txt"
        if digest not in self._written:
            self._write(name, text)
            self._written.add(digest)
        return {REF_KEY: f"{self.prefix}{VALUES_DIR}/{name}", "chars": len(text), "sha256": digest}

    def _write(self, name: str, text: str) -> None:
        """Complete under a temporary name, then renamed: a reference never finds half a file."""
        path = self.run_dir / VALUES_DIR / name
        if path.is_file() and not path.is_symlink():
            return  # the same text, written by another record of the run
        temporary = path.with_name(f".{name}.tmp")
        with open_run_file(temporary, own_folder=True) as handle:
            handle.write(text)
        move_run_file(temporary, name)


def resolve(value: Any, base: Path) -> Any:
    """`value` with every reference replaced by the text it refers to (relative to `base`)."""
    if is_ref(value):
        return read_value(value, base)
    if isinstance(value, dict):
        return {key: resolve(item, base) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, base) for item in value]
    return value


def read_value(ref: Mapping[str, Any], base: Path) -> str:
    """The text a reference refers to; MISSING when its file is gone or is not one of ours."""
    target = str(ref[REF_KEY])
    parts = Path(target).parts
    if Path(target).is_absolute() or ".." in parts or VALUES_DIR not in parts:
        return MISSING.format(ref=target)
    try:
        return (base / target).read_bytes().decode("utf-8", "replace")
    except OSError:
        return MISSING.format(ref=target)


def resolve_line(line: str, value: Any, base: Path) -> Any:
    """`value` (parsed from `line`) resolved, looked at only when the line holds a reference."""
    return resolve(value, base) if REF_KEY in line else value
