"""A stdio server that sleeps before it serves (a slow start).

    python slow_start_server.py SECONDS

It writes `warming up` to stderr at once, sleeps SECONDS, then writes `slow server ready` and
serves stdio: raw_server.py with its fixture tools (`echo(text)` among them).
"""

from __future__ import annotations

import sys
import time

import raw_server  # beside this script, so on sys.path when it runs


def main() -> None:
    """Warm up for SECONDS, then serve stdio."""
    print("warming up", file=sys.stderr, flush=True)
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
    print("slow server ready", file=sys.stderr, flush=True)
    sys.argv[1:] = ["--fixture"]
    raw_server.main()


if __name__ == "__main__":
    main()
