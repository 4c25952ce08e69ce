"""A hand-written MCP server (no SDK) whose names, descriptions and results hold odd text.

    python odd_text_server.py                          # stdio; `odd text server ready` on stderr
    python odd_text_server.py --transport http --port 0   # HTTP; `... ready on port N` on stderr

Over HTTP it answers each request with a `text/event-stream` of its messages (a notification,
then the response), so a lone surrogate reaches the client through the streamable HTTP reader.

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

import argparse
import json
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


Send = Callable[[dict[str, Any]], None]


def write_line(message: dict[str, Any]) -> None:
    """Write one JSON-RPC message line (json escapes the surrogate as `\\ud800`)."""
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(send: Send, request_id: Any, value: Any) -> None:
    """A JSON-RPC result."""
    send({"jsonrpc": "2.0", "id": request_id, "result": value})


def text_result(send: Send, request_id: Any, text: str, **extra: Any) -> None:
    """A tool result with one text block."""
    content = [{"type": "text", "text": text}]
    result(send, request_id, {"content": content, "isError": False, **extra})


def call(send: Send, request_id: Any, params: dict[str, Any]) -> None:
    """Answer one tools/call."""
    name = params.get("name")
    args = params.get("arguments") or {}
    print(LOG_LINE, file=sys.stderr, flush=True)
    if name == "lone":
        structured = {"value": f"a{LONE}b", f"key{LONE}": [LONE]}
        text_result(send, request_id, f"a{LONE}b", structuredContent=structured)
    elif name == "markup":
        text_result(send, request_id, MARKUP)
    elif name == "controls":
        text_result(send, request_id, CONTROLS)
    elif name == "echo":
        text_result(send, request_id, str(args.get("text", "")))
    elif name == "notify":
        log = {"level": "warning", "logger": f"odd{LONE}", "data": f"note {LONE}{CLEAR_SCREEN}"}
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
        text_result(send, request_id, "sent")
    else:
        error = {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}
        result(send, request_id, error)


def handle(message: dict[str, Any], send: Send) -> None:
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
        answer = {"protocolVersion": version, "capabilities": caps, "serverInfo": info}
        result(send, request_id, answer)
    elif method == "tools/list":
        result(send, request_id, {"tools": TOOLS})
    elif method == "tools/call":
        call(send, request_id, params)
    elif method in ("ping", "logging/setLevel"):
        result(send, request_id, {})
    else:  # server/discover included: only the handshake era is spoken here
        error = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
        send({"jsonrpc": "2.0", "id": request_id, "error": error})


class _Handler(BaseHTTPRequestHandler):
    """Streamable HTTP, just enough: POST answers with an event stream, GET has no stream."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        messages: list[dict[str, Any]] = []
        handle(json.loads(body), messages.append)
        if not messages:
            self._answer(202, b"", "application/json")
            return
        events = "".join(f"event: message\ndata: {json.dumps(m)}\n\n" for m in messages)
        self._answer(200, events.encode(), "text/event-stream")

    def do_GET(self) -> None:
        self._answer(405, b"", "text/plain")

    def do_DELETE(self) -> None:
        self._answer(200, b"", "text/plain")

    def _answer(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Mcp-Session-Id", "odd-session")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    """Serve stdio until stdin closes, or HTTP until killed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.transport == "http":
        server = ThreadingHTTPServer((args.host, args.port), _Handler)
        port = server.server_address[1]
        print(f"odd text server ready on port {port}", file=sys.stderr, flush=True)
        server.serve_forever()
        return
    print(f"odd text server ready {CONTROLS}", file=sys.stderr, flush=True)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            handle(message, write_line)


if __name__ == "__main__":
    main()
