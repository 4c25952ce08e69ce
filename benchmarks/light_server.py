"""A minimal stdio MCP server written with the standard library only (no fastmcp import).

    python benchmarks/light_server.py [--tools N]

It answers `initialize` (refusing the `server/discover` probe, so clients fall back to it),
`tools/list` with one `echo` tool, `tools/call` and `ping`. It starts in a few tens of
milliseconds of CPU, so a workflow with many of them shows how devall starts servers
concurrently without the servers' own start-up CPU hiding it.

With `--tools N` it lists N more tools (`tool_00000`, ... with a described two-parameter schema
of about 300 bytes each, answering `called <name>`), for big surfaces; `big {size}` answers
`size` bytes of text (a large tool result).
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


BIG_TOOL = {
    "name": "big",
    "description": "Return `size` bytes of text.",
    "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}},
}
TOOLS: list[dict[str, Any]] = [ECHO_TOOL, BIG_TOOL]


def generated_tool(number: int) -> dict[str, Any]:
    """One of the `--tools N` tools: a realistic name, description and two-parameter schema."""
    return {
        "name": f"tool_{number:05d}",
        "description": f"Look up record {number} of the catalogue and return its fields.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for in the record."},
                "limit": {"type": "integer", "description": "How many fields at most."},
            },
            "required": ["query"],
        },
    }


def call(params: dict[str, Any]) -> dict[str, Any]:
    """The result of `tools/call`."""
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if name == "big":
        text = "x" * int(arguments.get("size", 0))
    elif name == "echo":
        text = str(arguments.get("text", ""))
    else:
        text = f"called {name}"
    return {"content": [{"type": "text", "text": text}], "isError": False}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of a request, or None for an unknown method."""
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", PROTOCOL),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "light server", "version": "1.0"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call(params)
    if method == "ping":
        return {}
    return None


def main() -> None:
    """Serve newline-delimited JSON-RPC on stdin/stdout until stdin closes."""
    if sys.argv[1:2] == ["--tools"]:
        TOOLS.extend(generated_tool(i) for i in range(int(sys.argv[2])))
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
