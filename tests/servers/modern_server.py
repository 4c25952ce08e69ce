"""A hand-written MCP server (no SDK) that speaks only the 2026-07-28 protocol, over stdio or HTTP.

    --transport http   serves streamable HTTP on /mcp (`--host`, `--port`, 0 for a free one);
                       the socket is bound before `modern server ready on port N` goes to
                       stderr (over stdio: `modern server ready`)

It answers `server/discover` (naming `io.modelcontextprotocol/serverInfo` in its `_meta`),
refuses `initialize` and a probe at any other version with -32022 (`supported`, `requested`),
and refuses every other request whose `_meta` lacks the protocol version, the client's
capabilities or its identity (-32602), or, over HTTP, whose `MCP-Protocol-Version` header says
another version than its `_meta` (HTTP 400, -32020); `ping` is "method not found", as the
revision dropped it. Tools: `echo {text}`, `add {a, b}` (structured content under an output
schema) and `seen`, which answers with what the server got so far: the methods (notifications
included), the protocol versions of `_meta` and, over HTTP, of the headers.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import Any

VERSION = "2026-07-28"
META_KEYS = (
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
)
CACHE = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
TOOLS = [
    {
        "name": "echo",
        "title": "Echo",
        "description": "Answers with its text.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "add",
        "description": "Adds two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"sum": {"type": "integer"}},
            "required": ["sum"],
        },
    },
    {"name": "seen", "description": "What the server got.", "inputSchema": {"type": "object"}},
]


class Seen:
    """What the server got: methods, `_meta` versions, header versions (HTTP)."""

    lock = threading.Lock()
    methods: list[str] = []  # noqa: RUF012 - one server, one record
    versions: list[str | None] = []  # noqa: RUF012
    headers: list[str | None] = []  # noqa: RUF012


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def unsupported(request_id: Any, requested: Any) -> dict[str, Any]:
    data = {"supported": [VERSION], "requested": str(requested)}
    return error(request_id, -32022, "Unsupported protocol version", data)


def text(value: str) -> dict[str, Any]:
    content = [{"type": "text", "text": value}]
    return {"content": content, "isError": False, "resultType": "complete"}


def call(params: dict[str, Any]) -> dict[str, Any]:
    name, arguments = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        return text(str(arguments.get("text", "")))
    if name == "add":
        total = int(arguments.get("a", 0)) + int(arguments.get("b", 0))
        return {**text(str(total)), "structuredContent": {"sum": total}}
    with Seen.lock:
        record = {"methods": Seen.methods, "versions": Seen.versions, "headers": Seen.headers}
        return text(json.dumps(record))


def answer(message: dict[str, Any], header: str | None = None) -> dict[str, Any] | None:
    """The answer to one message (None for a notification)."""
    method, request_id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    meta = params.get("_meta") or {}
    with Seen.lock:
        Seen.methods.append(str(method))
        Seen.versions.append(meta.get(META_KEYS[0]))
        Seen.headers.append(header)
    if request_id is None:
        return None
    if method == "initialize":
        return unsupported(request_id, params.get("protocolVersion"))
    if missing := [key for key in META_KEYS if key not in meta]:
        return error(request_id, -32602, f"Invalid params: missing _meta keys: {missing}")
    if meta[META_KEYS[0]] != VERSION:
        return unsupported(request_id, meta[META_KEYS[0]])
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if method == "server/discover":
        info = {"io.modelcontextprotocol/serverInfo": {"name": "modern server", "version": "1"}}
        result = {"supportedVersions": [VERSION], "capabilities": {"tools": {}}, "_meta": info}
        return {**reply, "result": {**result, **CACHE}}
    if method == "tools/list":
        return {**reply, "result": {"tools": TOOLS, **CACHE}}
    if method == "tools/call":
        return {**reply, "result": call(params)}
    return error(request_id, -32601, f"Method not found: {method}")


def serve_http(host: str, port: int) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: dict[str, Any] | None = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            header = self.headers.get("MCP-Protocol-Version")
            meta = (message.get("params") or {}).get("_meta") or {}
            request_id = message.get("id")
            checked = request_id is not None and message.get("method") != "initialize"
            if checked and (header is None or header != meta.get(META_KEYS[0], header)):
                why = "MCP-Protocol-Version does not match _meta"
                return self._reply(400, error(request_id, -32020, why))
            reply = answer(message, header)
            if reply is None:
                return self._reply(202)
            self._reply(400 if "error" in reply else 200, reply)

        def do_GET(self) -> None:
            self._reply(405)  # no sessions, no stream of the server's own

        def do_DELETE(self) -> None:
            self._reply(405)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    print(f"modern server ready on port {server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    if options.transport == "http":
        serve_http(options.host, options.port)
        return
    print("modern server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if line.strip():
            reply = answer(json.loads(line))
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
