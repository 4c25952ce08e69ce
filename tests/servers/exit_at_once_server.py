"""A server that fails at start: writes an error to stderr and exits with status 3.

    python exit_at_once_server.py
"""

from __future__ import annotations

import sys


def main() -> None:
    """Complain and leave."""
    print("exit server: starting", file=sys.stderr, flush=True)
    print("fatal: cannot open database 'tools.db'", file=sys.stderr, flush=True)
    sys.exit(3)


if __name__ == "__main__":
    main()
