"""Tool arguments checked against the tool's JSON schema before the tool is called.

One checker for every kind of tool. For Python functions devall checks before each call, so that
a wrong call comes back to the model as an error it can correct (naming the argument and the
expected type) instead of failing inside the function. `devall tools call` checks the arguments
of an MCP server's tool the same way before it sends them, so a wrong call is told in one line per
problem instead of the server's validator text.

The `jsonschema` validator does the work (the schema's `$schema` dialect, draft 2020-12 by
default); its errors are reworded to one line each. A schema devall cannot read never blocks a
call: unknown keywords are ignored, and a schema the validator cannot apply (an unknown type, a
`$ref` it cannot follow) checks only what the schema's `properties` and `required` say.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from devall_cli.tools.base import TextBlock, ToolResult

MAX_PROBLEMS = 10  # a model sending dozens of wrong arguments needs the first few to go on
MAX_SHOWN = 60  # characters of a value quoted in a message
_MAX_ERRORS = 50  # validator errors read per call: enough for MAX_PROBLEMS after duplicates

_KINDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}
_BOUNDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "greater than",
    "exclusiveMaximum": "less than",
}
_SIZES = {
    "minLength": ("at least", "character", "long"),
    "maxLength": ("at most", "character", "long"),
    "minItems": ("at least", "item", ""),
    "maxItems": ("at most", "item", ""),
    "minProperties": ("at least", "key", ""),
    "maxProperties": ("at most", "key", ""),
}


@dataclass(frozen=True)
class InvalidArgumentsResult(ToolResult):
    """The error result of a call refused before the tool ran: its arguments do not fit."""

    problems: tuple[str, ...] = ()


def invalid_arguments(
    tool_name: str, problems: list[str], *, source: str, duration_ms: float = 0.0
) -> InvalidArgumentsResult:
    """`invalid arguments for 'add': p1; p2` as an error result (error class invalid_arguments)."""
    text = f"invalid arguments for '{tool_name}': " + "; ".join(problems)
    return InvalidArgumentsResult(
        blocks=(TextBlock(text=text, tool_name=tool_name, source=source),),
        is_error=True,
        error_class="invalid_arguments",
        duration_ms=duration_ms,
        problems=tuple(problems),
    )


class ArgumentChecker:
    """Checks one tool's arguments; built once per tool."""

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        open_ended: bool | None = None,
        nullable: Collection[str] = (),
    ) -> None:
        """`open_ended`: whether arguments the schema does not name are accepted (a function
        with **kwargs); None: as the schema says (only `additionalProperties: false` refuses)."""
        self._schema: dict[str, Any] = dict(schema) if isinstance(schema, Mapping) else {}
        properties = self._schema.get("properties")
        self._properties: dict[str, Any] = (
            dict(properties) if isinstance(properties, Mapping) else {}
        )
        required = self._schema.get("required")
        self._required = [n for n in required if isinstance(n, str)] if _is_list(required) else []
        if open_ended is None:
            open_ended = self._schema.get("additionalProperties") is not False
        self._open_ended = open_ended
        self._patterns = _patterns(self._schema)
        # Parameters that take None (`Optional[T]`, `= None`): the schema offered to the model
        # says T, as ChatDev's does, but a null for them is what the function expects.
        self._nullable = frozenset(nullable)
        self._validator = _validator(self._schema)

    def problems(self, arguments: Mapping[str, Any]) -> list[str]:
        """What is wrong with `arguments`, one sentence each, in parameter order; [] if fine."""
        found: list[tuple[int, str]] = []
        order = {name: index for index, name in enumerate(self._properties)}
        if not self._open_ended:
            known = ", ".join(self._properties) or "none"
            found += [
                (-1, f"unknown argument '{name}' (parameters: {known})")
                for name in arguments
                if name not in self._properties and not _matches(name, self._patterns)
            ]
        for name in self._required:
            if name not in arguments:
                kind = _kind(self._properties.get(name, {}))
                message = f"missing required argument '{name}'" + (f" ({kind})" if kind else "")
                found.append((order.get(name, -1), message))
        values = {k: v for k, v in arguments.items() if v is not None or k not in self._nullable}
        for error in self._errors(values):
            if error.absolute_path:  # `required` (above) is the only error about the whole
                parameter = str(error.absolute_path[0])
                found.append((order.get(parameter, len(order)), _describe(error)))
        found.sort(key=lambda item: item[0])
        unique = list(dict.fromkeys(message for _, message in found))
        return unique[:MAX_PROBLEMS]

    def unset_nulls_dropped(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """`arguments` without the nulls given for optional parameters whose schema takes no
        null. Such a null means "not given" (as MCP's `x-mcp-header` mirroring reads it); sent
        as it is, the server's validator would refuse the call."""
        return {
            name: value
            for name, value in arguments.items()
            if value is not None
            or name in self._required
            or name not in self._properties
            or _takes_null(self._properties[name])
        }

    def _errors(self, values: Mapping[str, Any]) -> list[Any]:
        """The validator's errors; those found before it met something it cannot apply."""
        found: list[Any] = []
        if self._validator is None:
            return found
        try:
            for error in self._validator.iter_errors(values):
                found.append(error)
                if len(found) >= _MAX_ERRORS:
                    break
        except Exception:  # an unknown type, a $ref it cannot follow, a bad pattern: not ours
            pass
        return found


def describe_parameters(schema: Mapping[str, Any]) -> str:
    """`a* (an integer), b (a string)`: a tool's parameters, `*` marking the required ones."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or not properties:
        return "none"
    required = schema.get("required")
    needed = set(required) if _is_list(required) else set()
    parts = []
    for name, sub in properties.items():
        kind = _kind(sub)
        parts.append(f"{name}{'*' if name in needed else ''}" + (f" ({kind})" if kind else ""))
    return ", ".join(parts)


def _validator(schema: Mapping[str, Any]) -> Any:
    """The validator of the schema's dialect (2020-12 by default), or None if it cannot be made."""
    # Imported here: only a command or a run that checks arguments pays for it.
    from jsonschema import Draft202012Validator, validators

    try:
        cls = validators.validator_for(schema, default=Draft202012Validator)
        return cls(schema)
    except Exception:  # a `$schema` that is not a string, a schema jsonschema refuses to take
        return None


def _describe(error: Any) -> str:
    """One jsonschema error about a value, in words the model can act on."""
    where = _path(error.absolute_path)
    got = _shown(error.instance)
    keyword, value = error.validator, error.validator_value
    if keyword in ("type", "enum"):
        return f"'{where}' must be {_kind(error.schema) or 'of another type'}, got {got}"
    if keyword == "const":
        return f"'{where}' must be {_shown(value)}, got {got}"
    if keyword in ("anyOf", "oneOf") and _is_list(value):
        kinds = [_kind(branch) for branch in value]
        if all(kinds):
            return f"'{where}' must be {' or '.join(dict.fromkeys(kinds))}, got {got}"
        return f"'{where}' fits none of the forms its schema allows, got {got}"
    if keyword in _BOUNDS:
        return f"'{where}' must be {_BOUNDS[keyword]} {_shown(value)}, got {got}"
    if keyword in _SIZES:
        bound, unit, tail = _SIZES[keyword]
        plural = "" if value == 1 else "s"
        size = " ".join(filter(None, [bound, f"{value} {unit}{plural}", tail]))
        verb = "be" if tail else "have"
        return f"'{where}' must {verb} {size}, got {got}"
    if keyword == "required" and isinstance(error.instance, Mapping) and _is_list(value):
        missing = [name for name in value if name not in error.instance]
        return f"'{where}' lacks required key(s) {_names(missing)}"
    if keyword == "additionalProperties" and isinstance(error.instance, Mapping):
        extra = _extra_keys(error.instance, error.schema)
        return f"'{where}' has unknown key(s) {_names(extra)}"
    if keyword == "pattern":
        return f"'{where}' must match the pattern {_shown(value)}, got {got}"
    if keyword == "multipleOf":
        return f"'{where}' must be a multiple of {_shown(value)}, got {got}"
    if keyword == "uniqueItems":
        return f"'{where}' must not repeat items, got {got}"
    return f"'{where}': {_cut(' '.join(str(error.message).split()))}"


def _kind(schema: Any) -> str:
    """`an integer`, `a string or null`, `one of "a", "b"`: what a schema asks for ("" if any)."""
    if not isinstance(schema, Mapping):
        return ""
    if _is_list(schema.get("enum")):
        return "one of " + ", ".join(_shown(value) for value in schema["enum"])
    if "const" in schema:
        return _shown(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, str):
        return _KINDS.get(kind, "")
    if _is_list(kind) and kind and all(isinstance(k, str) and k in _KINDS for k in kind):
        return " or ".join(_KINDS[k] for k in kind)
    return ""


def _takes_null(schema: Any) -> bool:
    """Whether a parameter's schema may take null (one devall cannot read may)."""
    if not isinstance(schema, Mapping):
        return True
    kind = schema.get("type")
    if kind is not None:
        return kind == "null" or (_is_list(kind) and "null" in kind)
    if _is_list(schema.get("enum")):
        return None in schema["enum"]
    if "const" in schema:
        return schema["const"] is None
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if _is_list(options):
            return any(_takes_null(option) for option in options)
    return True  # no type given ($ref, allOf, nothing): the server decides


def _extra_keys(instance: Mapping[str, Any], schema: Any) -> list[str]:
    """The keys of an object that its schema's `properties` and `patternProperties` do not name."""
    if not isinstance(schema, Mapping):
        return list(instance)
    properties = schema.get("properties")
    named = set(properties) if isinstance(properties, Mapping) else set()
    patterns = _patterns(schema)
    return [str(key) for key in instance if key not in named and not _matches(key, patterns)]


def _patterns(schema: Mapping[str, Any]) -> list[str]:
    pattern_properties = schema.get("patternProperties")
    return [str(p) for p in pattern_properties] if isinstance(pattern_properties, Mapping) else []


def _matches(name: str, patterns: list[str]) -> bool:
    """Whether a name fits one of the patterns; a pattern Python cannot read fits every name."""
    for pattern in patterns:
        try:
            if re.search(pattern, name):
                return True
        except re.error:
            return True
    return False


def _is_list(value: Any) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    return isinstance(value, list | tuple)


def _names(names: list[str]) -> str:
    return ", ".join(f"'{name}'" for name in names) or "(unknown)"


def _path(path: Any) -> str:
    """`hours[2]`, `weights["x"]`: where in the arguments a problem is."""
    parts = list(path)
    text = str(parts[0])
    for part in parts[1:]:
        text += f"[{part}]" if isinstance(part, int) else f"[{json.dumps(part)}]"
    return text


def _shown(value: Any) -> str:
    """A value as the model wrote it (JSON), shortened."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return _cut(text)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"
