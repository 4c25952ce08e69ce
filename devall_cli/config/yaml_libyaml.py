"""Compose a large YAML document with libyaml (PyYAML's C parser) into ruamel's node tree.

ruamel's pure-Python scanner and parser take about a second for a workflow of 2,000 nodes.
libyaml reads the same text in a few milliseconds; its events are composed here into the nodes
ruamel's composer would build (tags from ruamel's resolver, so scalars are typed by the same
YAML 1.2 rules; marks with the same line and column), and the rest of the loader cannot tell
the difference. This path only answers for text both parsers read alike: it gives up
(`SlowPath`) on tags, directives, tabs, the line breaks YAML 1.1 and 1.2 disagree on, several
documents, any libyaml error, anything the guarded composer would refuse (a limit, an
undefined or recursive alias), and the few constructs the two parsers read differently (found
by running both over the YAML test suite): an empty value anywhere but after a key (its mark
differs), anchor names libyaml ends early (`&a:b`), a single-pair mapping inside a flow
sequence (`[a: b]`), a block scalar with an indentation indicator, a header comment without a
space or leading blank lines holding spaces. The caller then composes with ruamel, which
builds the same nodes or reports the exact error with its location.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from devall_cli.config import yaml_tree

MIN_CHARS = 4_000  # below this ruamel is fast enough (~30 ms), and importing PyYAML costs ~15 ms
# Where libyaml (YAML 1.1) and ruamel (YAML 1.2) might read text differently: tabs, the
# 1.1-only line breaks (NEL, LS, PS) and a byte order mark inside the text.
_UNSURE = re.compile("[\t\x85\u2028\u2029\ufeff]")
# A block scalar header both parsers read alike: no indentation indicator, a comment after a space.
_BLOCK_HEADER = re.compile(r"[|>][-+]?(?: +#.*| *)")
_NAME_ENDS = frozenset(" ,]}")  # after an anchor or alias name; "" (end of line) as well
_MERGE_TAG = "tag:yaml.org,2002:merge"


class SlowPath(Exception):
    """This text is left to ruamel's parser (it may hold an error, or read differently)."""


def compose_libyaml(text: str, resolver: Any) -> Node | None:
    """The root node of the single document in `text` (None when empty), or SlowPath."""
    if len(text) < MIN_CHARS or _UNSURE.search(text):
        raise SlowPath
    try:
        from yaml import YAMLError
        from yaml._yaml import CParser
    except ImportError:  # PyYAML without its C extension: only slower
        raise SlowPath from None
    try:
        return _Composer(resolver, text).document(CParser(text))
    except (YAMLError, RecursionError, UnicodeError) as exc:
        raise SlowPath from exc


