"""A stdio MCP server (stdlib only) that echoes every request id as a string ("1" for 1).

The MCP SDK matches such answers to its requests; so must devall's own client:
`devall tools list --command 'python3 tests/servers/strid_server.py'` lists its tools with either.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import raw_server

if __name__ == "__main__":
    sys.argv = [sys.argv[0], "--string-ids", *sys.argv[1:]]
    raw_server.main()
