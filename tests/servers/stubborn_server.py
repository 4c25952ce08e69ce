"""A server that ignores SIGTERM and the end of its stdin: only SIGKILL stops it.

    python stubborn_server.py     # writes `stubborn server ready` to stderr, then sleeps

Each SIGTERM it ignores is written to stderr as `ignored SIGTERM`, so a test sees the order of
a teardown (SIGTERM before SIGKILL, or SIGKILL at once) without timing it.
"""

from __future__ import annotations

import signal
import sys
import time


def main() -> None:
    """Ignore SIGTERM (saying so), announce readiness, and sleep forever."""

    def ignored(signum: int, frame: object) -> None:
        print("ignored SIGTERM", file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, ignored)
    print("stubborn server ready", file=sys.stderr, flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
