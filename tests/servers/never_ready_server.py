"""A server that writes log lines but never becomes ready and never answers a message.

    python never_ready_server.py        # writes `still warming up N` to stderr every 0.1 s
    python never_ready_server.py PATH   # the same, after appending its start time to PATH
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    """Log forever; ignore stdin (even its end)."""
    if len(sys.argv) > 1:  # when it started, for tests of what ran at the same time
        with open(sys.argv[1], "a", encoding="utf-8") as stamps:
            stamps.write(f"{time.time()}\n")
    print("never ready server starting", file=sys.stderr, flush=True)
    count = 0
    while True:
        count += 1
        print(f"still warming up {count}", file=sys.stderr, flush=True)
        time.sleep(0.1)


if __name__ == "__main__":
    main()
