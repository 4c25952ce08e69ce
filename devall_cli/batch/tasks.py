"""The TASKS file of `devall batch`: JSONL, CSV with a header, or plain text, one task a record.

Every bad record is reported with its line number (a ConfigError, exit 3) before anything runs.
A CSV file may be one of ChatDev's batch files: its `id`, `task`, `vars` (a JSON object) and
`attachments` columns are known whatever their case; any other column is a variable.
A task without an `id` is named by its line number; ids are unique in a file, and each gives a
run directory name that is safe and stays the same from one batch to the next (for resume).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from devall_cli import json_limits, limits
from devall_cli.errors import ConfigError, ConfigIssue, UsageError
from devall_cli.text import clean_text

TaskFormat = Literal["jsonl", "csv", "text"]
FORMATS: tuple[TaskFormat, ...] = ("jsonl", "csv", "text")
MAX_ISSUES = 100  # bad lines listed one by one; past that, one line counts the rest
_BY_SUFFIX: dict[str, TaskFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".txt": "text",
}
# Columns that are not vars: ChatDev's batch files have `id`, `task`, `attachments`, `vars`.
RESERVED_COLUMNS = frozenset({"id", "task", "vars", "attachments"})
_SAFE_DIR = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class BatchTask:
    """One task of a batch: its id, text, own placeholder values and where it was read."""

    id: str
    task: str
    vars: Mapping[str, str] = field(default_factory=dict)
    line: int = 0

    @property
    def dir_name(self) -> str:
        """The name of the task's run directory under `runs/`."""
        return task_dir_name(self.id)


def task_dir_name(task_id: str) -> str:
    """`task_id` itself when it is a safe file name, else a safe form plus a hash of the id.

    Two ids never share a directory: a safe id is its own name, any other one carries a hash.
    """
    if _SAFE_DIR.fullmatch(task_id):
        return task_id
    base = _UNSAFE.sub("_", task_id).strip("._")[:60] or "task"
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{base}~{digest}"


class _Issues:
    """Bad records of one file, collected (never just the first)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.items: list[ConfigIssue] = []

    def add(self, line: int, message: str, col: int = 0) -> None:
        self.items.append(ConfigIssue(message, file=self.name, line=line, col=col))

    def raise_if_any(self) -> None:
        if not self.items:
            return
        self.items.sort(key=lambda issue: issue.line)  # stable: a line's issues keep their order
        shown = self.items[:MAX_ISSUES]
        if len(self.items) > MAX_ISSUES:
            more = len(self.items) - MAX_ISSUES
            shown.append(ConfigIssue(f"{more} more bad lines not shown", file=self.name))
        count = len(self.items)
        headline = shown[0].headline() if count == 1 else f"{count} bad lines in {self.name}"
        raise ConfigError(headline, issues=shown)


def choose_format(name: str, text: str, given: TaskFormat | None) -> TaskFormat:
    """`given`, else by the file's suffix, else JSONL when the first record is an object."""
    if given is not None:
        return given
    found = _BY_SUFFIX.get(Path(name).suffix.lower()) if name != "-" else None
    if found is not None:
        return found
    first = next((line.strip() for line in text.split("\n") if line.strip()), "")
    return "jsonl" if first.startswith("{") else "text"


def read_tasks(source: str, fmt: TaskFormat | None = None) -> list[BatchTask]:
    """The tasks of the file `source` (`-` is standard input); ConfigError lists bad lines."""
    name = "<stdin>" if source == "-" else source
    text = _decode(_read_bytes(source), name)
    return parse_tasks(text, choose_format(source, text, fmt), name)


def parse_tasks(text: str, fmt: TaskFormat, name: str) -> list[BatchTask]:
    """Tasks from the text of a TASKS file in format `fmt`."""
    issues = _Issues(name)
    records = {"jsonl": _jsonl, "csv": _csv, "text": _text}[fmt](text, issues)
    tasks: list[BatchTask] = []
    first_line: dict[str, int] = {}
    for line, task_id, task, variables in records:
        task_id = task_id if task_id is not None else str(line)
        if task_id in first_line:
            issues.add(line, f"duplicate id {task_id!r} (first on line {first_line[task_id]})")
            continue
        first_line[task_id] = line
        if not task.strip():
            issues.add(line, "the task is empty")
            continue
        if len(task.encode("utf-8", "surrogatepass")) > limits.TASK_BYTES:
            issues.add(line, f"the task is larger than {limits.TASK_BYTES // limits.MB} MB")
            continue
        tasks.append(BatchTask(task_id, clean_text(task), variables, line))
    if not tasks and not issues.items:
        issues.add(0, "holds no task")
    issues.raise_if_any()
    return tasks


# --- reading --------------------------------------------------------------------------------


