"""The `icons` of a listed tool, read alike whichever client listed it.

An icon is `{"src", "mimeType"?, "sizes"?, "theme"?}` (MCP 2025-11-25 and later). devall shows
icons (`tools list --json`, the HTML report) and never fetches one: a `src` is only ever text
it passes on, or a `data:` image the report embeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The longest `src` a tool call's event keeps: an icon is a picture a few hundred bytes long,
# and a data URI of megabytes would be written again with every call.
TRACE_SRC_CHARS = 8192
_THEMES = ("light", "dark")
_KEYS = ("src", "mimeType", "sizes", "theme")


def icons_problem(value: Any) -> str | None:
    """What makes a listed `icons` value invalid as the MCP SDK checks it (`.2.src: a string
    is required`), or None: a client refuses the listing then, as fastmcp's does."""
    if value is None:
        return None
    if not isinstance(value, list):
        return ": a list is required"
    for number, item in enumerate(value):
        if not isinstance(item, Mapping):
            return f".{number}: an object is required"
        if not isinstance(item.get("src"), str):
            return f".{number}.src: a string is required"
        if item.get("mimeType") is not None and not isinstance(item["mimeType"], str):
            return f".{number}.mimeType: a string is required"
        sizes = item.get("sizes")
        if sizes is not None and not (
            isinstance(sizes, list) and all(isinstance(size, str) for size in sizes)
        ):
            return f".{number}.sizes: a list of strings is required"
        if item.get("theme") not in (None, *_THEMES):
            return f".{number}.theme: 'light' or 'dark' is required"
    return None


def listed_icons(value: Any) -> tuple[Mapping[str, Any], ...] | None:
    """The icons of a valid listing (JSON objects, or the SDK's models) with the keys MCP
    defines, None for none."""
    if not isinstance(value, list) or not value:
        return None
    return tuple(_icon(item) for item in value)


def _icon(item: Any) -> dict[str, Any]:
    if hasattr(item, "model_dump"):  # the SDK's `Icon`
        item = item.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {key: item[key] for key in _KEYS if item.get(key) is not None}


def traced_icons(icons: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """The icons a tool call's event records: those whose `src` is short enough."""
    return [dict(icon) for icon in icons or () if len(str(icon.get("src"))) <= TRACE_SRC_CHARS]
