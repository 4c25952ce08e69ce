"""Children that die with devall, however devall ends (even by SIGKILL): PR_SET_PDEATHSIG.

`die_with_parent()` returns a `preexec_fn` that asks the Linux kernel to SIGKILL the child when
its parent goes. The kernel sends the signal when the *thread* that forked the child exits, not
the process: devall spawns its servers from the thread that runs the event loop (asyncio forks
in the loop's thread; its child watcher threads only wait), and that thread is the main thread,
which lives as long as devall. Where the loop runs in another thread the servers are torn down
before that thread ends anyway, so the signal cannot come early.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` making the child die with this process; None without Linux's prctl."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork, not after
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # devall died before the request took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec
