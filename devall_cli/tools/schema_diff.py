"""The changes between two JSON Schemas of one tool, each classified breaking or compatible.

A change narrows a schema (fewer values are valid: a type, an enum value or a property taken
away, a property now required, a tighter bound, a constraint added) or widens it (the reverse),
or both (string -> integer). For an input schema, what the caller sends, narrowing breaks; for an
output schema, what the caller reads, widening breaks. Properties are judged by what callers do
with them rather than by the values they admit: a removed property breaks either way (the
caller sends it, or reads it); a new one breaks only an input that requires it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Direction = Literal["input", "output"]

# Keywords that describe a schema without constraining it: their changes never break.
ANNOTATION_KEYWORDS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
     "writeOnly", "$schema", "$id", "markdownDescription"}
)
# Bounds: the first set narrows as its value grows, the second as it shrinks.
LOWER_BOUNDS = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"})
UPPER_BOUNDS = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"})
# Handled by their own rules below, not as plain constraints.
STRUCTURE = frozenset(
    {"type", "anyOf", "oneOf", "properties", "required", "additionalProperties", "items",
     "enum", "const", "$defs", "definitions"}
)
JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")


@dataclass(frozen=True)
class Finding:
    """One schema change, at its JSON path (`input_schema.properties.q.type`)."""

    path: str
    message: str
    breaking: bool
    before: Any = None
    after: Any = None


def schema_findings(
    before: Any, after: Any, path: str, *, direction: Direction = "input"
) -> list[Finding]:
    """Every change from `before` to `after`, the schemas found at `path`."""
    differ = _Differ(direction)
    differ.node(before, after, path)
    return differ.found


class _Differ:
    def __init__(self, direction: Direction) -> None:
        self.direction = direction
        self.found: list[Finding] = []

    def add(
        self,
        path: str,
        message: str,
        before: Any,
        after: Any,
        *,
        narrows: bool = False,
        widens: bool = False,
    ) -> None:
        breaking = narrows if self.direction == "input" else widens
        self.found.append(Finding(path, message, breaking, before, after))

    def node(self, before: Any, after: Any, path: str) -> None:
        """Compare two schemas (a boolean schema counts as an opaque constraint)."""
        if before == after:
            return
        if not (isinstance(before, Mapping) and isinstance(after, Mapping)):
            self.add(path, "schema changed", before, after, narrows=True, widens=True)
            return
        self.types(before, after, path)
        self.objects(before, after, path)
        if isinstance(before.get("items"), Mapping) and isinstance(after.get("items"), Mapping):
            self.node(before["items"], after["items"], f"{path}.items")
        elif before.get("items") != after.get("items"):
            self.constraint("items", before, after, path)
        self.values("enum", before, after, path)
        self.values("const", before, after, path)
        for key in ("$defs", "definitions"):
            self.definitions(key, before, after, path)
        for key in sorted({*before, *after} - STRUCTURE):
            if before.get(key) != after.get(key):
                self.keyword(key, before, after, path)
        # Unions of plain types were compared as types; other branches one by one.
        typed = _union_only(before) and _union_only(after)
        for key in ("anyOf", "oneOf"):
            if not typed and before.get(key) != after.get(key):
                self.branches(key, before, after, path)

    def types(self, before: Mapping[str, Any], after: Mapping[str, Any], path: str) -> None:
        """Compare the sets of types (`type`, or a union of plain typed branches)."""
        was, now = type_set(before), type_set(after)
        if was == now:
            return
        where = f"{path}.type"
        lost = [t for t in (was or JSON_TYPES) if not _covers(now, t)]
        gained = [t for t in (now or JSON_TYPES) if not _covers(was, t)]
        shown = (_types_shown(was), _types_shown(now))
        verb = "changed" if lost and gained else "narrowed" if lost else "widened"
        verb = verb if lost or gained else "restated"  # integer | number -> number
        self.add(where, f"type {verb}: {shown[0]} -> {shown[1]}", _raw_types(before),
                 _raw_types(after), narrows=bool(lost), widens=bool(gained))

    def objects(self, before: Mapping[str, Any], after: Mapping[str, Any], path: str) -> None:
        """Properties removed, added, now required or optional; additionalProperties."""
        was, now = _properties(before), _properties(after)
        req_was, req_now = _required(before), _required(after)
        inputs = self.direction == "input"
        for name in sorted({*was, *now}):
            where = f"{path}.properties{_key(name)}"
            if name not in now:
                self.found.append(Finding(where, f"removed property '{name}'", True, was[name]))
            elif name not in was:
                required = name in req_now
                word = "required" if required else "optional"
                breaking = inputs and required
                self.found.append(
                    Finding(where, f"new {word} property '{name}'", breaking, None, now[name])
                )
            else:
                self.node(was[name], now[name], where)
        for name in sorted((req_was ^ req_now) & set(was) & set(now)):
            required = name in req_now
            message = f"property '{name}' is now {'required' if required else 'optional'}"
            breaking = required if inputs else not required
            self.found.append(Finding(f"{path}.required", message, breaking, not required,
                                      required))
        for name in sorted((req_now - req_was) - set(now)):  # required without a definition
            self.add(f"{path}.required", f"'{name}' is now required", False, True, narrows=True)
        self.additional(before, after, path)

    def additional(self, before: Mapping[str, Any], after: Mapping[str, Any], path: str) -> None:
        was, now = before.get("additionalProperties"), after.get("additionalProperties")
        where = f"{path}.additionalProperties"
        if was == now:
            return
        if isinstance(was, Mapping) and isinstance(now, Mapping):
            self.node(was, now, where)
        elif now is False or (isinstance(now, Mapping) and was in (None, True)):
            self.add(where, "additional properties no longer allowed", was, now, narrows=True)
        elif was is False or (isinstance(was, Mapping) and now in (None, True)):
            self.add(where, "additional properties now allowed", was, now, widens=True)
        else:
            self.add(where, "additionalProperties changed", was, now, narrows=True, widens=True)

    def values(
        self, key: str, before: Mapping[str, Any], after: Mapping[str, Any], path: str
    ) -> None:
        """`enum` or `const`: a value taken away narrows, one added widens."""
        if before.get(key) == after.get(key):
            return
        was = _listed(before, key)
        now = _listed(after, key)
        where = f"{path}.{key}"
        if was is None or now is None:
            added = was is None
            message = f"{key} {'added' if added else 'removed'}"
            self.add(where, message, before.get(key), after.get(key), narrows=added,
                     widens=not added)
            return
        lost = [v for v in was if v not in now]
        gained = [v for v in now if v not in was]
        parts = [f"value {_value(v)} removed" for v in lost]
        parts += [f"value {_value(v)} added" for v in gained]
        self.add(where, f"{key}: " + ", ".join(parts or ["changed"]), before.get(key),
                 after.get(key), narrows=bool(lost), widens=bool(gained))

    def definitions(self, key: str, before: Mapping[str, Any], after: Mapping[str, Any],
                    path: str) -> None:
        was, now = before.get(key), after.get(key)
        if was == now or not (isinstance(was, Mapping) or isinstance(now, Mapping)):
            return
        was, now = was if isinstance(was, Mapping) else {}, now if isinstance(now, Mapping) else {}
        for name in sorted({*was, *now}):
            where = f"{path}.{key}{_key(name)}"
            if name in was and name in now:
                self.node(was[name], now[name], where)
            else:  # what refers to it changed too, and says so
                message = f"definition '{name}' {'added' if name in now else 'removed'}"
                self.found.append(Finding(where, message, False, was.get(name), now.get(name)))

    def keyword(self, key: str, before: Mapping[str, Any], after: Mapping[str, Any],
                path: str) -> None:
        was, now = before.get(key), after.get(key)
        where = f"{path}.{key}"
        if key in ANNOTATION_KEYWORDS:
            self.found.append(Finding(where, f"{key} changed", False, was, now))
        elif key in LOWER_BOUNDS | UPPER_BOUNDS and _numbers(was, now):
            self.bound(key, was, now, where)
        else:
            self.constraint(key, before, after, path)

    def bound(self, key: str, was: Any, now: Any, where: str) -> None:
        if was is None or now is None:
            narrows = was is None
        else:
            narrows = now > was if key in LOWER_BOUNDS else now < was
        verb = "tightened" if narrows else "loosened"
        self.add(where, f"{key} {verb}: {_value(was)} -> {_value(now)}", was, now,
                 narrows=narrows, widens=not narrows)

    def constraint(self, key: str, before: Mapping[str, Any], after: Mapping[str, Any],
                   path: str) -> None:
        """Any other keyword constrains values: added narrows, removed widens, changed both."""
        was, now = before.get(key), after.get(key)
        verb = "added" if was is None else "removed" if now is None else "changed"
        self.add(f"{path}.{key}", f"{key} {verb}", was, now, narrows=now is not None,
                 widens=was is not None)

    def branches(self, key: str, before: Mapping[str, Any], after: Mapping[str, Any],
                 path: str) -> None:
        """`anyOf`/`oneOf` of schemas: a branch added widens, one taken away narrows."""
        was, now = before.get(key), after.get(key)
        if not (isinstance(was, list) and isinstance(now, list)):
            self.constraint(key, before, after, path)
            return
        if len(was) == len(now):
            for index, (one, other) in enumerate(zip(was, now, strict=True)):
                self.node(one, other, f"{path}.{key}[{index}]")
            return
        lost = [b for b in was if b not in now]
        gained = [b for b in now if b not in was]
        self.add(f"{path}.{key}", f"{key}: {len(lost)} branch(es) removed, {len(gained)} added",
                 was, now, narrows=bool(lost), widens=bool(gained))


def type_set(schema: Mapping[str, Any]) -> frozenset[str] | None:
    """The JSON types a schema admits (`type`, or a union of plain typed `anyOf`/`oneOf`
    branches); None for any type."""
    if "type" in schema:
        return _as_types(schema["type"])
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches and all(_plain(b) for b in branches):
            found: set[str] = set()
            for branch in branches:
                found |= _as_types(branch["type"]) or set(JSON_TYPES)
            return frozenset(found)
    return None


def _union_only(schema: Mapping[str, Any]) -> bool:
    """Whether the schema's `anyOf`/`oneOf`, if any, is a union of plain types."""
    if not any(key in schema for key in ("anyOf", "oneOf")):
        return True
    return "type" not in schema and type_set(schema) is not None


