"""A stdio MCP server written by hand (no SDK) whose listing carries cache hints and icons.

    --ttl-ms N     tools/list results of a 2026-07-28 session say `ttlMs: N` (default 0: the
                   revision requires the field); results of an older session carry none
    --log PATH     appends the method of each request it gets, one a line

It speaks `server/discover` (2026-07-28) and the `initialize` handshake (2025-11-25), so each
client reaches the newest protocol it speaks. One tool, `pinged`, answers `pong`; it lists two
icons: a PNG as a data URI (light theme) and an https URL (dark theme, 48x48).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
    "z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
ICONS = [
    {"src": PNG, "mimeType": "image/png", "theme": "light"},
    {"src": "https://icons.example/pinged.png", "sizes": ["48x48"], "theme": "dark"},
]
TOOL = {
    "name": "pinged",
    "title": "Pinged",
    "description": "Answers pong.",
    "inputSchema": {"type": "object", "properties": {}},
    "icons": ICONS,
}
INFO = {"name": "hints", "version": "1.0.0"}


def modern_result(message: dict[str, Any], body: dict[str, Any], ttl_ms: int) -> dict[str, Any]:
    """`body` as the revision the request speaks wants it (cacheable lists carry hints)."""
    meta = (message.get("params") or {}).get("_meta") or {}
    if meta.get("io.modelcontextprotocol/protocolVersion") != MODERN:
        return body
    hints = {"ttlMs": ttl_ms, "cacheScope": "private"} if message["method"] == "tools/list" else {}
    return {"resultType": "complete", **hints, **body}


def answer(message: dict[str, Any], ttl_ms: int) -> dict[str, Any]:
    """The result of one request, or an `error`."""
    method = message["method"]
    if method == "server/discover":
        return {
            "result": {
                "resultType": "complete",
                "ttlMs": 0,
                "cacheScope": "private",
                "supportedVersions": [MODERN, LEGACY],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": INFO},
            }
        }
    if method == "initialize":
        body = {"protocolVersion": LEGACY, "capabilities": {"tools": {}}, "serverInfo": INFO}
        return {"result": body}
    if method == "tools/list":
        return {"result": modern_result(message, {"tools": [TOOL]}, ttl_ms)}
    if method == "tools/call":
        content = [{"type": "text", "text": "pong"}]
        return {"result": modern_result(message, {"content": content}, ttl_ms)}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    """Serve stdin/stdout until stdin closes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--ttl-ms", type=int, default=0)
    parser.add_argument("--log")
    options = parser.parse_args()
    for line in sys.stdin:
        message = json.loads(line)
        if "method" not in message or "id" not in message:
            continue  # a notification, or the answer to a request of ours (none is sent)
        if options.log:
            with open(options.log, "a", encoding="utf-8") as log:
                log.write(message["method"] + "\n")
        reply = {"jsonrpc": "2.0", "id": message["id"], **answer(message, options.ttl_ms)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
