"""A minimal stdio MCP server written with the standard library only (no fastmcp import).

    python benchmarks/light_server.py

It answers `initialize` (refusing the `server/discover` probe, so clients fall back to it),
`tools/list` with one `echo` tool, `tools/call` and `ping`. It starts in a few tens of
milliseconds of CPU, so a workflow with many of them shows how devall starts servers
concurrently without the servers' own start-up CPU hiding it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL = "2025-11-25"
METHOD_NOT_FOUND = -32601
ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of a request, or None for an unknown method."""
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", PROTOCOL),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "light server", "version": "1.0"},
        }
    if method == "tools/list":
        return {"tools": [ECHO_TOOL]}
    if method == "tools/call":
        text = str(params.get("arguments", {}).get("text", ""))
        return {"content": [{"type": "text", "text": text}], "isError": False}
    if method == "ping":
        return {}
    return None


def main() -> None:
    """Serve newline-delimited JSON-RPC on stdin/stdout until stdin closes."""
    print("light server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "id" not in message or "method" not in message:
            continue  # a notification or a response: nothing to answer
        result = answer(message["method"], message.get("params") or {})
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
