"""YAML text → a node tree composed under limits → plain data with the position of every value.

ruamel.yaml composes an alias as a reference to the anchored node, so a few lines can stand for
billions of values ("billion laughs"), and its composer recurses once per nesting level. The
guarded composer counts, while it composes, how many values the document stands for once every
alias is expanded and how deep collections nest, and stops at the first node beyond a limit:
nothing is expanded before it has been counted. Our own walk then turns the nodes into plain
dicts, lists and scalars, taking each position from the node's mark, so every problem it finds
(duplicate keys, bad merges, values a tag cannot build) is located too. A large file is
composed by libyaml instead when it reads alike (yaml_libyaml.py): the same nodes, much sooner.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.composer import Composer
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from ruamel.yaml.nodes import MappingNode, Node, SequenceNode
from ruamel.yaml.scanner import RoundTripScanner

from devall_cli.config.yaml_source import KeyPath, Position, key_text
from devall_cli.redaction import preview
from devall_cli.text import clean_text

MAX_NESTING = 100  # collections inside collections (and `<<` merge chains); workflows use ~10
MAX_VALUES = 50_000  # values once aliases are expanded; real workflows hold a few thousand
MAX_INT_BITS = 1024  # no setting needs more; Python will not even print a 4300-digit integer
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


class YamlLimitError(MarkedYAMLError):
    """The document goes beyond a limit of the guarded composer; `problem` is the message."""


class _MergeChainTooLong(Exception):
    """A mapping merges (`<<`) a mapping that merges another, beyond the nesting limit."""


def compose(text: str) -> tuple[Node | None, Any]:
    """The root node of the single document in `text` (None when empty) and a constructor.

    Raises ruamel's MarkedYAMLError (YamlLimitError for a limit) with the position of the fault.
    """
    from ruamel.yaml import YAML

    from devall_cli.config.yaml_libyaml import SlowPath, compose_libyaml

    yaml = YAML(typ="rt")
    try:
        return compose_libyaml(text, yaml.resolver), yaml.constructor
    except SlowPath:
        yaml = YAML(typ="rt")
    yaml.Scanner = GuardedScanner
    yaml.Composer = GuardedComposer
    root = yaml.compose(text)
    return root, yaml.constructor


def _too_deep(mark: Any) -> YamlLimitError:
    message = f"collections are nested more than {MAX_NESTING} levels deep"
    return YamlLimitError(problem=message, problem_mark=mark)


class GuardedScanner(RoundTripScanner):
    """ruamel's scanner, refusing flow collections (`[`, `{`) nested beyond the limit.

    In a flow collection every opening bracket may start a key, so the scanner reads up to
    1024 characters ahead and rechecks each pending bracket per token; refusing here, before
    the composer sees the nesting, keeps a line of brackets from costing seconds.
    """

    def fetch_flow_collection_start(self, token_class: Any, to_push: str) -> None:
        """Open a flow collection unless that nests too deep."""
        if self.flow_level >= MAX_NESTING:
            raise _too_deep(self.reader.get_mark())
        super().fetch_flow_collection_start(token_class, to_push)


class GuardedComposer(Composer):
    """ruamel's composer, refusing deep nesting, huge expansions and recursive aliases."""

    def __init__(self, loader: Any = None) -> None:
        super().__init__(loader)
        self.warn_double_anchors = False  # re-defining an anchor is valid YAML: the later wins
        self.nesting = 0
        self.values = 0  # values composed so far, an alias counting as all the values it names
        self.sizes: dict[int, int] = {}  # id(anchored node) → values it stands for

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Compose one node, counting it (or what an alias names) against the limits."""
        event = self.parser.peek_event()
        if isinstance(event, AliasEvent):
            self._count_alias(event)
            return super().compose_node(parent, index)
        nested = isinstance(event, (MappingStartEvent, SequenceStartEvent))
        if nested:
            self.nesting += 1
            if self.nesting > MAX_NESTING:
                raise _too_deep(event.start_mark)
        before = self.values
        node = super().compose_node(parent, index)
        if nested:
            self.nesting -= 1
        self._count(1, event, alias=None)
        if event.anchor is not None:
            self.sizes[id(node)] = self.values - before
        return node

    def _count_alias(self, event: Any) -> None:
        node = self.anchors.get(event.anchor)
        if node is None:
            return  # the base composer reports the undefined alias
        size = self.sizes.get(id(node))
        if size is None:  # the anchored collection is still being composed
            message = (
                f"alias *{event.anchor} refers to a collection that contains it "
                "(recursive structures are not allowed)"
            )
            raise YamlLimitError(problem=message, problem_mark=event.start_mark)
        self._count(size, event, alias=event.anchor)

    def _count(self, amount: int, event: Any, *, alias: str | None) -> None:
        self.values += amount
        if self.values <= MAX_VALUES:
            return
        if alias is not None:
            message = (
                f"alias *{alias} would expand the document beyond {MAX_VALUES} values "
                "(an alias bomb?); refused before expanding it"
            )
        else:
            message = f"the document holds more than {MAX_VALUES} values"
        raise YamlLimitError(problem=message, problem_mark=event.start_mark)


def position(node: Node) -> Position:
    """Where a node is written (1-based line and column)."""
    return (node.start_mark.line + 1, node.start_mark.column + 1)


class PlainBuilder:
    """Turns composed nodes into plain data, recording positions and located problems."""

    def __init__(self, constructor: Any) -> None:
        self.constructor = constructor
        self.key_positions: dict[KeyPath, Position] = {}
        self.value_positions: dict[KeyPath, Position] = {}
        self.problems: dict[tuple[Position, str], None] = {}  # ordered, without repeats
        self._chain_reported = False

    def build(self, node: Node, path: KeyPath) -> Any:
        """The plain value of `node`, found at `path`."""
        if isinstance(node, MappingNode):
            result: dict[str, Any] = {}
            for key, key_node, value_node in self._mapping_pairs(node):
                child = (*path, key)
                result[key] = value = self.build(value_node, child)
                self.key_positions[child] = position(key_node)
                # A missing value (`key:`) has no useful position of its own: point at the key.
                at = position(key_node) if value is None else position(value_node)
                self.value_positions[child] = at
            return result
        if isinstance(node, SequenceNode):
            items: list[Any] = []
            for index, item in enumerate(node.value):
                self.value_positions[(*path, index)] = position(item)
                items.append(self.build(item, (*path, index)))
            return items
        return self._scalar(node)

    def problem(self, node: Node, message: str) -> None:
        """Record a problem located at `node`."""
        self.problems[(position(node), message)] = None

    def _mapping_pairs(self, node: MappingNode) -> list[tuple[str, Node, Node]]:
        try:
            return self._pairs(node, 0)
        except _MergeChainTooLong:
            # Every later mapping that merges this one is too deep as well: say it once.
            if not self._chain_reported:
                message = f"merge keys (<<) are chained more than {MAX_NESTING} levels deep"
                self.problem(node, message)
            self._chain_reported = True
            return []

    def _pairs(self, node: MappingNode, merge_depth: int) -> list[tuple[str, Node, Node]]:
        """(key, key node, value node) of a mapping, `<<` merges applied: own keys win."""
        seen: dict[str, Node] = {}
        pairs: list[tuple[str, Node, Node]] = []
        sources: list[MappingNode] = []
        for key_node, value_node in node.value:
            if str(key_node.tag) == _MERGE_TAG:
                sources.extend(self._merge_sources(value_node))
                continue
            key = self._key(key_node)
            if key is None:
                continue
            if key in seen:
                first = position(seen[key])[0]
                self.problem(key_node, f'duplicate key "{key}" (first written at line {first})')
                continue
            seen[key] = key_node
            pairs.append((key, key_node, value_node))
        if sources and merge_depth >= MAX_NESTING:
            raise _MergeChainTooLong
        for source in sources:  # earlier sources win over later ones, as YAML specifies
            for pair in self._pairs(source, merge_depth + 1):
                if pair[0] not in seen:
                    seen[pair[0]] = pair[1]
                    pairs.append(pair)
        return pairs

    def _merge_sources(self, value: Node) -> list[MappingNode]:
        if isinstance(value, MappingNode):
            return [value]
        items = value.value if isinstance(value, SequenceNode) else [value]
        mappings = [item for item in items if isinstance(item, MappingNode)]
        if len(mappings) == len(items):
            return mappings
        self.problem(value, "a merge key (<<) takes a mapping or a list of mappings")
        return []

    def _key(self, node: Node) -> str | None:
        if isinstance(node, (MappingNode, SequenceNode)):
            self.problem(node, "a mapping key must be a plain value, not a list or a mapping")
            return None
        return key_text(self._scalar(node))

    def _scalar(self, node: Node) -> Any:
        """The value ruamel's constructor builds for a scalar node, as a plain Python value."""
        from ruamel.yaml.comments import TaggedScalar
        from ruamel.yaml.scalarbool import ScalarBoolean

        if _plain_string(node):
            # What ruamel's constructor builds for an untagged plain or quoted string (most
            # scalars of a workflow), without its per-node bookkeeping.
            return clean_text(node.value)
        try:
            value = self.constructor.construct_object(node, deep=True)
        # The one place ruamel's scalar constructors run: whatever a tag's constructor raises
        # on a value it cannot build (ValueError, KeyError, ConstructorError, …) is bad input.
        except Exception as exc:
            reason = getattr(exc, "problem", None) or (
                str(exc) if isinstance(exc, ValueError) else ""
            )
            tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
            message = f"invalid value {_shown(node.value)} for {tag}"
            self.problem(node, f"{message}: {reason}" if reason else message)
            return None
        if isinstance(value, TaggedScalar):  # custom tags are not part of the format
            return clean_text(str(value.value))
        if isinstance(value, ScalarBoolean):  # an anchored boolean (`&flag true`)
            return bool(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            if value.bit_length() > MAX_INT_BITS:
                self.problem(node, f"the number is too large (more than {MAX_INT_BITS} bits)")
                return None
            return int(value)
        if isinstance(value, float):
            return float(value)
        if isinstance(value, str):
            return clean_text(str(value))  # a "\ud800" escape builds a lone surrogate
        return value  # dates, timestamps and bytes stay as they are; type checks report them


def _plain_string(node: Any) -> bool:
    """An untagged string scalar that is not a block scalar (`|`, `>`)."""
    tag = node.ctag
    return str(tag) == _STR_TAG and not tag.handle and node.style not in ("|", ">")


def _shown(text: Any) -> str:
    return repr(preview(str(text), 40))