def _plain(branch: Any) -> bool:
    """A branch that says only its type (and annotations): `{"type": "null"}`."""
    return isinstance(branch, Mapping) and "type" in branch and set(branch) <= {
        "type", *ANNOTATION_KEYWORDS
    }


def _as_types(value: Any) -> frozenset[str] | None:
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    return None


def _covers(types: frozenset[str] | None, wanted: str) -> bool:
    """Whether `types` admit every value of type `wanted` (a number admits every integer)."""
    if types is None:
        return True
    return wanted in types or (wanted == "integer" and "number" in types)


def _types_shown(types: frozenset[str] | None) -> str:
    return " | ".join(sorted(types)) if types is not None else "any"


def _raw_types(schema: Mapping[str, Any]) -> Any:
    found = type_set(schema)
    return sorted(found) if found is not None else None


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    value = schema.get("properties")
    return value if isinstance(value, Mapping) else {}


def _required(schema: Mapping[str, Any]) -> set[str]:
    value = schema.get("required")
    return {str(v) for v in value} if isinstance(value, list) else set()


def _listed(schema: Mapping[str, Any], key: str) -> list[Any] | None:
    if key not in schema:
        return None
    value = schema[key]
    return list(value) if key == "enum" and isinstance(value, list) else [value]


def _numbers(*values: Any) -> bool:
    present = [v for v in values if v is not None]
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in present)


def _key(name: str) -> str:
    """`.name`, or `["a b"]` for a name a dotted path cannot hold."""
    if name.isidentifier():
        return f".{name}"
    return '["' + name.replace("\\", "\\\\").replace('"', '\\"') + '"]'


def _value(value: Any) -> str:
    import json

    return "unset" if value is None else json.dumps(value, ensure_ascii=False)
