"""JSON text indented as `json.dumps(value, indent=2, ensure_ascii=False, default=str)` writes it.

Python's indenting encoder is its pure one (the C encoder knows no indent): several times slower
than this one recursion, which matters for result.json (once per batch task) and for listings of
thousands of tools. An optional `mask` is applied to every string value (never to keys), so that
a listing is masked and written in one pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from json.encoder import encode_basestring
from typing import Any

_INDENT = "  "
_FLOATS = {float("inf"): "Infinity", float("-inf"): "-Infinity"}


def _same(text: str) -> str:
    return text


def indented_json(value: Any, mask: Callable[[str], str] | None = None) -> str:
    """`value` as JSON indented by two spaces, `mask` applied to its string values."""
    parts: list[str] = []
    _encode(value, mask or _same, "\n", parts)
    return "".join(parts)


def _encode(value: Any, mask: Callable[[str], str], newline: str, parts: list[str]) -> None:
    kind = type(value)  # the exact types first: they are nearly all a listing holds
    if kind is str:
        parts.append(encode_basestring(mask(value)))
    elif kind is dict:
        _encode_object(value, mask, newline, parts)
    elif kind is list:
        _encode_array(value, mask, newline, parts)
    elif isinstance(value, str):
        parts.append(encode_basestring(mask(value)))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(int.__repr__(value))
    elif isinstance(value, float):
        parts.append(_float(value))
    elif isinstance(value, Mapping):
        _encode_object(value, mask, newline, parts)
    elif isinstance(value, list | tuple):
        _encode_array(value, mask, newline, parts)
    else:  # what `default=str` writes; the redactor leaves such values as they are
        parts.append(encode_basestring(str(value)))


def _encode_object(
    value: Mapping[Any, Any], mask: Callable[[str], str], newline: str, parts: list[str]
) -> None:
    if not value:
        parts.append("{}")
        return
    inner = newline + _INDENT
    separator = "{" + inner
    for key, item in value.items():
        parts.append(separator)
        parts.append(encode_basestring(key if type(key) is str else _key(key)))
        parts.append(": ")
        if type(item) is str:  # most values: written here, without a call
            parts.append(encode_basestring(mask(item)))
        else:
            _encode(item, mask, inner, parts)
        separator = "," + inner
    parts.append(newline + "}")


def _encode_array(
    value: list[Any] | tuple[Any, ...], mask: Callable[[str], str], newline: str, parts: list[str]
) -> None:
    if not value:
        parts.append("[]")
        return
    inner = newline + _INDENT
    separator = "[" + inner
    for item in value:
        parts.append(separator)
        if type(item) is str:
            parts.append(encode_basestring(mask(item)))
        else:
            _encode(item, mask, inner, parts)
        separator = "," + inner
    parts.append(newline + "]")


def _key(key: Any) -> str:
    """A key as json.dumps writes it: strings as they are, scalars as their JSON text."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        text = "null" if key is None else _float(key) if isinstance(key, float) else None
        if text is None:
            text = "true" if key is True else "false" if key is False else int.__repr__(key)
        return text
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    return _FLOATS.get(value) or float.__repr__(value)
