"""Tool arguments checked against a function's JSON schema before the function is called.

MCP servers check the arguments of their own tools; for Python functions devall does it, with
the `jsonschema` validator, so that a wrong call comes back to the model as an error it can
correct (naming the argument and the expected type) instead of failing inside the function.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

MAX_PROBLEMS = 10  # a model sending dozens of wrong arguments needs the first few to go on
MAX_SHOWN = 60  # characters of a value quoted in a message

_KINDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


class ArgumentChecker:
    """Checks one function's arguments; built once per function."""

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        open_ended: bool = False,
        nullable: Collection[str] = (),
    ) -> None:
        # Imported here: only a run that calls functions pays for it.
        from jsonschema import Draft202012Validator

        self._schema = dict(schema)
        self._properties: dict[str, Any] = dict(schema.get("properties", {}))
        self._open_ended = open_ended  # the function takes **kwargs
        # Parameters that take None (`Optional[T]`, `= None`): the schema offered to the model
        # says T, as ChatDev's does, but a null for them is what the function expects.
        self._nullable = frozenset(nullable)
        self._validator = Draft202012Validator(self._schema)

    def problems(self, arguments: Mapping[str, Any]) -> list[str]:
        """What is wrong with `arguments`, one sentence each, in parameter order; [] if fine."""
        found: list[tuple[int, str]] = []
        order = {name: index for index, name in enumerate(self._properties)}
        if not self._open_ended:
            known = ", ".join(self._properties) or "none"
            found += [
                (-1, f"unknown argument '{name}' (parameters: {known})")
                for name in arguments
                if name not in self._properties
            ]
        for name in self._schema.get("required", ()):
            if name not in arguments:
                kind = _kind(self._properties.get(name, {}))
                found.append(
                    (order.get(name, -1), f"missing required argument '{name}'"
                     + (f" ({kind})" if kind else ""))
                )
        values = {k: v for k, v in arguments.items() if v is not None or k not in self._nullable}
        for error in self._validator.iter_errors(values):
            if error.absolute_path:  # `required` (above) is the only error about the whole
                parameter = str(error.absolute_path[0])
                found.append((order.get(parameter, len(order)), _describe(error)))
        found.sort(key=lambda item: item[0])
        unique = list(dict.fromkeys(message for _, message in found))
        return unique[:MAX_PROBLEMS]


def _describe(error: Any) -> str:
    """One jsonschema error about a value, in words the model can act on."""
    where = _path(error.absolute_path)
    got = _shown(error.instance)
    if error.validator in ("type", "enum"):
        return f"'{where}' must be {_kind(error.schema)}, got {got}"
    if error.validator == "anyOf":
        choices = " or ".join(_kind(branch) or "any value" for branch in error.validator_value)
        return f"'{where}' must be {choices}, got {got}"
    if error.validator == "uniqueItems":
        return f"'{where}' must not repeat items, got {got}"
    return f"'{where}': {_cut(str(error.message))}"


def _kind(schema: Mapping[str, Any]) -> str:
    """`an integer`, `one of "a", "b"`: what a schema asks for, in words ("" for anything)."""
    if "enum" in schema:
        return "one of " + ", ".join(_shown(value) for value in schema["enum"])
    kind = schema.get("type")
    return _KINDS.get(kind, "") if isinstance(kind, str) else ""


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
