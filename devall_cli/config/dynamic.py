"""An edge's `dynamic` block: the target runs once per part of the payload (`map`), or reduces
the parts in groups until one answer is left (`tree`), as ChatDev's dynamic edges do.

```yaml
dynamic:
  type: map                      # map | tree
  split: {type: regex, config: {pattern: "(?m)^- (.+)$", group: 1}}
  config: {max_parallel: 4}      # tree: also group_size (default 3, at least 2)
```
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from devall_cli.config.json_shapes import Schema, keys_object, typed_block
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    check_regex,
    get_mapping,
    opt_bool,
    opt_int,
    opt_str,
    regex_group,
)
from devall_cli.config.yaml_source import KeyPath, format_path
from devall_cli.text import suggest

if TYPE_CHECKING:
    from devall_cli.config.model import EdgeConfig

DYNAMIC_TYPES = ("map", "tree")
SPLIT_TYPES = ("message", "regex", "json_path")
NO_MATCH = ("pass", "empty")

_DYNAMIC_KEYS = KeySpec(known=frozenset({"type", "split", "config"}))
_SPLIT_KEYS = KeySpec(known=frozenset({"type", "config"}))
_REGEX_KEYS = KeySpec(
    known=frozenset({"pattern", "group", "case_sensitive", "multiline", "dotall", "on_no_match"})
)
_JSON_PATH_KEYS = KeySpec(known=frozenset({"json_path"}))
_MODE_KEYS = {
    "map": KeySpec(
        known=frozenset({"max_parallel"}),
        noted={"group_size": "group_size applies to tree edges only (ignored for map)"},
    ),
    "tree": KeySpec(known=frozenset({"max_parallel", "group_size"})),
}
# ChatDev's guide writes these under `split`; its loader (and devall's) reads them in `config`.
_MISPLACED = ("pattern", "json_path")
_JSON_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


@dataclass(frozen=True)
class RegexSplit:
    """`split: {type: regex, config: {...}}`: every match (or capture group) is one unit."""

    pattern: str
    group: int | str | None = None  # None: the whole match
    case_sensitive: bool = True
    multiline: bool = False
    dotall: bool = False
    on_no_match: str = "pass"  # pass: the message is one unit; empty: one empty unit

    def flags(self) -> int:
        """The `re` flags the options ask for."""
        flags = 0 if self.case_sensitive else re.IGNORECASE
        flags |= re.MULTILINE if self.multiline else 0
        return flags | (re.DOTALL if self.dotall else 0)


@dataclass(frozen=True)
class JsonPathSplit:
    """`split: {type: json_path, config: {json_path}}`: every item of the array found is a unit."""

    json_path: str = ""  # as written
    steps: tuple[str, ...] = ()  # the keys (and list indexes) leading to the array


@dataclass(frozen=True)
class SplitConfig:
    """How the payload of a dynamic edge is cut into units (`message`: one unit per message)."""

    type: str = "message"
    config: RegexSplit | JsonPathSplit | None = None


@dataclass(frozen=True)
class DynamicConfig:
    """An edge's `dynamic` block."""

    type: str  # map | tree
    split: SplitConfig = SplitConfig()
    max_parallel: int = 10
    group_size: int = 3  # tree only
    path: str = field(default="", compare=False)

    def differences(self, other: DynamicConfig) -> list[str]:
        """What differs from `other`, as `name (this, there other)` phrases."""
        found = []
        for item in fields(self):
            mine, theirs = getattr(self, item.name), getattr(other, item.name)
            if item.compare and mine != theirs:
                found.append(f"{item.name} ({_shown(mine)}, there {_shown(theirs)})")
        return found


def _shown(value: Any) -> str:
    return describe_split(value) if isinstance(value, SplitConfig) else str(value)


def describe_split(split: SplitConfig) -> str:
    """`message`, `regex '<pattern>' group 1`, `json_path 'items'`: for messages and notes."""
    if split.config is None:
        return split.type
    if isinstance(split.config, JsonPathSplit):
        return f"json_path {split.config.json_path!r}"
    text = f"regex {split.config.pattern!r}"
    defaults = RegexSplit(split.config.pattern)
    for item in fields(RegexSplit):
        value = getattr(split.config, item.name)
        if value != getattr(defaults, item.name):
            text += f" {item.name}={value}"
    return text


