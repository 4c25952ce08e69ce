"""A server that ignores SIGTERM and the end of its stdin: only SIGKILL stops it.

    python stubborn_server.py     # writes `stubborn server ready` to stderr, then sleeps
"""

from __future__ import annotations

import signal
import sys
import time


def main() -> None:
    """Ignore SIGTERM, announce readiness, and sleep forever."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("stubborn server ready", file=sys.stderr, flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
