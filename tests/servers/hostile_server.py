"""A hand-written stdio MCP server (no SDK) that answers with every kind of garbage.

    python hostile_server.py                 # the hostile tools below
    python hostile_server.py --duplicates    # tools/list names `echo` twice
    python hostile_server.py --odd-names     # tools named `my.tool/v2`, `name with spaces`, ...
    python hostile_server.py --fail-with-env NAME   # print $NAME on stderr, exit 3 before ready

It writes `hostile server ready` to stderr once it reads stdin. `server/discover` gets "method
not found", so clients fall back to the `initialize` handshake.

Well-behaved tools: `echo(text)`, `env(name)` (a variable of the server's environment), `log(text)`
(writes the text on stderr), `flood(chars)` (a text result of exactly `chars` characters ending in
`<END>`). Hostile tools, each answering its call with:
    no_id          a response without `id` (the call can only time out)
    not_json       a line that looks like a JSON-RPC response but is not JSON
    bad_result     a response whose `result` is a string, not an object
    wrong_version  a response with `"jsonrpc": "1.0"`
    wrong_types    `content` that is not a list and `isError` that is a string
    bad_base64     an image block whose data is not base64
    unknown_block  a content block of an unknown type
    huge_line      a response line of 17 MB, longer than devall keeps
In `--odd-names` mode every tool answers `called <the name it was called by>`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHOD_NOT_FOUND = -32601
END = "<END>"
LONG_NAME = "long_" + "n" * 95  # 100 characters, all of them allowed
LONG_NAME_TWIN = "long_" + "n" * 94 + "x"  # the same first 64 characters
HUGE_LINE = 17 * 1024 * 1024
ODD_NAMES = ("my.tool/v2", "name with spaces", LONG_NAME, LONG_NAME_TWIN, "ok_name")


def tool(tool_name: str, description: str, **params: str) -> dict[str, Any]:
    """A tool description with parameters of the given JSON types (all required)."""
    schema = {
        "type": "object",
        "properties": {key: {"type": kind} for key, kind in params.items()},
        "required": list(params),
    }
    return {"name": tool_name, "description": description, "inputSchema": schema}


BASIC_TOOLS = [
    tool("echo", "Return the text unchanged.", text="string"),
    tool("env", "A variable of the server's environment.", name="string"),
    tool("log", "Write the text on the server's stderr.", text="string"),
    tool("flood", "A text result of exactly `chars` characters.", chars="integer"),
]
HOSTILE_NAMES = (
    "no_id",
    "not_json",
    "bad_result",
    "wrong_version",
    "wrong_types",
    "bad_base64",
    "unknown_block",
    "huge_line",
)
HOSTILE_TOOLS = [tool(name, f"Answers with garbage: {name}.") for name in HOSTILE_NAMES]


def say(text: str) -> None:
    """Write one raw line to stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def send(message: dict[str, Any]) -> None:
    """Write one JSON-RPC message line."""
    say(json.dumps(message))


def result(request_id: Any, value: Any) -> None:
    """A JSON-RPC result."""
    send({"jsonrpc": "2.0", "id": request_id, "result": value})


def text_result(request_id: Any, text: str, *, is_error: bool = False) -> None:
    """A tool result with one text block."""
    result(request_id, {"content": [{"type": "text", "text": text}], "isError": is_error})


def basic_call(request_id: Any, name: str, args: dict[str, Any]) -> bool:
    """Answer a well-behaved tool; False when `name` is not one."""
    if name == "echo":
        text_result(request_id, str(args.get("text", "")))
    elif name == "env":
        text_result(request_id, os.environ.get(str(args.get("name", "")), ""))
    elif name == "log":
        print(f"hostile server log: {args.get('text', '')}", file=sys.stderr, flush=True)
        text_result(request_id, "logged")
    elif name == "flood":
        chars = int(args.get("chars", 0))
        body = ("0123456789" * (chars // 10 + 1))[: max(chars - len(END), 0)]
        text_result(request_id, body + END)
    else:
        return False
    return True


def hostile_call(request_id: Any, name: str) -> bool:
    """Answer a hostile tool with its garbage; False when `name` is not one."""
    content = [{"type": "text", "text": "fine"}]
    answers: dict[str, Callable[[], None]] = {
        "no_id": lambda: send({"jsonrpc": "2.0", "result": {"content": content}}),
        "not_json": lambda: say(
            '{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "result": {"content": [}'
        ),
        "bad_result": lambda: result(request_id, "a string where an object belongs"),
        "wrong_version": lambda: send(
            {"jsonrpc": "1.0", "id": request_id, "result": {"content": content}}
        ),
        "wrong_types": lambda: result(request_id, {"content": "not a list", "isError": "yes"}),
        "bad_base64": lambda: result(
            request_id,
            {"content": [{"type": "image", "data": "***not base64!***", "mimeType": "image/png"}]},
        ),
        "unknown_block": lambda: result(
            request_id, {"content": [{"type": "hologram", "data": "3d"}, *content]}
        ),
        "huge_line": lambda: text_result(request_id, "x" * HUGE_LINE),
    }
    answer = answers.get(name)
    if answer is None:
        return False
    answer()
    return True


class Server:
    """Dispatches requests for one mode."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def tools(self) -> list[dict[str, Any]]:
        if self.mode == "duplicates":
            return [*BASIC_TOOLS, tool("echo", "A second tool named echo.", text="string")]
        if self.mode == "odd-names":
            return [tool(name, f"The tool called {name!r}.") for name in ODD_NAMES]
        return [*BASIC_TOOLS, *HOSTILE_TOOLS]

    def call(self, request_id: Any, params: dict[str, Any]) -> None:
        name = str(params.get("name"))
        args = params.get("arguments") or {}
        if self.mode == "odd-names" and name in ODD_NAMES:
            text_result(request_id, f"called {name}")
        elif not (basic_call(request_id, name, args) or hostile_call(request_id, name)):
            text_result(request_id, f"unknown tool: {name}", is_error=True)

    def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params") or {}
        if request_id is None:
            return  # notifications need no answer
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
            info = {"name": "hostile server", "version": "1.0"}
            caps = {"tools": {"listChanged": False}}
            result(
                request_id, {"protocolVersion": version, "capabilities": caps, "serverInfo": info}
            )
        elif method == "ping":
            result(request_id, {})
        elif method == "tools/list":
            result(request_id, {"tools": self.tools()})
        elif method == "tools/call":
            self.call(request_id, params)
        else:  # server/discover included: only the handshake era is spoken here
            error = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


def main() -> None:
    """Serve until stdin closes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--duplicates", action="store_true")
    parser.add_argument("--odd-names", action="store_true")
    parser.add_argument("--fail-with-env", metavar="NAME")
    args = parser.parse_args()
    if args.fail_with_env:
        value = os.environ.get(args.fail_with_env, "")
        print(f"hostile server: cannot start with {args.fail_with_env}={value}", file=sys.stderr)
        sys.exit(3)
    mode = "duplicates" if args.duplicates else "odd-names" if args.odd_names else "hostile"
    server = Server(mode)
    print("hostile server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            server.handle(message)


if __name__ == "__main__":
    main()
