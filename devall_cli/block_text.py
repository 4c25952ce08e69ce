"""How a tool result's blocks read as text: shared by the tool layer and the renderers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def plain(value: Any) -> Any:
    """Mappings and sequences turned into dicts and lists, so json can write them."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def render_link(
    uri: str, name: str | None, mime_type: str | None, description: str | None
) -> str:
    """`[resource link: name <uri> (mime): description]`."""
    head = f"{name} <{uri}>" if name else f"<{uri}>"
    mime = f" ({mime_type})" if mime_type else ""
    about = f": {description}" if description else ""
    return f"[resource link: {head}{mime}{about}]"


_JSON_START = tuple('{["-0123456789tfn')


def repeats_text(data: Any, texts: Sequence[str]) -> bool:
    """Whether structured content `data` says nothing the texts do not already say.

    Servers send the same value as text for older clients (the MCP spec asks them to), and
    FastMCP wraps a tool's plain return value as `{"result": value}`: either way the text (or
    one of the texts) is the value, as JSON or, for a string, as itself.
    """
    wanted = plain(data)
    wrapped = isinstance(wanted, dict) and len(wanted) == 1 and "result" in wanted
    inner = wanted["result"] if wrapped else _ABSENT
    candidates = [*texts, "\n".join(texts)] if len(texts) > 1 else list(texts)
    for text in candidates:
        if isinstance(inner, str) and text == inner:
            return True
        if text.lstrip().startswith(_JSON_START):
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if value == wanted or (inner is not _ABSENT and value == inner):
                return True
    return False


_ABSENT = object()
