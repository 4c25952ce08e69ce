"""Process groups of the local servers devall started, and the guarantee that none outlives it.

Each child starts a new session, so its pid is also its process group id; signalling the group
reaches the helpers it spawned. `kill_all_children()` is installed with `atexit` and only calls
`os.killpg`, so it may also run from a signal handler.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal

# pid of each live child -> its process group id (equal, since each child starts a session)
_LIVE_GROUPS: dict[int, int] = {}


def kill_all_children() -> None:
    """SIGKILL the process group of every live child; safe in `atexit` and signal handlers."""
    for pgid in list(_LIVE_GROUPS.values()):
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


atexit.register(kill_all_children)


def live_child_pids() -> list[int]:
    """The pids of the children not torn down yet (for diagnostics and tests)."""
    return list(_LIVE_GROUPS)


def register(pid: int) -> None:
    """Remember a new child (its own group leader) until `unregister`."""
    _LIVE_GROUPS[pid] = pid


def unregister(pid: int) -> None:
    """Forget a child whose group is gone."""
    _LIVE_GROUPS.pop(pid, None)


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
    return any(state != "Z" for state in _group_states(pgid))


def _group_states(pgid: int) -> list[str]:
    states = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process went away while we looked
        if len(fields) > 2 and fields[2] == str(pgid):
            states.append(fields[0])
    return states
