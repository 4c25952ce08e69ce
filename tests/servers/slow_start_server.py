"""A FastMCP stdio server that sleeps before it serves (a slow start).

    python slow_start_server.py SECONDS

It writes `warming up` to stderr at once, sleeps SECONDS, then writes `slow server ready` and
serves stdio. Tools: `echo(text)`.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

# Log and sleep before the (slow) fastmcp import, so the start is as slow as asked and no slower.
print("warming up", file=sys.stderr, flush=True)
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)

from fastmcp import FastMCP  # noqa: E402

mcp = FastMCP("slow start server")


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def main() -> None:
    """Serve stdio."""
    print("slow server ready", file=sys.stderr, flush=True)
    mcp.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
