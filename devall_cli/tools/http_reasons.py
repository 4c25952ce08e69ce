"""What an HTTP error answer says of itself: its first lines, named with its status in errors."""

from __future__ import annotations

import re
from collections.abc import Mapping

from devall_cli import json_limits

_REASON_LINES = 2
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_REASON_KEYS = ("error_description", "message", "detail", "error")


def error_reason(body: bytes, content_type: str) -> str | None:
    """The first lines of an error answer's body, to name with its status (None: nothing to say).

    An HTML page says its title; a JSON object its `error_description`, `message`, `detail` or
    `error` (also `error.message`); text its first non-empty lines. Not masked, not cut.
    """
    text = body.decode("utf-8", errors="replace")
    if "html" in content_type:
        found = _TITLE.search(text)
        title = " ".join(found.group(1).split()) if found else ""
        return title or None
    if "json" in content_type:
        said = _json_reason(text)
        if said is not None:
            return said
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(lines[:_REASON_LINES]) or None


def _json_reason(text: str) -> str | None:
    try:
        value = json_limits.loads(text)
    except ValueError:
        return None
    for _ in range(2):  # `{"error": {"message": ...}}` is looked into once
        if not isinstance(value, Mapping):
            return None
        found = next((value[key] for key in _REASON_KEYS if value.get(key)), None)
        if isinstance(found, str):
            return found.strip() or None
        value = found
    return None
