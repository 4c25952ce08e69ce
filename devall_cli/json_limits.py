"""The limits on JSON devall takes in, checked before anything recursive touches it.

JSON from outside (a server's message, a model's tool-call arguments, a model response, `--args`)
may nest containers more than MAX_NESTING levels deep, counting the document itself as level 1,
or hold an integer of more than MAX_INT_DIGITS digits. Either is refused with a JsonLimitError
that names the limit. Python's own json module would fail on such input in ways that are hard to
tell apart from junk (a ValueError for the integer, a RecursionError at about 1,000 levels), and
the code that walks values afterwards (pydantic validation, the redactor, the event log, JSON
encoding) recurses once per level; 100 levels is far beyond any real server or model and far
below the recursion limit.

`loads` checks the text without recursion, then parses. `check_value` checks a value that was
parsed elsewhere (by the MCP SDK over HTTP, by httpx), iteratively. `message_head` finds the
`id` and `method` of a message that was refused, so the request it answers can fail at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from itertools import accumulate, islice
from typing import Any

MAX_NESTING = 100
# Python converts at most this many digits to an int (sys.int_max_str_digits) by default: longer
# numbers cost quadratic time to convert, and could not be written back out as JSON either.
MAX_INT_DIGITS = 4300

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_COLON = re.compile(r"\s*:\s*")
_DECODER = json.JSONDecoder()


class JsonLimitError(ValueError):
    """JSON beyond devall's limits; the message completes a sentence about the JSON.

    `f"the response {exc}"` reads "the response is nested deeper than 100 levels".
    """


TOO_DEEP = f"is nested deeper than {MAX_NESTING} levels"
TOO_LONG_INT = f"holds an integer longer than {MAX_INT_DIGITS} digits"
# How far `message_head` reads a refused message: it is a hostile one, worth a second at most.
_MAX_HEAD_TOKENS = 1_000_000


def nests_too_deep(text: str) -> bool:
    """Whether the containers in JSON `text` nest deeper than MAX_NESTING (strings not counted)."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return False  # the common case, answered without looking further
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    # A running sum in C (accumulate, map and max), not a Python loop: lines run to megabytes.
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > MAX_NESTING


def loads(text: str | bytes) -> Any:
    """`json.loads` for JSON from outside: JsonLimitError beyond the limits, ValueError if bad."""
    if isinstance(text, bytes):
        text = text.decode(json.detect_encoding(text), "surrogatepass")  # as json.loads does
    if nests_too_deep(text):
        raise JsonLimitError(TOO_DEEP)
    return json.loads(text, parse_int=_parse_int)


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonLimitError(TOO_LONG_INT)
    try:
        return int(digits)
    except ValueError:  # the interpreter was told to allow fewer digits
        raise JsonLimitError(TOO_LONG_INT) from None


def check_value(value: Any, *, level: int = 1) -> None:
    """Raise JsonLimitError if `value`, at `level` of its document, nests beyond MAX_NESTING."""
    pending: list[tuple[Any, int]] = [(value, level)]
    while pending:  # a loop with its own stack: the value may be far too deep to recurse into
        item, depth = pending.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > MAX_NESTING:
            raise JsonLimitError(TOO_DEEP)
        pending.extend((child, depth + 1) for child in children)


def message_head(text: str) -> tuple[Any, bool]:
    """The top-level `id` (None if none can be read) and whether there is a `method`.

    For a message `loads` refused: the keys are found by scanning, without parsing the rest;
    keys beyond the first million strings and brackets are not looked for.
    """
    request_id: Any = None
    has_method = False
    depth = 0
    for token in islice(_TOKEN.finditer(text), _MAX_HEAD_TOKENS):
        mark = token.group()
        if mark in "[{":
            depth += 1
        elif mark in "]}":
            depth -= 1
        elif depth == 1 and mark in ('"id"', '"method"'):
            colon = _COLON.match(text, token.end())
            if colon is None:
                continue  # a value, not a key
            if mark == '"method"':
                has_method = True
            else:
                request_id = _scalar_at(text, colon.end())
    return request_id, has_method


def _scalar_at(text: str, position: int) -> Any:
    """The number or string starting at `position`, or None (containers are not ids)."""
    if text[position : position + 1] in ("[", "{", ""):
        return None
    try:
        value, _ = _DECODER.raw_decode(text[position : position + 300])
    except ValueError:
        return None
    if len(str(value)) > 200:
        return None
    return value
