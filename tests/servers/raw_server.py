"""A stdio MCP server written by hand (no SDK), for protocol edges both of devall's clients meet.

    --pages N        tools/list answers in N pages (nextCursor), one tool a page
    --modern-only    refuses the initialize handshake (-32022, it speaks 2026-07-28 only)
    --no-schema      lists a tool without an inputSchema
    --asks METHOD    during each call, asks the client METHOD first and answers with its reply
    --cancel-asked   with --asks: cancels its own request at once (notifications/cancelled) and
                     answers the call without waiting for the client's reply
    --string-ids     echoes the id of every request it answers as a string ("1" for 1)
    --string-progress-tokens  during each call, reports progress with the token as a string
    --exit-on-list   exits (status 3) when asked for tools/list
    --silent-handshake  never answers initialize; logs on stderr each message it gets meanwhile

Tools: `tool_<i>` (one a page) answer `called tool_<i>`; `shaped` declares an output schema
{"n": integer} and returns structured content as asked: `{"mode": "none" | "wrong" | "right"}`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

SHAPED = {
    "name": "shaped",
    "description": "Returns structured content as asked.",
    "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}},
    "outputSchema": {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    },
}


STRING_IDS = [False]


def send(message: dict[str, Any]) -> None:
    if STRING_IDS[0] and "method" not in message and isinstance(message.get("id"), int):
        message = {**message, "id": str(message["id"])}
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def receive() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def tool(number: int, with_schema: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": f"tool_{number}", "description": f"Tool {number}."}
    if with_schema:
        entry["inputSchema"] = {"type": "object", "properties": {}}
    return entry


def call_result(name: str, arguments: dict[str, Any], asked: Any) -> dict[str, Any]:
    if name == "shaped":
        mode = arguments.get("mode")
        text = {"type": "text", "text": f"shaped {mode}"}
        if mode == "none":
            return {"content": [text]}
        value = "three" if mode == "wrong" else 3
        return {"content": [text], "structuredContent": {"n": value}}
    said = f"called {name}" + (f"; asked: {json.dumps(asked)}" if asked is not None else "")
    return {"content": [{"type": "text", "text": said}]}


def ask(method: str) -> dict[str, Any]:
    """The params of what the server asks the client: an elicitation needs a message and form."""
    if method == "elicitation/create":
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        return {"message": "Your name?", "requestedSchema": schema}
    return {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=1)
    parser.add_argument("--modern-only", action="store_true")
    parser.add_argument("--no-schema", action="store_true")
    parser.add_argument("--asks", default=None)
    parser.add_argument("--cancel-asked", action="store_true")
    parser.add_argument("--string-ids", action="store_true")
    parser.add_argument("--string-progress-tokens", action="store_true")
    parser.add_argument("--exit-on-list", action="store_true")
    parser.add_argument("--silent-handshake", action="store_true")
    options = parser.parse_args()
    STRING_IDS[0] = options.string_ids
    print("raw server ready", file=sys.stderr, flush=True)
    asked_id = 1000
    while (message := receive()) is not None:
        method, request_id = message.get("method"), message.get("id")
        if options.silent_handshake:
            print(f"raw server got {method}", file=sys.stderr, flush=True)
            continue
        if request_id is None or method is None:
            continue  # notifications, and answers outside a call
        params = message.get("params") or {}
        if method == "tools/list" and options.exit_on_list:
            sys.exit(3)
        token = (params.get("_meta") or {}).get("progressToken")
        if method == "tools/call" and options.string_progress_tokens and token is not None:
            progress = {"progressToken": str(token), "progress": 1, "total": 2, "message": "half"}
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        if method == "initialize":
            if options.modern_only:
                error = {
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"supported": ["2026-07-28"], "requested": params["protocolVersion"]},
                }
                send({"jsonrpc": "2.0", "id": request_id, "error": error})
                continue
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw server", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            page = int(params.get("cursor") or 0)
            tools = [tool(page, not options.no_schema)]
            if page == 0:
                tools.append(SHAPED)
            result = {"tools": tools}
            if page + 1 < options.pages:
                result["nextCursor"] = str(page + 1)
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/call":
            asked = None
            if options.asks:
                asked_id += 1
                asking = {"jsonrpc": "2.0", "id": asked_id, "method": options.asks}
                send({**asking, "params": ask(options.asks)})
                if options.cancel_asked:
                    cancel = {"requestId": asked_id, "reason": "no longer needed"}
                    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
                    asked = "cancelled"
                else:
                    answer = receive()
                    asked = answer.get("result", answer.get("error")) if answer else None
            result = call_result(params["name"], params.get("arguments") or {}, asked)
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


if __name__ == "__main__":
    main()
