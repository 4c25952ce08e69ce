"""A streamable HTTP MCP server of the 2026-07-28 protocol only, written by hand (no SDK), for
its request headers and multi-round-trip calls.

    python tests/servers/headers_server.py [--port N]   (0: a free one, named on stderr)

Answers `server/discover` (`initialize` is refused with -32022) and lists:
- `echo_headers {region, note, query}`: `region` and `note` designated with `x-mcp-header`
  (`Region`, `Note`); answers with the `Mcp-*` headers of its request, as JSON;
- `bad_header {score}`: `x-mcp-header` on a number, which clients must not accept (it answers
  `called bad_header` if called all the same);
- `confirm {}`: first answers `input_required` with an elicitation (`confirmed`, a boolean
  defaulting to true) and a `requestState`; sent again with the answer and the state, it says
  what came back (`confirmed=true state=ok ids differ`), in a result without `resultType`
  (which clients read as complete).
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VERSION = "2026-07-28"
STATE = "opaque-state-1"
CACHED = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
FIRST_IDS: list[Any] = []  # the id of each first `confirm` call


def schema(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


TOOLS = [
    {
        "name": "echo_headers",
        "description": "The Mcp-* headers of this request.",
        "inputSchema": schema(
            region={"type": "string", "x-mcp-header": "Region"},
            note={"type": "string", "x-mcp-header": "Note"},
            query={"type": "string"},
        ),
    },
    {
        "name": "bad_header",
        "description": "An x-mcp-header on a number.",
        "inputSchema": schema(score={"type": "number", "x-mcp-header": "Score"}),
    },
    {"name": "confirm", "description": "Asks for a confirmation first.", "inputSchema": schema()},
]


def text(value: str) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": value}]}


def confirm(request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    """`input_required` the first time, then what the client sent back (no `resultType`)."""
    responses = params.get("inputResponses")
    if responses is None:
        FIRST_IDS.append(request_id)
        elicit = {
            "message": "Go ahead?",
            "requestedSchema": schema(confirmed={"type": "boolean", "default": True}),
        }
        return {
            "resultType": "input_required",
            "inputRequests": {"ask": {"method": "elicitation/create", "params": elicit}},
            "requestState": STATE,
        }
    content = (responses.get("ask") or {}).get("content") or {}
    state = "ok" if params.get("requestState") == STATE else repr(params.get("requestState"))
    ids = "ids differ" if request_id not in FIRST_IDS else "same id"
    said = f"confirmed={json.dumps(content.get('confirmed'))} state={state} {ids}"
    return {"content": [{"type": "text", "text": said}]}


def answer(message: dict[str, Any], headers: Any) -> dict[str, Any]:
    """The result of one request."""
    method, params = message.get("method"), message.get("params") or {}
    if method == "server/discover":
        info = {"name": "headers-server", "version": "1.0.0"}
        return {**CACHED, "supportedVersions": [VERSION], "capabilities": {"tools": {}},
                "serverInfo": info}  # fmt: skip
    if method == "tools/list":
        return {**CACHED, "tools": TOOLS}
    name = params.get("name")
    if name == "echo_headers":
        mirrored = {k.lower(): v for k, v in headers.items() if k.lower().startswith("mcp-")}
        mirrored.pop("mcp-protocol-version", None)
        return text(json.dumps(mirrored, sort_keys=True))
    if name == "confirm":
        return confirm(message.get("id"), params)
    return text(f"called {name}")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: dict[str, Any] | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if message.get("id") is None or message.get("method") is None:
            return self._reply(202)
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if message["method"] == "initialize":
            reply["error"] = {"code": -32022, "message": "Unsupported protocol version",
                              "data": {"supported": [VERSION]}}  # fmt: skip
            return self._reply(400, reply)
        reply["result"] = answer(message, self.headers)
        self._reply(200, reply)

    def do_GET(self) -> None:
        self._reply(405)

    def do_DELETE(self) -> None:
        self._reply(405)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--transport", choices=["http"], default="http")  # as serve.py starts it
    options = parser.parse_args()
    server = ThreadingHTTPServer((options.host, options.port), Handler)
    server.daemon_threads = True
    print(f"headers server ready on port {server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
