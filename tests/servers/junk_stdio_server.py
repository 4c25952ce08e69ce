"""A hand-written stdio MCP server (no SDK) that pollutes its stdout, as servers in the wild do.

It serves one tool, `echo(text)`. It prints junk lines on stdout before the handshake and during
every call, and it glues junk without a newline to the front of every `tools/call` response line.
While listing tools it also writes a JSON object that claims to be JSON-RPC but is no message.
`server/discover` gets "method not found", so clients fall back to the `initialize` handshake.

    python junk_stdio_server.py          # writes `junk server ready` to stderr
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
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


def say(text: str) -> None:
    """Write raw text to stdout (junk or a message line)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def reply(request_id: Any, result: dict[str, Any], *, glue: str = "") -> None:
    """A JSON-RPC result line, optionally with junk glued to its front."""
    say(glue + json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")


def error(request_id: Any, code: int, message: str) -> None:
    """A JSON-RPC error line."""
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    say(json.dumps(body) + "\n")


def initialize(request_id: Any, params: dict[str, Any]) -> None:
    """Answer the handshake with the client's version when we know it."""
    asked = params.get("protocolVersion")
    version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
    say("junk: initializing, please stand by\n")
    reply(
        request_id,
        {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "junk stdio server", "version": "1.0"},
        },
    )


def call_tool(request_id: Any, params: dict[str, Any]) -> None:
    """Run `echo`; the response line carries glued junk."""
    if params.get("name") != "echo":
        reply(
            request_id,
            {"content": [{"type": "text", "text": "unknown tool"}], "isError": True},
        )
        return
    text = str((params.get("arguments") or {}).get("text", ""))
    say(f"junk: echoing {len(text)} characters\n")
    say("{not json at all}\n")
    content = {"content": [{"type": "text", "text": text}], "isError": False}
    reply(request_id, content, glue="GLUED-JUNK ")


def handle(message: dict[str, Any]) -> None:
    """Dispatch one incoming message."""
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") or {}
    if request_id is None:
        return  # notifications (initialized, cancelled) need no answer
    if method == "initialize":
        initialize(request_id, params)
    elif method == "ping":
        reply(request_id, {})
    elif method == "tools/list":
        say("junk: listing tools\n")
        say('{"jsonrpc": "2.0", "note": "an object that is no JSON-RPC message"}\n')
        reply(request_id, {"tools": [ECHO_TOOL]})
    elif method == "tools/call":
        call_tool(request_id, params)
    else:  # server/discover included: we only speak the handshake era
        error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")


def main() -> None:
    """Serve until stdin closes."""
    say("junk: server starting up\n")
    say("junk: loading plugins... done\n")
    print("junk server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            print(f"junk server: bad input line {line!r}", file=sys.stderr, flush=True)
            continue
        handle(message)


if __name__ == "__main__":
    main()
