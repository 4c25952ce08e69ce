"""Read a workflow file into plain Python data plus the line and column of every key and item.

The file is untrusted input: it is refused, with a located message, when it is too large, binary,
not UTF-8, holds control characters or absurdly long lines, or (see `yaml_tree`) nests too deep
or expands through aliases beyond a limit. Positions go into a table keyed by the path of the
value (a tuple such as `("graph", "nodes", 1, "config")`); the rest of the loader sees plain
dicts, lists and scalars.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli import limits
from devall_cli.errors import ConfigError, ConfigIssue
from devall_cli.text import visible

KeyPath = tuple[str | int, ...]
Position = tuple[int, int]  # 1-based line and column

MAX_FILE_BYTES = limits.WORKFLOW_FILE_BYTES
MAX_LINE_CHARS = 100_000  # longer lines are machine output, and slow the YAML scanner down
_SHOWN_LINE_CHARS = 200  # source lines shown under a message are cut to about this length
# What YAML refuses as text (YAML 1.2, 5.1 "Character Set"), refused up front: the complement of
# what it accepts, spelt out (the negated class over all of Unicode takes ~30 ms to compile).
_NOT_YAML_TEXT = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]"
)
# Control characters are never echoed to a terminal: a file could carry escape sequences.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def format_path(path: Iterable[str | int]) -> str:
    """`("graph", "nodes", 1, "id")` → `graph.nodes[1].id`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def key_text(key: Any) -> str:
    """A mapping key as text (YAML allows non-string keys; paths and lookups use text)."""
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


@dataclass
class SourceDocument:
    """A parsed workflow file: plain data, positions, and the source lines for error reports."""

    data: Any
    file: str  # the path as the user gave it
    lines: list[str] = field(default_factory=list)
    key_positions: dict[KeyPath, Position] = field(default_factory=dict)
    value_positions: dict[KeyPath, Position] = field(default_factory=dict)

    def position(self, path: KeyPath, *, at_key: bool = False) -> Position:
        """Where `path` is written; falls back to the nearest ancestor that has a position."""
        if at_key and path in self.key_positions:
            return self.key_positions[path]
        if path in self.value_positions:
            return self.value_positions[path]
        if path in self.key_positions:
            return self.key_positions[path]
        for end in range(len(path) - 1, -1, -1):
            parent = path[:end]
            if parent in self.key_positions:
                return self.key_positions[parent]
            if parent in self.value_positions:
                return self.value_positions[parent]
        return (1, 1) if self.lines else (0, 0)

    def source_line(self, line: int) -> str:
        """The text of a 1-based line, without its line break ('' when out of range)."""
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return ""

    def issue(
        self, path: KeyPath, message: str, *, severity: str = "error", at_key: bool = False
    ) -> ConfigIssue:
        """A ConfigIssue located at `path` in this file."""
        line, col = self.position(path, at_key=at_key)
        return self.issue_at(line, col, message, path=format_path(path), severity=severity)

    def issue_at(
        self, line: int, col: int, message: str, *, path: str = "", severity: str = "error"
    ) -> ConfigIssue:
        """A ConfigIssue at a line and column; file content in it is made safe to print."""
        return ConfigIssue(
            message=escape_controls(message),
            path=escape_controls(path),
            file=self.file,
            line=line,
            col=col,
            severity=severity,
            source_line=shown_line(self.source_line(line), col),
        )


def escape_controls(text: str) -> str:
    """`text` with control characters written as `\\x1b` escapes (the console's rule)."""
    return visible(text, multiline=True)


def shown_line(text: str, col: int) -> str:
    """A source line to show under a message: control characters replaced.

    Long lines are cut by `cut_line` once secrets are masked, so no secret is cut in half.
    """
    return _CONTROL.sub("\ufffd", text)


def cut_line(text: str, col: int) -> str:
    """A long source line cut to about _SHOWN_LINE_CHARS, or '' if the caret would fall off."""
    if len(text) <= _SHOWN_LINE_CHARS:
        return text
    if col <= _SHOWN_LINE_CHARS:
        return text[:_SHOWN_LINE_CHARS] + " ..."
    return ""  # the caret could not point into a cut line; the headline still says line:col


def load_source(path: Path, display: str) -> SourceDocument:
    """Read and parse `path`; any problem is a ConfigError with the location when there is one."""
    doc = parse_source(path, display)
    if doc.data is None:
        raise ConfigError.from_issues([ConfigIssue("the workflow file is empty", file=display)])
    if not isinstance(doc.data, dict):
        issue = doc.issue((), "the top level must be a mapping with a 'graph' key")
        raise ConfigError.from_issues([issue])
    return doc


def parse_source(
    path: Path, display: str, *, what: str = "workflow file", max_bytes: int | None = None
) -> SourceDocument:
    """Read and parse any YAML (or JSON) file devall is given; `data` is None when it is empty.

    `what` names the file in messages ("workflow file"); `max_bytes` defaults to the limit on
    workflow files.
    """
    raw = _read_bytes(path, display, what, MAX_FILE_BYTES if max_bytes is None else max_bytes)
    nul = raw.find(b"\0")
    if nul >= 0:
        message = f"the file holds binary data (a NUL byte at byte offset {nul}), not YAML text"
        raise ConfigError.from_issues([_byte_issue(raw, nul, message, display)])
    text = _decode(raw, display)
    doc = SourceDocument(data=None, file=display, lines=_lines(text).split("\n"))
    _check_text(text, doc, bom=len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0)
    doc.data = _parse_yaml(text, doc)
    return doc


