"""A stdio server whose `die` tool kills the process in the middle of the call.

    python die_mid_call_server.py     # writes `die server ready` to stderr

Tools: `echo(text)`, `pid()` (the server's process id), `die()` (exits with status 7 without
answering), among raw_server.py's fixture tools: this is that stdlib server, which starts in a
few hundredths of a second where a FastMCP one takes over one.
"""

from __future__ import annotations

import sys

import raw_server  # beside this script, so on sys.path when it runs


def main() -> None:
    """Serve stdio with the fixture tools listed."""
    print("die server ready", file=sys.stderr, flush=True)
    sys.argv[1:] = ["--fixture", *sys.argv[1:]]
    raw_server.main()


if __name__ == "__main__":
    main()
