"""A hand-written stdio MCP server (no SDK) whose names, descriptions and results hold odd text.

    python odd_text_server.py     # serves the tools below; `odd text server ready` on stderr

Its texts carry what a careless client mishandles: lone UTF-16 surrogates (`"\\ud800"` is a
valid JSON escape but not Unicode), Rich markup and emoji codes, tabs, and terminal control
sequences (clear screen, an OSC window title, an OSC 52 clipboard write). Each line it logs on
stderr carries the same sequences, and so does its server name (with markup too). Tools:
    lone      text, structuredContent and its description hold a lone surrogate
    markup    its description reads `Reads [/etc/hosts]-style paths`; answers MARKUP
    controls  answers CONTROLS, and its description holds them too
    echo      returns `text` unchanged (what the server was sent)
    notify    sends a log notification holding a lone surrogate and ESC, then answers `sent`
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHOD_NOT_FOUND = -32601
LONE = "\ud800"
MARKUP = ":bug: [bold]x[/bold]\tcol2 [/etc/hosts] :warning:"
CLEAR_SCREEN = "\x1b[2J"
OSC_TITLE = "\x1b]0;pwned\x07"
OSC_CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"
CONTROLS = f"before{CLEAR_SCREEN}{OSC_TITLE}{OSC_CLIPBOARD}\x9b31m\x7fafter"
LOG_LINE = f"log {CONTROLS} {LONE}"
SERVER_NAME = f"odd [/x] :bug: {LONE}{OSC_TITLE}"


def tool(name: str, description: str, **params: str) -> dict[str, Any]:
    """A tool description with required parameters of the given JSON types."""
    schema = {
        "type": "object",
        "properties": {
            key: {"type": kind, "description": f"{key} {LONE}"} for key, kind in params.items()
        },
        "required": list(params),
    }
    return {"name": name, "description": description, "inputSchema": schema}


TOOLS = [
    tool("lone", f"Returns a lone surrogate {LONE} in text and structure."),
    tool("markup", "Reads [/etc/hosts]-style paths; :warning: [bold]x[/bold]"),
    tool("controls", f"Says {CONTROLS}"),
    tool("echo", "Return the text unchanged.", text="string"),
    tool("notify", "Send a log notification with odd text."),
]


def send(message: dict[str, Any]) -> None:
    """Write one JSON-RPC message line (json escapes the surrogate as `\\ud800`)."""
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(request_id: Any, value: Any) -> None:
    """A JSON-RPC result."""
    send({"jsonrpc": "2.0", "id": request_id, "result": value})


def text_result(request_id: Any, text: str, **extra: Any) -> None:
    """A tool result with one text block."""
    result(request_id, {"content": [{"type": "text", "text": text}], "isError": False, **extra})


def call(request_id: Any, params: dict[str, Any]) -> None:
    """Answer one tools/call."""
    name = params.get("name")
    args = params.get("arguments") or {}
    print(LOG_LINE, file=sys.stderr, flush=True)
    if name == "lone":
        structured = {"value": f"a{LONE}b", f"key{LONE}": [LONE]}
        text_result(request_id, f"a{LONE}b", structuredContent=structured)
    elif name == "markup":
        text_result(request_id, MARKUP)
    elif name == "controls":
        text_result(request_id, CONTROLS)
    elif name == "echo":
        text_result(request_id, str(args.get("text", "")))
    elif name == "notify":
        log = {"level": "warning", "logger": f"odd{LONE}", "data": f"note {LONE}{CLEAR_SCREEN}"}
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
        text_result(request_id, "sent")
    else:
        error = {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}
        result(request_id, error)


def handle(message: dict[str, Any]) -> None:
    """Answer one request; notifications need no answer."""
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") or {}
    if request_id is None:
        return
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
        info = {"name": SERVER_NAME, "version": "1.0"}
        caps = {"tools": {"listChanged": False}, "logging": {}}
        result(request_id, {"protocolVersion": version, "capabilities": caps, "serverInfo": info})
    elif method == "tools/list":
        result(request_id, {"tools": TOOLS})
    elif method == "tools/call":
        call(request_id, params)
    elif method in ("ping", "logging/setLevel"):
        result(request_id, {})
    else:  # server/discover included: only the handshake era is spoken here
        error = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
        send({"jsonrpc": "2.0", "id": request_id, "error": error})


def main() -> None:
    """Serve until stdin closes."""
    print(f"odd text server ready {CONTROLS}", file=sys.stderr, flush=True)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            handle(message)


if __name__ == "__main__":
    main()