def parse_dynamic(ck: Checker, raw: Any, path: KeyPath) -> DynamicConfig | bool | None:
    """`dynamic`: None when absent (or null), False after recording issues."""
    if raw is None:
        return None
    block = get_mapping(ck, raw, path, "dynamic")
    if block is None:
        return False
    check_keys(ck, block, path, _DYNAMIC_KEYS)
    errors = ck.error_count
    mode = _choice(ck, block, "type", path, DYNAMIC_TYPES, "dynamic type", required=True)
    split = parse_split(ck, block.get("split"), (*path, "split"))
    settings = _mode_settings(ck, block.get("config"), (*path, "config"), mode)
    if mode is None or split is None or ck.error_count > errors:
        return False
    max_parallel, group_size = settings
    return DynamicConfig(mode, split, max_parallel, group_size, format_path(path))


def _mode_settings(ck: Checker, raw: Any, path: KeyPath, mode: str | None) -> tuple[int, int]:
    """`max_parallel` (at least 1) and, for tree, `group_size` (at least 2)."""
    if raw is None or raw is UNRESOLVED:
        return 10, 3
    config = get_mapping(ck, raw, path, "config")
    if config is None:
        return 10, 3
    if mode is not None:
        check_keys(ck, config, path, _MODE_KEYS[mode])
    max_parallel = opt_int(ck, config, "max_parallel", path, 10, minimum=1)
    group_size = opt_int(ck, config, "group_size", path, 3, minimum=2) if mode == "tree" else 3
    return max_parallel, group_size


def parse_split(ck: Checker, raw: Any, path: KeyPath) -> SplitConfig | None:
    """`split`: null means one unit per message; None after recording issues."""
    if raw is None:
        return SplitConfig()
    split = get_mapping(ck, raw, path, "split")
    if split is None:
        return None
    kind = _choice(ck, split, "type", path, SPLIT_TYPES, "split type") or "message"
    raw_config = split.get("config")
    misplaced = kind != "message" and raw_config is None and any(k in split for k in _MISPLACED)
    keys = {k: v for k, v in split.items() if not (misplaced and k in _MISPLACED)}
    check_keys(ck, keys, path, _SPLIT_KEYS)
    if kind == "message":
        return SplitConfig()  # ChatDev reads nothing more for a message split
    if raw_config is None:
        _missing_config(ck, split, path, kind)
        return None
    config = get_mapping(ck, raw_config, (*path, "config"), "config")
    if config is None:
        return None
    parse = _parse_regex if kind == "regex" else _parse_json_path
    settings = parse(ck, config, (*path, "config"))
    return None if settings is None else SplitConfig(kind, settings)


def _missing_config(ck: Checker, split: dict[str, Any], path: KeyPath, kind: str) -> None:
    key = "pattern" if kind == "regex" else "json_path"
    for misplaced in _MISPLACED:
        if misplaced in split:
            ck.error(
                (*path, misplaced),
                f"{misplaced} belongs in split.config: write "
                f"`split: {{type: {kind}, config: {{{key}: ...}}}}`",
                at_key=True,
            )
            return
    ck.error(path, f"a {kind} split needs config: {{{key}: ...}}")


def _parse_regex(ck: Checker, config: dict[str, Any], path: KeyPath) -> RegexSplit | None:
    """`pattern` (required), `group`, `case_sensitive`, `multiline`, `dotall`, `on_no_match`."""
    check_keys(ck, config, path, _REGEX_KEYS)
    errors = ck.error_count
    pattern = opt_str(ck, config, "pattern", path, required=True)
    group = regex_group(ck, config.get("group"), (*path, "group"))
    options = {
        key: opt_bool(ck, config, key, path, default)
        for key, default in (("case_sensitive", True), ("multiline", False), ("dotall", False))
    }
    on_no_match = _choice(ck, config, "on_no_match", path, NO_MATCH, "on_no_match") or "pass"
    if pattern is None:
        return None
    split = RegexSplit(pattern, group, on_no_match=on_no_match, **options)
    if check_regex(ck, pattern, (*path, "pattern"), "pattern", split.flags()):
        _group_exists(ck, split, (*path, "group"))
    return None if ck.error_count > errors else split


