"""A FastMCP stdio server whose `die` tool kills the process in the middle of the call.

    python die_mid_call_server.py     # writes `die server ready` to stderr

Tools: `echo(text)`, `pid()` (the server's process id), `die()` (exits with status 7 without
answering).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

from fastmcp import FastMCP

mcp = FastMCP("die mid call server")


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@mcp.tool
def die() -> str:
    """Exit with status 7 in the middle of the call, without answering."""
    print("die server: going down with status 7", file=sys.stderr, flush=True)
    os._exit(7)


def main() -> None:
    """Serve stdio."""
    print("die server ready", file=sys.stderr, flush=True)
    mcp.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