class _Composer:
    """Events → nodes, counting values and nesting as the guarded composer does."""

    def __init__(self, resolver: Any, text: str) -> None:
        self._resolve = resolver.resolve
        # The tag of a scalar depends only on its text and whether it is plain; workflows
        # repeat the same keys and values thousands of times.
        self._scalar_tags: dict[tuple[str, Any], Any] = {}
        self.text = text
        self._lines: list[str] | None = None
        self.anchors: dict[str, Node] = {}
        self.sizes: dict[int, int] = {}  # id(anchored node) → values it stands for
        self.values = 0
        # Read when used, so that the limits stay those of the guarded composer.
        self.max_values, self.max_nesting = yaml_tree.MAX_VALUES, yaml_tree.MAX_NESTING

    def document(self, parser: Any) -> Node | None:
        """The root of the stream's only document."""
        from yaml.events import DocumentStartEvent, StreamEndEvent, StreamStartEvent

        if type(parser.get_event()) is not StreamStartEvent:
            raise SlowPath
        start = parser.get_event()
        if type(start) is StreamEndEvent:
            return None
        if type(start) is not DocumentStartEvent or start.version or start.tags:
            raise SlowPath  # a %YAML or %TAG directive changes how ruamel reads the text
        root = self.collections(parser)
        if type(parser.get_event()) is not StreamEndEvent:
            raise SlowPath  # a second document: ruamel's composer reports it
        return root

    def collections(self, parser: Any) -> Node:
        """Compose the document's root, up to and including its DocumentEndEvent."""
        from yaml.events import (
            AliasEvent,
            DocumentEndEvent,
            MappingEndEvent,
            MappingStartEvent,
            ScalarEvent,
            SequenceEndEvent,
            SequenceStartEvent,
        )

        # Per open collection: its node, the values counted before it, the key awaiting a value.
        stack: list[list[Any]] = []
        get_event = parser.get_event
        root: Node | None = None
        while True:
            event = get_event()
            kind = type(event)
            if kind is ScalarEvent:
                node = self._scalar(event, stack)
            elif kind is AliasEvent:
                self._check_name(event, "*")
                node = self._alias(event.anchor)
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                opened = self._open(event, kind is MappingStartEvent, stack)
                stack.append([opened, self.values, None])
                continue
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                node, before, _ = stack.pop()
                node.end_mark = event.end_mark
                self._add(1)
                if node.anchor is not None:
                    self.sizes[id(node)] = self.values - before
            elif kind is DocumentEndEvent and root is not None:
                return root
            else:
                raise SlowPath
            if stack:
                _attach(stack[-1], node)
            else:
                root = node

    def _scalar(self, event: Any, stack: list[list[Any]]) -> Node:
        if event.tag is not None:
            raise SlowPath  # tags are rare; ruamel keeps its own view of them
        value, style, anchor = event.value, event.style or None, event.anchor
        if style is None and not value and not _after_key(stack):
            raise SlowPath
        if style == "|" or style == ">":
            self._check_block(event)
        tag = self._scalar_tags.get((value, event.implicit))
        if tag is None:
            tag = self._resolve(ScalarNode, value, event.implicit)
            self._scalar_tags[value, event.implicit] = tag
        node = ScalarNode(tag, value, event.start_mark, event.end_mark, style=style, anchor=anchor)
        self._add(1)
        if anchor is not None:
            self._check_name(event, "&")
            self.anchors[anchor] = node
            self.sizes[id(node)] = 1
        return node

    def _open(self, event: Any, mapping: bool, stack: list[list[Any]]) -> Node:
        """The node of a mapping or sequence that starts; its items follow."""
        if event.tag is not None or len(stack) >= self.max_nesting:
            raise SlowPath
        if mapping and event.flow_style and stack and _in_flow_sequence(stack):
            mark = event.start_mark
            if self._line(mark)[mark.column : mark.column + 1] != "{":
                raise SlowPath  # `[a: b]`: ruamel refuses some of these
        node_class = MappingNode if mapping else SequenceNode
        tag = self._resolve(node_class, None, event.implicit)
        node = node_class(
            tag, [], event.start_mark, None, flow_style=event.flow_style, anchor=event.anchor
        )
        if event.anchor is not None:
            self._check_name(event, "&")
            self.anchors[event.anchor] = node  # an alias inside it is recursive
        return node

    def _line(self, mark: Any) -> str:
        if self._lines is None:
            # Lines as the marks count them: `\r\n`, `\r` and `\n` end a line.
            self._lines = self.text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return self._lines[mark.line] if mark.line < len(self._lines) else ""

    def _check_name(self, event: Any, indicator: str) -> None:
        """Give up unless ruamel ends the anchor (or alias) name where libyaml did."""
        mark, name = event.start_mark, event.anchor
        written = self._line(mark)[mark.column : mark.column + len(name) + 2]
        if written == indicator + name:
            return  # the name ends the line
        if written[:1] != indicator or written[1:-1] != name or written[-1:] not in _NAME_ENDS:
            raise SlowPath

    def _check_block(self, event: Any) -> None:
        """Give up on block scalar headers and first lines the two parsers read differently."""
        mark = event.start_mark
        header = self._line(mark)[mark.column :]
        if event.anchor is not None:
            header = header[len(event.anchor) + 1 :].lstrip(" ")
        if _BLOCK_HEADER.fullmatch(header) is None:
            raise SlowPath
        first = self._line(_NextLine(mark.line + 1))
        if first and not first.strip(" "):
            raise SlowPath  # ruamel may refuse leading blank lines holding spaces

    def _alias(self, anchor: str) -> Node:
        node = self.anchors.get(anchor)
        size = None if node is None else self.sizes.get(id(node))
        if node is None or size is None:
            raise SlowPath  # undefined, or refers to a collection that contains it
        self._add(size)
        return node

    def _add(self, amount: int) -> None:
        self.values += amount
        if self.values > self.max_values:
            raise SlowPath  # ruamel's composer says where the limit is passed


class _NextLine:
    """A mark of a line's start."""

    def __init__(self, line: int) -> None:
        self.line = line


def _in_flow_sequence(stack: list[list[Any]]) -> bool:
    parent = stack[-1][0]
    return type(parent) is SequenceNode and bool(parent.flow_style)


def _after_key(stack: list[list[Any]]) -> bool:
    """Whether the next node is a mapping value (not after a merge key `<<`).

    There the mark of an empty value plays no part (an empty value is located at its key);
    elsewhere libyaml and ruamel place it differently.
    """
    if not stack or stack[-1][2] is None:
        return False
    return str(stack[-1][2].tag) != _MERGE_TAG


def _attach(frame: list[Any], node: Node) -> None:
    """Add `node` to the open collection of `frame`: an item, a key, or a key's value."""
    parent = frame[0]
    if type(parent) is SequenceNode:
        parent.value.append(node)
    elif frame[2] is None:
        frame[2] = node
    else:
        parent.value.append((frame[2], node))
        frame[2] = None
