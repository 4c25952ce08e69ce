"""A hand-written stdio MCP server (no SDK) for cases beyond hostile_server.py's garbage.

    python tricky_server.py                    # the tools below
    python tricky_server.py --clashing-names   # tools `a b`, `a_b`, `a_b_2`, `a.b`, `a_b_3`

It speaks the handshake of hostile_server.py and writes `tricky server ready` to stderr once it
reads stdin. Tools:
    echo(text)         the text unchanged
    environ()          the names of the server's environment variables, as a sorted JSON list
    deep_line(levels)  a valid response whose structuredContent nests `levels` arrays deep
    deep_request(levels)  first a request *from the server* nesting `levels` deep, then "ok"
    deep_junk(levels)  first a non-JSON-RPC stdout line nesting `levels` deep, then "ok"
    big_int(digits)    a valid response whose structuredContent holds an integer of `digits`
                       digits (and whose text says how many)
    id_last(levels)    like deep_line, but `id` is the last key of the response
In `--clashing-names` mode every tool answers `called <the name it was called by>`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from hostile_server import Server, say, text_result, tool

CLASHING_NAMES = ("a b", "a_b", "a_b_2", "a.b", "a_b_3")
TRICKY_TOOLS = [
    tool("echo", "Return the text unchanged.", text="string"),
    tool("environ", "The names of the server's environment variables."),
    *(
        tool(name, f"Answers with JSON {name.replace('_', ' ')} `levels` deep.", levels="integer")
        for name in ("deep_line", "deep_request", "deep_junk", "id_last")
    ),
    tool("big_int", "An integer of `digits` digits in structuredContent.", digits="integer"),
]


def nested(levels: int) -> str:
    """A JSON text of `levels` nested arrays around the number 1."""
    return "[" * levels + "1" + "]" * levels


def deep_answer(request_id: Any, levels: int, *, id_last: bool = False) -> None:
    """A response whose tool result carries `levels` nested arrays in its structuredContent."""
    body = '{"content": [{"type": "text", "text": "deep"}], "structuredContent": {"deep": '
    body += nested(levels) + "}}"
    ident = json.dumps(request_id)
    if id_last:
        say('{"jsonrpc": "2.0", "result": ' + body + ', "id": ' + ident + "}")
    else:
        say('{"jsonrpc": "2.0", "id": ' + ident + ', "result": ' + body + "}")


class TrickyServer(Server):
    """Hostile-server handshake, tricky tools."""

    def tools(self) -> list[dict[str, Any]]:
        if self.mode == "clashing-names":
            return [tool(name, f"The tool called {name!r}.") for name in CLASHING_NAMES]
        return TRICKY_TOOLS

    def call(self, request_id: Any, params: dict[str, Any]) -> None:
        name = str(params.get("name"))
        args = params.get("arguments") or {}
        levels = int(args.get("levels", 0))
        if self.mode == "clashing-names":
            text_result(request_id, f"called {name}")
        elif name == "echo":
            text_result(request_id, str(args.get("text", "")))
        elif name == "environ":
            text_result(request_id, json.dumps(sorted(os.environ)))
        elif name in ("deep_line", "id_last"):
            deep_answer(request_id, levels, id_last=name == "id_last")
        elif name == "deep_request":
            say('{"jsonrpc": "2.0", "id": 900, "method": "x", "params": ' + nested(levels) + "}")
            text_result(request_id, "ok")
        elif name == "deep_junk":
            say('{"jsonrpc": "log", "junk": ' + nested(levels) + "}")
            text_result(request_id, "ok")
        elif name == "big_int":
            digits = int(args.get("digits", 1))
            content = [{"type": "text", "text": f"{digits} digits"}]
            number = "7" * digits  # by hand: json.dumps refuses integers this long
            body = '{"content": ' + json.dumps(content) + ', "structuredContent": {"n": '
            ident = json.dumps(request_id)
            say('{"jsonrpc": "2.0", "id": ' + ident + ', "result": ' + body + number + "}}}")
        else:
            text_result(request_id, f"unknown tool: {name}", is_error=True)


def main() -> None:
    """Serve until stdin closes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--clashing-names", action="store_true")
    args = parser.parse_args()
    server = TrickyServer("clashing-names" if args.clashing_names else "tricky")
    print("tricky server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            server.handle(message)


if __name__ == "__main__":
    main()
