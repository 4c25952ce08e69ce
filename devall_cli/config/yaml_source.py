"""Read a workflow file into plain Python data plus the line and column of every key and item.

ruamel.yaml's round-trip loader knows where each mapping key, mapping value and sequence item
starts; we copy those positions into a table keyed by the path of the value (a tuple such as
`("graph", "nodes", 1, "config")`) and hand the rest of the loader plain dicts, lists and scalars.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli.errors import ConfigError, ConfigIssue

KeyPath = tuple[str | int, ...]
Position = tuple[int, int]  # 1-based line and column


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
            return self.lines[line - 1].rstrip("\r\n")
        return ""

    def issue(
        self, path: KeyPath, message: str, *, severity: str = "error", at_key: bool = False
    ) -> ConfigIssue:
        """A ConfigIssue located at `path` in this file."""
        line, col = self.position(path, at_key=at_key)
        return ConfigIssue(
            message=message,
            path=format_path(path),
            file=self.file,
            line=line,
            col=col,
            severity=severity,
            source_line=self.source_line(line),
        )


def load_source(path: Path, display: str) -> SourceDocument:
    """Read and parse `path`; any problem is a ConfigError with the location when there is one."""
    raw = _read_bytes(path, display)
    text = _decode(raw, display)
    doc = SourceDocument(data=None, file=display, lines=text.splitlines(keepends=True))
    tree = _parse_yaml(text, doc)
    doc.data = _convert(tree, (), doc)
    _record_root(doc)
    if doc.data is None:
        raise ConfigError.from_issues([ConfigIssue("the workflow file is empty", file=display)])
    if not isinstance(doc.data, dict):
        issue = doc.issue((), "the top level must be a mapping with a 'graph' key")
        raise ConfigError.from_issues([issue])
    return doc


def _read_bytes(path: Path, display: str) -> bytes:
    def fail(message: str) -> ConfigError:
        return ConfigError.from_issues([ConfigIssue(message, file=display)])

    if not path.exists():
        raise fail("no such file")
    if path.is_dir():
        raise fail("is a directory, not a workflow file")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise fail(f"cannot read the file: {exc.strerror or exc}") from exc


def _decode(raw: bytes, display: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        line_end = raw.find(b"\n", exc.start)
        text_line = raw[line_start : line_end if line_end >= 0 else len(raw)]
        # The column counts characters, as the caret under the shown line needs.
        col = len(raw[line_start : exc.start].decode("utf-8", "replace")) + 1
        issue = ConfigIssue(
            f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save it as UTF-8",
            file=display,
            line=line,
            col=col,
            source_line=text_line.decode("utf-8", "replace").rstrip("\r"),
        )
        raise ConfigError.from_issues([issue]) from None


def _parse_yaml(text: str, doc: SourceDocument) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt")
    try:
        return yaml.load(text)
    except MarkedYAMLError as exc:
        raise ConfigError.from_issues([_yaml_issue(exc, doc)]) from None
    except (YAMLError, RecursionError, ValueError) as exc:
        message = f"invalid YAML: {exc}".strip()
        raise ConfigError.from_issues([ConfigIssue(message, file=doc.file)]) from None


def _yaml_issue(exc: Any, doc: SourceDocument) -> ConfigIssue:
    mark = exc.problem_mark or exc.context_mark
    problem = str(exc.problem or exc.context or "invalid YAML")
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    if "'\\t'" in problem:
        problem = "tab characters are not allowed in YAML indentation; use spaces"
    elif type(exc).__name__ == "DuplicateKeyError":
        problem = problem.split(" with value ")[0].replace("found duplicate key", "duplicate key")
        if exc.context_mark is not None:
            problem += f" (the mapping starts at line {exc.context_mark.line + 1})"
    else:
        problem = f"invalid YAML: {problem}"
        if exc.context and exc.problem:
            started = exc.context_mark
            where = f" started at line {started.line + 1}" if started is not None else ""
            problem += f" ({exc.context}{where})"
    return ConfigIssue(
        message=problem,
        file=doc.file,
        line=line,
        col=col,
        source_line=doc.source_line(line),
    )


def _convert(node: Any, path: KeyPath, doc: SourceDocument) -> Any:
    """Round-trip objects → plain Python data, recording positions on the way."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
    from ruamel.yaml.scalarbool import ScalarBoolean

    if isinstance(node, CommentedMap):
        result: dict[str, Any] = {}
        for key, value in node.items():
            child = (*path, key_text(key))
            _record(doc, child, node.lc.data.get(key), mapping=True, value=value)
            result[key_text(key)] = _convert(value, child, doc)
        return result
    if isinstance(node, CommentedSeq):
        items: list[Any] = []
        for index, value in enumerate(node):
            child = (*path, index)
            _record(doc, child, node.lc.data.get(index), mapping=False, value=value)
            items.append(_convert(value, child, doc))
        return items
    if isinstance(node, TaggedScalar):
        # Custom tags are not part of the format; keep the text so type checks can report it.
        return str(node.value)
    if isinstance(node, ScalarBoolean):  # an anchored boolean (`&flag true`)
        return bool(node)
    return _plain_scalar(node)


def _record(doc: SourceDocument, path: KeyPath, data: Any, *, mapping: bool, value: Any) -> None:
    if not data:
        return  # keys that came from a merge (`<<: *anchor`) have no position of their own
    if mapping:
        key_pos = (data[0] + 1, data[1] + 1)
        doc.key_positions[path] = key_pos
        # A missing value (`key:`) has no useful position of its own: point at the key.
        doc.value_positions[path] = key_pos if value is None else (data[2] + 1, data[3] + 1)
    else:
        doc.value_positions[path] = (data[0] + 1, data[1] + 1)


def _record_root(doc: SourceDocument) -> None:
    """The document's own position: where its first key or item is written."""
    firsts = [pos for path, pos in doc.value_positions.items() if len(path) == 1]
    firsts += [pos for path, pos in doc.key_positions.items() if len(path) == 1]
    if firsts:
        doc.value_positions[()] = min(firsts)


def _plain_scalar(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value  # dates and timestamps stay as they are; type checks report them