def _read_bytes(path: Path, display: str, what: str, max_bytes: int) -> bytes:
    def fail(message: str) -> ConfigError:
        return ConfigError.from_issues([ConfigIssue(message, file=display)])

    limit = f"{what}s may hold at most {max_bytes // limits.MB} MB ({max_bytes} bytes)"
    try:
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise fail(f"is a directory, not a {what}")
            if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
                raise fail(f"the file is too large: {info.st_size} bytes; {limit}")
            # Pipes and devices tell no size: read one byte past the limit to notice.
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise fail("no such file") from None
    except IsADirectoryError:
        raise fail(f"is a directory, not a {what}") from None
    except OSError as exc:
        raise fail(f"cannot read the file: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise fail(f"the file is too large: more than {max_bytes} bytes; {limit}")
    return raw


def _decode(raw: bytes, display: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        message = (
            f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte offset "
            f"{exc.start}); save it as UTF-8"
        )
        raise ConfigError.from_issues([_byte_issue(raw, exc.start, message, display)]) from None


def _byte_issue(raw: bytes, offset: int, message: str, display: str) -> ConfigIssue:
    """An issue at a byte offset of a file that could not be read as text."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    line_end = raw.find(b"\n", offset)
    text_line = raw[line_start : line_end if line_end >= 0 else len(raw)]
    # The column counts characters, as the caret under the shown line needs.
    col = len(raw[line_start:offset].decode("utf-8", "replace")) + 1
    return ConfigIssue(
        message,
        file=display,
        line=raw.count(b"\n", 0, offset) + 1,
        col=col,
        source_line=shown_line(text_line.decode("utf-8", "replace").rstrip("\r"), col),
    )


def _check_text(text: str, doc: SourceDocument, *, bom: int) -> None:
    """Refuse characters YAML does not allow, and lines too long to be written by hand."""
    found = _NOT_YAML_TEXT.search(text)
    if found is not None:
        offset = len(text[: found.start()].encode("utf-8")) + bom
        line, col = _text_position(text, found.start())
        message = (
            f"the file contains the control character U+{ord(found.group()):04X} at byte "
            f"offset {offset}; YAML text may not contain control characters"
        )
        raise ConfigError.from_issues([doc.issue_at(line, col, message)])
    if max((len(line) for line in doc.lines), default=0) <= MAX_LINE_CHARS:
        return
    for number, text_line in enumerate(doc.lines, start=1):
        length = len(text_line)
        if length > MAX_LINE_CHARS:
            message = (
                f"line {number} is {length} characters long; lines over {MAX_LINE_CHARS} "
                "characters are refused (write long text as a `|` block over several lines)"
            )
            raise ConfigError.from_issues([doc.issue_at(number, MAX_LINE_CHARS + 1, message)])


def _lines(text: str) -> str:
    """`text` with every line break written `\\n`: YAML marks count `\\r\\n`, `\\r` and `\\n`."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _text_position(text: str, index: int) -> Position:
    """Line and column of `text[index]`, counted as the YAML parser counts them."""
    before = _lines(text[:index])
    return (before.count("\n") + 1, len(before) - before.rfind("\n"))


def _parse_yaml(text: str, doc: SourceDocument) -> Any:
    """Plain data of the document (None when empty); positions go into `doc`."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    from devall_cli.config.yaml_tree import PlainBuilder, compose, position

    try:
        root, constructor = compose(text)
    except MarkedYAMLError as exc:
        raise ConfigError.from_issues([_yaml_issue(exc, doc)]) from None
    except (YAMLError, RecursionError) as exc:
        # Not expected once the text and nesting checks passed; no parser failure may escape.
        message = f"invalid YAML: {exc}".strip()
        raise ConfigError.from_issues([ConfigIssue(message, file=doc.file)]) from None
    if root is None:
        return None
    builder = PlainBuilder(constructor)
    data = builder.build(root, ())
    if builder.problems:
        issues = [doc.issue_at(line, col, message) for (line, col), message in builder.problems]
        raise ConfigError.from_issues(issues)
    doc.key_positions = builder.key_positions
    doc.value_positions = builder.value_positions
    doc.value_positions[()] = position(root)
    return data


def _yaml_issue(exc: Any, doc: SourceDocument) -> ConfigIssue:
    from devall_cli.config.yaml_tree import YamlLimitError

    mark = exc.problem_mark or exc.context_mark
    problem = str(exc.problem or exc.context or "invalid YAML")
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    if isinstance(exc, YamlLimitError):
        pass  # our own message says it all
    elif "'\\t'" in problem:
        problem = "tab characters are not allowed in YAML indentation; use spaces"
    else:
        problem = f"invalid YAML: {problem}"
        if exc.context and exc.problem and not str(exc.context).startswith("while"):
            problem = f"invalid YAML: {exc.context}, {exc.problem}"
        elif exc.context and exc.problem:
            started = exc.context_mark
            where = f" started at line {started.line + 1}" if started is not None else ""
            problem += f" ({exc.context}{where})"
    return doc.issue_at(line, col, problem)
