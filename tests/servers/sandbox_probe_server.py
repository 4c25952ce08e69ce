"""A stdio MCP server that tries what a sandbox should stop, and says what happened.

Tools (each answers `ok ...` or the OS error, as text; never a tool error):
    write_outside {path}   writes a file at `path`
    read_file {path}       reads the file at `path`
    connect {port}         opens a TCP connection to 127.0.0.1:port
    echo {text}            answers the text
Standard library only; the MCP side is raw_server.py's.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

from raw_server import INITIALIZED, _schema, receive, send, text  # beside this script

TOOLS = [
    {"name": name, "description": description, "inputSchema": schema}
    for name, description, schema in (
        ("write_outside", "Write a file.", _schema(path="string")),
        ("read_file", "Read a file.", _schema(path="string")),
        ("connect", "Connect to 127.0.0.1.", _schema(port="integer")),
        ("echo", "Return the text.", _schema(text="string")),
    )
]


def attempt(name: str, arguments: dict[str, Any]) -> str:
    """What happened when the tool tried: `ok ...`, or `denied: <OS error>`."""
    try:
        if name == "write_outside":
            with open(arguments["path"], "w", encoding="utf-8") as out:
                out.write("escaped\n")
            return "ok wrote"
        if name == "read_file":
            with open(arguments["path"], encoding="utf-8") as source:
                return f"ok read {source.read().strip()}"
        if name == "connect":
            with socket.create_connection(("127.0.0.1", int(arguments["port"])), timeout=5):
                return "ok connected"
        return str(arguments.get("text", ""))
    except OSError as exc:
        return f"denied: {exc.strerror or exc}"


def main() -> None:
    print("sandbox probe server ready", file=sys.stderr, flush=True)
    while (message := receive()) is not None:
        method, request_id = message.get("method"), message.get("id")
        if request_id is None or method is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            result: dict[str, Any] = INITIALIZED
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = text(attempt(str(params.get("name")), params.get("arguments") or {}))
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
