"""A stdio server that first starts a sleeping grandchild in its own process group.

    python spawner_server.py     # writes `grandchild pid N` then `spawner server ready` to stderr
    python spawner_server.py --detached   # also `detached grandchild pid N`, before the ready line

The grandchild inherits the server's stdout and stderr, as helper processes of real servers do,
and only goes away when someone kills the process group. With `--detached` a second grandchild
calls `setsid` (it leaves the server's process group and session, as daemons do), so killing the
server's group does not reach it. It then serves as raw_server.py with its fixture tools:
`echo(text)`, `slow(seconds)` and the others.
"""

from __future__ import annotations

import subprocess
import sys

import raw_server  # beside this script, so on sys.path when it runs


def main() -> None:
    """Start the grandchild (or two), then serve stdio."""
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    child = subprocess.Popen(sleeper, stdin=subprocess.DEVNULL)
    print(f"grandchild pid {child.pid}", file=sys.stderr, flush=True)
    if "--detached" in sys.argv[1:]:
        detached = subprocess.Popen(sleeper, stdin=subprocess.DEVNULL, start_new_session=True)
        print(f"detached grandchild pid {detached.pid}", file=sys.stderr, flush=True)
    print("spawner server ready", file=sys.stderr, flush=True)
    sys.argv[1:] = ["--fixture"]
    raw_server.main()


if __name__ == "__main__":
    main()