def _group_exists(ck: Checker, split: RegexSplit, path: KeyPath) -> None:
    """ChatDev quietly takes the whole match for a group the pattern lacks; devall says so."""
    if split.group is None:
        return
    compiled = re.compile(split.pattern, split.flags())
    if isinstance(split.group, int):
        if split.group > compiled.groups:
            count = f"{compiled.groups} group" + ("" if compiled.groups == 1 else "s")
            ck.error(path, f"group {split.group} does not exist: the pattern has {count}")
    elif split.group not in compiled.groupindex:
        names = ", ".join(compiled.groupindex) or "none"
        ck.error(path, f"group '{split.group}' is not a group name of the pattern (names: {names})")


def _parse_json_path(ck: Checker, config: dict[str, Any], path: KeyPath) -> JsonPathSplit | None:
    """`json_path`: `items`, `data.results`, `$.items[*]`; empty means the whole document."""
    check_keys(ck, config, path, _JSON_PATH_KEYS)
    if "json_path" not in config:
        ck.error((*path, "json_path"), "json_path is required ('' for the whole document)")
        return None
    raw = config.get("json_path")
    text = "" if raw is None else opt_str(ck, config, "json_path", path)
    if text is None:
        return None
    steps = json_path_steps(text)
    if steps is None:
        ck.error(
            (*path, "json_path"),
            f"json_path {text!r} is not a path devall can follow: use keys joined by dots "
            "(`data.results`), list indexes (`items.0` or `items[0]`), optionally `$.` in front "
            "and `[*]` at the end",
        )
        return None
    return JsonPathSplit(text, steps)


def json_path_steps(text: str) -> tuple[str, ...] | None:
    """The steps of a path: ChatDev's dot notation, or the simple JSONPath its guide shows."""
    text = text.strip()
    if not text.startswith("$") and "[" not in text:
        keys = tuple(text.split(".")) if text else ()
        return keys if all(keys) else None
    rest = text[1:] if text.startswith("$") else "." + text
    rest = rest.removesuffix("[*]")
    steps: list[str] = []
    position = 0
    while position < len(rest):
        match = _JSON_STEP.match(rest, position)
        if match is None:
            return None
        steps.append(next(group for group in match.groups() if group is not None))
        position = match.end()
    return tuple(steps)


def _choice(
    ck: Checker,
    mapping: dict[str, Any],
    key: str,
    path: KeyPath,
    choices: Sequence[str],
    what: str,
    *,
    required: bool = False,
) -> str | None:
    value = opt_str(ck, mapping, key, path, required=required)
    if value is None or value in choices:
        return value
    message = f"unknown {what} '{value}' (known: {', '.join(choices)})"
    guess = suggest(value, list(choices))
    ck.error((*path, key), f"{message}; did you mean '{guess}'?" if guess else message)
    return None


def check_agreement(ck: Checker, edges: Sequence[tuple[EdgeConfig, KeyPath]]) -> None:
    """All dynamic edges into one node must have the same `dynamic` block (ChatDev checks this
    when the node runs; devall when the file is loaded). A later edge for the same pair of nodes
    replaces the earlier one, so only the last of each pair counts."""
    last = {(edge.source, edge.target): (edge, path) for edge, path in edges}
    first: dict[str, tuple[EdgeConfig, KeyPath]] = {}
    for edge, path in last.values():
        if edge.dynamic is None:
            continue
        seen = first.setdefault(edge.target, (edge, path))
        if seen[0] is edge or seen[0].dynamic is None:
            continue
        differences = edge.dynamic.differences(seen[0].dynamic)
        if differences:
            ck.error(
                (*path, "dynamic"),
                f"the dynamic edges into '{edge.target}' must agree: this one differs from the "
                f"edge from '{seen[0].source}' ({format_path(seen[1])}) in "
                + "; ".join(differences),
            )


def dynamic_shape() -> Schema:
    """The schema of an edge's `dynamic` block (`devall schema`)."""
    split_configs: dict[str, Schema] = {
        "message": {"type": ["object", "null"]},
        "regex": keys_object(_REGEX_KEYS, strict=False),
        "json_path": keys_object(_JSON_PATH_KEYS, strict=False),
    }
    split = typed_block(split_configs, lambda schema: schema, _SPLIT_KEYS, strict=False)
    del split["required"]  # no type: one unit per message
    modes = {mode: keys_object(spec, strict=False) for mode, spec in _MODE_KEYS.items()}
    return typed_block(
        modes, lambda schema: schema, _DYNAMIC_KEYS, strict=False, extra={"split": split}
    )
