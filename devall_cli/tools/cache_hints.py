"""How long a server's tool listing is kept: `cache_ttl`, else the server's cache hint.

A 2026-07-28 server says in each list result how long the client may keep it (`ttlMs`) and
whether the result may be shared across users (`cacheScope`). devall keeps a listing in memory,
for one run and one server, so the scope changes nothing. Which time applies, first that is set:
the workflow's explicit `cache_ttl` (the operator knows the server best, and a server of the
SDK that sets no hint says `ttlMs: 0`), the hint of the server's last listing (capped at a
day, as by the MCP SDK), the tooling type's default.

Hints count on a 2026-07-28 session only, as in the MCP SDK: the field is not part of an older
revision, and the SDK drops it there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_TTL_MS = 24 * 3600 * 1000  # as the MCP SDK's client cache caps it
FIRST_HINTED_VERSION = "2026-07-28"


def hinted(version: str | None) -> bool:
    """Whether a session at `version` carries cache hints (2026-07-28 and later)."""
    return version is not None and version[:4].isdigit() and version >= FIRST_HINTED_VERSION


def ttl_hint(result: Mapping[str, Any], version: str | None) -> int | None:
    """The `ttlMs` of a list result on a session at `version`; None if it carries none.

    A negative value reads as 0 (immediately stale), as the MCP SDK floors it.
    """
    value = result.get("ttlMs")
    if not hinted(version) or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return max(0, int(value))


def listing_ttl(configured: float | None, hint_ms: int | None, default: float) -> float:
    """Seconds a listing is kept: the configured `cache_ttl`, else the hint, else `default`."""
    if configured is not None:
        return configured
    if hint_ms is not None:
        return min(hint_ms, MAX_TTL_MS) / 1000
    return default
