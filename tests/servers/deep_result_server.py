"""A FastMCP server whose tool results nest as deep as asked.

    python deep_result_server.py                         # stdio; `deep result server ready`
    python deep_result_server.py --transport http --port 0   # `... ready on port N`

Tools: `echo(text)`, `deep(levels)` (structuredContent `{"deep": [[[...1...]]]}` with `levels`
nested lists, and a short text block).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

from fastmcp import FastMCP
from fastmcp.tools.base import ToolResult
from fixture_server import bind_socket

mcp = FastMCP("deep result server")


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool
def deep(levels: int) -> ToolResult:
    """A result whose structured content nests `levels` lists deep."""
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return ToolResult(content=f"{levels} levels", structured_content={"deep": value})


def main() -> None:
    """Serve stdio, or HTTP on a socket bound before `ready` is announced."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.transport == "stdio":
        print("deep result server ready", file=sys.stderr, flush=True)
        mcp.run(transport="stdio", show_banner=False)
        return
    sock = bind_socket(args.host, args.port)
    port = sock.getsockname()[1]
    print(f"deep result server ready on port {port}", file=sys.stderr, flush=True)
    mcp.run(transport="http", show_banner=False, host=args.host, port=port, sockets=[sock])


if __name__ == "__main__":
    main()
