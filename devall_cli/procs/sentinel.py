"""The watcher that kills what devall started when devall dies without cleaning up (SIGKILL).

The kernel takes a server along with devall (see parent_death.py), but not the helpers the server
started: they live on, in its process group or, after `setsid`, in sessions of their own. So
while servers run, a small watcher process holds the read end of a pipe from devall and learns
every server process group and every process found below a server (see process_groups.py). The
pipe ends when devall ends, however it ends; the watcher then SIGKILLs everything it was told of
and exits. When devall cleans up normally, it tells the watcher to forget each process group
first, and stops the watcher once no server is left.

The watcher runs `sys.executable -I -S -c WATCHER`: the standard library only, no site packages,
in a session of its own so that a Ctrl-C meant for devall does not reach it.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
from typing import IO

logger = logging.getLogger(__name__)

STOP_WAIT = 1.0  # seconds the watcher gets to leave once told to

# Lines on its stdin: `+g PGID` / `-g PGID` (a process group), `+p PID START` / `-p PID` (one
# process, killed only if its start time still matches: its pid may have been reused).
WATCHER = r"""
import os, signal, sys
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
groups, procs = set(), {}
def started(pid):
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return int(stat.read().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None
for line in sys.stdin:
    op, kind, numbers = line[:1], line[1:2], line[2:].split()
    if not numbers or not all(n.isdigit() for n in numbers):
        continue
    pid = int(numbers[0])
    if kind == "g" and op == "+":
        groups.add(pid)
    elif kind == "g":
        groups.discard(pid)
    elif op == "+" and len(numbers) == 2:
        procs[pid] = int(numbers[1])
    else:
        procs.pop(pid, None)
kills = [(os.killpg, pgid) for pgid in groups]
for pid, start in procs.items():
    if started(pid) == start:
        kills += [(os.killpg, pid), (os.kill, pid)]
for kill, target in kills:
    try:
        kill(target, signal.SIGKILL)
    except OSError:
        pass
"""


class Sentinel:
    """devall's side of the watcher: started on the first message, stopped by `stop()`."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._broken = False  # the watcher could not be started or went away: do without it

    def watch_group(self, pgid: int) -> None:
        """Kill process group `pgid` if devall dies."""
        self._send(f"+g {pgid}")

    def forget_group(self, pgid: int) -> None:
        """`pgid` is gone or torn down."""
        self._send(f"-g {pgid}", start=False)

    def watch_process(self, pid: int, start: int) -> None:
        """Kill process `pid` (and its group, if it leads one) if devall dies."""
        self._send(f"+p {pid} {start}")

    def forget_process(self, pid: int) -> None:
        """`pid` is gone."""
        self._send(f"-p {pid}", start=False)

    def stop(self) -> None:
        """Let the watcher go (nothing left to watch) and reap it."""
        proc, self._proc = self._proc, None
        self._broken = False
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()  # the watcher kills what it still knows of: nothing, by now
        try:
            proc.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    @property
    def pid(self) -> int | None:
        """The watcher's pid while it runs."""
        return self._proc.pid if self._proc is not None else None

    def _send(self, line: str, *, start: bool = True) -> None:
        stdin = self._stdin(start)
        if stdin is None:
            return
        try:
            stdin.write(line.encode("ascii") + b"\n")
            stdin.flush()
        except OSError as exc:
            logger.warning("the process watcher went away (%s); carrying on without it", exc)
            self._broken = True

    def _stdin(self, start: bool) -> IO[bytes] | None:
        if self._broken:
            return None
        if self._proc is None and start:
            if not sys.executable:
                self._broken = True
                return None
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", WATCHER],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as exc:
                logger.warning("cannot start the process watcher (%s); carrying on without it", exc)
                self._broken = True
        return self._proc.stdin if self._proc is not None else None
