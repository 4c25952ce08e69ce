"""Process groups of the local servers devall started, and the guarantee that none outlives it.

Each child starts a new session, so its pid is also its process group id; signalling the group
reaches the helpers it spawned. Helpers that leave the group (`setsid`, as daemons do) are found
by `track_descendants()`, which looks below each server in /proc while it runs, and are
remembered (pid and start time) until they are gone, also after the server itself died. A server
and its tracked helpers form its *tree*: teardown signals and waits for the whole tree.

Three guards make sure nothing outlives devall:
- `kill_all_children()`, installed with `atexit`, SIGKILLs every tree; it only calls `os.kill`,
  `os.killpg` and reads /proc, so it may also run from a signal handler;
- the kernel kills each server when devall dies (parent_death.py);
- a watcher process learns every group and tracked helper and kills them when devall dies
  without cleaning up (sentinel.py).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal

from devall_cli.procs.proc_table import descendants, process_table, read_process
from devall_cli.procs.sentinel import Sentinel

# pid of each live child -> its process group id (equal, since each child starts a session)
_LIVE_GROUPS: dict[int, int] = {}
# pid of each live child -> {pid: start time} of the processes found below it outside its group
_TRACKED: dict[int, dict[int, int]] = {}
_SENTINEL = Sentinel()


def kill_all_children() -> None:
    """SIGKILL the tree of every live child; safe in `atexit` and signal handlers."""
    for pid in list(_LIVE_GROUPS):
        signal_tree(pid, signal.SIGKILL)


atexit.register(kill_all_children)


def live_child_pids() -> list[int]:
    """The pids of the children not torn down yet (for diagnostics and tests)."""
    return list(_LIVE_GROUPS)


def watcher_pid() -> int | None:
    """The pid of the watcher process while it runs (see sentinel.py)."""
    return _SENTINEL.pid


def register(pid: int) -> None:
    """Remember a new child (its own group leader) until `unregister`."""
    _LIVE_GROUPS[pid] = pid
    _TRACKED[pid] = {}
    _SENTINEL.watch_group(pid)


def unregister(pid: int) -> None:
    """Forget a child whose tree is gone; the watcher stops once no child is left."""
    if _LIVE_GROUPS.pop(pid, None) is None:
        return
    for helper in _TRACKED.pop(pid, {}):
        _SENTINEL.forget_process(helper)
    _SENTINEL.forget_group(pid)
    if not _LIVE_GROUPS:
        _SENTINEL.stop()


def track_descendants(pid: int) -> None:
    """Remember the processes below child `pid` that left its group, and forget those gone."""
    tracked = _TRACKED.get(pid)
    if tracked is None:
        return
    table = process_table()
    # From the helpers known so far too: they stay reachable after their parent died.
    for info in descendants([pid, *tracked], table):
        if info.pgid != pid and info.running and info.pid not in tracked:
            tracked[info.pid] = info.start
            _SENTINEL.watch_process(info.pid, info.start)
    for helper, start in list(tracked.items()):
        found = table.get(helper)
        if found is None or found.start != start or not found.running:
            del tracked[helper]
            _SENTINEL.forget_process(helper)


def signal_tree(pid: int, signum: int) -> None:
    """Send `signum` to child `pid`'s process group and to each tracked helper (and its group)."""
    signal_group(_LIVE_GROUPS.get(pid, pid), signum)
    for helper, start in list(_TRACKED.get(pid, {}).items()):
        info = read_process(helper)
        if info is None or info.start != start:
            continue  # gone; its pid may belong to someone else by now
        if info.pgid == helper:
            signal_group(helper, signum)  # it leads a group: its own helpers go too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(helper, signum)


def tree_alive(pid: int) -> bool:
    """Whether child `pid`'s group or one of its tracked helpers still runs."""
    if group_alive(_LIVE_GROUPS.get(pid, pid)):
        return True
    for helper, start in _TRACKED.get(pid, {}).items():
        info = read_process(helper)
        if info is not None and info.start == start and info.running:
            return True
    return False


async def wait_gone(
    proc: asyncio.subprocess.Process, timeout: float, *, resend: int | None = None
) -> bool:
    """Whether child `proc` was reaped and its whole tree is gone within `timeout` seconds.

    With `resend`, that signal goes to the tree again at each look: a member may have forked
    since the last one.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while proc.returncode is None or tree_alive(proc.pid):
        if loop.time() >= deadline:
            return False
        if resend is not None:
            signal_tree(proc.pid, resend)
        await asyncio.sleep(WAIT_POLL)
    return True


WAIT_POLL = 0.02  # seconds between two looks in wait_gone


def signal_group(pgid: int, signum: int) -> None:
    """Send `signum` to a process group, ignoring a group that is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def group_alive(pgid: int) -> bool:
    """Whether a process group still has a member that is not a zombie."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc/self"):
        return True
    # Orphaned members that died stay zombies until init reaps them, and init may never do
    # so in a container; a zombie runs no code, so it does not count.
    return any(info.running for info in process_table().values() if info.pgid == pgid)
