"""Which of a tool's icons the page shows: a `data:` image only, so that the page loads nothing.

An icon at an `https:` URL is not shown: opening the report would ask that server for it (and
tell it the report was opened), and the page's Content-Security-Policy allows `data:` images
alone. An SVG is safe here: in an `<img>` it runs no script and loads nothing.
"""

from __future__ import annotations

import re
from typing import Any

SHOWN_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"})
_DATA_URI = re.compile(r"data:([a-z0-9.+-]+/[a-z0-9.+-]+)[;,]", re.IGNORECASE)


def shown_icon(icons: Any) -> str | None:
    """The `src` of the icon to show from a `tool.call` event's `icons`: the first `data:` image
    of a type above, one not meant for a dark theme first (the page is light)."""
    if not isinstance(icons, list):
        return None
    shown = [i for i in icons if isinstance(i, dict) and _embeddable(i.get("src"))]
    light = [icon for icon in shown if icon.get("theme") != "dark"]
    chosen = light or shown
    return str(chosen[0]["src"]) if chosen else None


def _embeddable(src: Any) -> bool:
    found = _DATA_URI.match(src) if isinstance(src, str) else None
    return found is not None and found.group(1).lower() in SHOWN_TYPES