def _read_bytes(source: str) -> bytes:
    try:
        if source == "-":
            return sys.stdin.buffer.read()
        with open(source, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read TASKS {source}: {exc.strerror or exc}") from None


def _decode(raw: bytes, name: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        issue = ConfigIssue(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", file=name, line=line)
        raise ConfigError(issue.headline(), issues=[issue]) from None
    return text.removeprefix("\ufeff")


Record = tuple[int, str | None, str, dict[str, str]]  # line, id, task, vars


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Numbered lines, split at newlines only (a U+2028 inside a JSON string is no line end)."""
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.removesuffix("\r")


def _text(text: str, issues: _Issues) -> Iterator[Record]:
    for number, line in _lines(text):
        if line.strip():
            yield number, None, line, {}


def _jsonl(text: str, issues: _Issues) -> Iterator[Record]:
    for number, line in _lines(text):
        if not line.strip():
            continue
        try:
            value = json_limits.loads(line)
        except json_limits.JsonLimitError as exc:
            issues.add(number, f"the line {exc}")
            continue
        except json.JSONDecodeError as exc:
            issues.add(number, f"not a JSON object: {exc.msg}", col=exc.colno)
            continue
        if not isinstance(value, dict):
            issues.add(number, f"expected a JSON object with a 'task', got {_kind(value)}")
            continue
        record = _json_record(number, value, issues)
        if record is not None:
            yield record


def _json_record(number: int, value: dict[str, Any], issues: _Issues) -> Record | None:
    bad = len(issues.items)
    task = value.get("task")
    if "task" not in value:
        issues.add(number, "missing 'task'")
    elif not isinstance(task, str):
        issues.add(number, f"'task' must be a text, got {_kind(task)}")
    task_id = _json_id(number, value, issues)
    variables = _json_vars(number, value.get("vars"), issues)
    _no_attachments(number, value.get("attachments"), issues)
    if len(issues.items) > bad or not isinstance(task, str):
        return None
    return number, task_id, task, variables


def _json_id(number: int, value: dict[str, Any], issues: _Issues) -> str | None:
    if value.get("id") is None:
        return None
    raw = value["id"]
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        issues.add(number, f"'id' must be a text or an integer, got {_kind(raw)}")
        return None
    task_id = clean_text(str(raw))
    if not task_id.strip():
        issues.add(number, "'id' is empty")
    return task_id


def _json_vars(number: int, raw: Any, issues: _Issues) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        issues.add(number, f"'vars' must be an object of NAME: value, got {_kind(raw)}")
        return {}
    result: dict[str, str] = {}
    for name, value in raw.items():
        if not name.strip():
            issues.add(number, "'vars' has an empty name")
        elif isinstance(value, bool):
            result[name] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            result[name] = clean_text(str(value))
        else:
            issues.add(number, f"vars.{name} must be a text or a number, got {_kind(value)}")
    return result


def _csv(text: str, issues: _Issues) -> Iterator[Record]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        issues.add(reader.line_num, f"not CSV: {exc}")
        return
    columns = [_column(name) for name in header]
    if not _check_header(columns, issues):
        return
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            issues.add(start, f"not CSV: {exc}")
            return
        line, start = start, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(columns):
            issues.add(line, f"{len(row)} fields, but the header has {len(columns)}")
            continue
        record = _csv_record(line, dict(zip(columns, row, strict=True)), issues)
        if record is not None:
            yield record


def _column(name: str) -> str:
    """A header name; ChatDev's own columns are known whatever their case (`Task`, `ID`)."""
    name = name.strip()
    return name.lower() if name.lower() in RESERVED_COLUMNS else name


def _csv_record(line: int, cells: dict[str, str], issues: _Issues) -> Record | None:
    bad = len(issues.items)
    task_id = cells.pop("id", "").strip() or None
    task = cells.pop("task").strip()
    raw_vars = cells.pop("vars", "").strip()
    _no_attachments(line, _maybe_json(cells.pop("attachments", "").strip()), issues)
    variables = {name: value for name, value in cells.items() if value != ""}
    if raw_vars:
        try:
            parsed = json_limits.loads(raw_vars)
        except json_limits.JsonLimitError as exc:
            issues.add(line, f"the vars cell {exc}")
        except json.JSONDecodeError as exc:
            issues.add(line, f"the vars cell is not a JSON object: {exc.msg}")
        else:
            variables.update(_json_vars(line, parsed, issues))
    if len(issues.items) > bad:
        return None
    return line, task_id, task, variables


def _maybe_json(text: str) -> Any:
    try:
        return json_limits.loads(text) if text else text
    except ValueError:  # not JSON, or JSON beyond the limits: the text as it is
        return text


def _no_attachments(line: int, value: Any, issues: _Issues) -> None:
    """ChatDev's batch files may attach files to a task; devall takes text tasks only."""
    if value not in (None, "", []):
        issues.add(line, "attachments are not supported: devall batch takes text tasks only")


def _check_header(columns: list[str], issues: _Issues) -> bool:
    ok = True
    if "task" not in columns:
        issues.add(1, "the header has no 'task' column")
        ok = False
    seen: set[str] = set()
    for name in columns:
        if not name:
            issues.add(1, "the header has an empty column name")
            ok = False
        elif name in seen:
            issues.add(1, f"the header names column {name!r} twice")
            ok = False
        seen.add(name)
    return ok


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
