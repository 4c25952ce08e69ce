"""Foreign text: what devall does with text it did not write (servers, models, files, argv).

Two rules, each applied by one function:

- Records keep text exact, except for lone UTF-16 surrogates (`"\\ud800"` is a valid JSON escape
  and argv may carry undecodable bytes as surrogates, but neither is Unicode: no UTF-8 writer can
  encode them). `clean_text` / `clean_value` replace each lone surrogate by U+FFFD where foreign
  text enters devall, so every sink, the console, the model request and MCP requests can carry it.
- The terminal never receives a control character from foreign text: `visible` writes each as a
  visible escape (`\\x1b`, `\\x9b`, `\\ud800`) before anything reaches the console.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls except tab and newline, DEL, C1 controls, surrogates, and the two noncharacters
# XML 1.0 forbids: shown escaped in text bodies (a tool result, a model reply).
_BODY_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
# The same plus tab and newline: shown escaped in single-line fields (a name, a table cell).
_LINE_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
# In JSON text, read left to right: an escaped backslash, a surrogate pair, or a lone surrogate.
_JSON_SURROGATE = re.compile(
    rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    rb"|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def clean_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (a split surrogate pair is joined)."""
    if _SURROGATE.search(text) is None:
        return text
    # UTF-16 joins the halves of a pair that arrived as two code points and refuses lone ones.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_value(value: Any) -> Any:
    """A JSON-like value (dicts, lists, tuples, strings) with `clean_text` applied to every string.

    Keys are cleaned too. A value with nothing to clean is returned as it is (not copied).
    """
    # The search needs no recursion, so a deeply nested message costs no stack unless it holds
    # a lone surrogate; one nested deeper than Python's stack is left to the writers' cleaning.
    if not _holds_surrogate(value):
        return value
    try:
        return _rebuild(value)
    except RecursionError:
        return value


def _holds_surrogate(value: Any) -> bool:
    try:
        # The C encoder writes every string (keys too) as it is, and UTF-8 refuses exactly the
        # surrogates: several times faster than a walk in Python over a large listing.
        json.dumps(value, ensure_ascii=False, check_circular=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (TypeError, ValueError, RecursionError):  # not JSON-like, or too deep for C
        return _walk_holds_surrogate(value)
    return False


def _walk_holds_surrogate(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item) is not None:
                return True
        elif isinstance(item, Mapping):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return False


def _rebuild(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {_rebuild(key): _rebuild(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rebuild(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_rebuild(item) for item in value)
    return value


def clean_json_escapes(data: bytes) -> bytes:
    """JSON text with every escaped lone surrogate (`\\ud800`) written as `\\ufffd` instead.

    For parsers that refuse such escapes outright (pydantic's): the document then parses, with
    U+FFFD in place of each lone surrogate, as `clean_value` would leave it. `data` may be any
    run of whole lines of JSON text (escapes never span a line break).
    """
    if b"\\" not in data:
        return data
    return _JSON_SURROGATE.sub(_keep_or_replace, data)


def _keep_or_replace(found: re.Match[bytes]) -> bytes:
    # Six bytes is a lone surrogate; an escaped backslash (2) or a valid pair (12) stays.
    return b"\\ufffd" if len(found.group()) == 6 else found.group()


def visible(text: str, *, multiline: bool = False) -> str:
    """`text` fit for a terminal: control characters written as escapes such as `\\x1b`.

    `multiline` keeps tab and newline (a text body); otherwise they are escaped as well (a name,
    a log line, a table cell). Backslashes are left alone, so ordinary text reads as it is.
    """
    pattern = _BODY_CONTROL if multiline else _LINE_CONTROL
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def suggest(word: str, choices: list[str]) -> str | None:
    """The closest choice to a misspelled word, if one is close enough."""
    matches = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not matches:
        lowered = {choice.lower(): choice for choice in choices}
        matches = [lowered[word.lower()]] if word.lower() in lowered else []
    return matches[0] if matches else None


def finite_number(value: Any, texts: type[str] = str) -> float | None:
    """`value` as a finite float: a number (never a boolean), or a text of type `texts` that
    spells one; None otherwise (NaN and infinity included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, texts):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def safe_id(name: str) -> str:
    """A name as an id shows it: a server's id in the trace, tables and servers/<id>.log."""
    return re.sub(r"[^A-Za-z0-9_.:-]+", "-", name).strip("-.:") or "server"
