"""Run one script of a `python` node as a child process that leaves nothing behind.

The child starts a session of its own (its pid is its process group), dies with devall
(parent_death.py) and is known to the watcher (process_groups.py). When it ends, times out or
the run is cancelled (Ctrl-C, SIGTERM), its whole group, and any helper that left the group,
is SIGKILLed and reaped before this returns. Standard input is empty; stdout and stderr are
read to the end but kept only up to `limits.CODE_OUTPUT_CHARS` characters each.

On Linux the script runs under a small reaper (devall's own Python, isolated): a child
subreaper (`PR_SET_CHILD_SUBREAPER`), so that whatever the script starts — a process in a new
session, a daemon that forks twice and whose parent exits at once — stays below it instead of
moving to init. When the script exits, the reaper kills and reaps everything left below it,
then ends as the script did (its exit status, or the signal that ended it).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from devall_cli import limits
from devall_cli.procs.parent_death import die_with_parent
from devall_cli.procs.process_groups import (
    register,
    signal_tree,
    track_descendants,
    unregister,
    wait_gone,
)
from devall_cli.text import clean_text

CHUNK = 64 * 1024
REAP_WAIT = 2.0  # seconds to wait for the kernel to finish a SIGKILL
# Seconds to wait for the whole tree to be gone: a loaded machine can take a while to end a
# killed process, and until then the child stays registered (the watcher keeps running).
TREE_WAIT = 10.0
DRAIN_WAIT = 1.0  # seconds to read the last output once the group is gone
TRACK_INTERVAL = 0.5  # seconds between looks for helpers that left the group
POLL = 0.02  # seconds between looks at whether the child exited


def _not_startable(interpreter: str, cwd: str, env: Mapping[str, str]) -> ScriptOutcome | None:
    """Why the interpreter cannot be started, found before the reaper runs it (None: it can)."""
    if os.sep in interpreter:
        path = interpreter if os.path.isabs(interpreter) else os.path.join(cwd, interpreter)
        if not os.path.exists(path):
            return ScriptOutcome("not_started", error=f"Interpreter {interpreter} not found")
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            reason = "Is a directory" if os.path.isdir(path) else "Permission denied"
            return ScriptOutcome(
                "not_started", error=f"Interpreter {interpreter} could not be started: {reason}"
            )
        return None
    if shutil.which(interpreter, path=env.get("PATH", os.defpath)) is None:
        return ScriptOutcome("not_started", error=f"Interpreter {interpreter} not found")
    return None


@dataclass(frozen=True)
class ScriptOutcome:
    """How a script ended: `ok`, `failed` (non-zero exit), `timeout` or `not_started`."""

    status: str
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    error: str | None = None  # why it did not start, or did not finish


class CappedText:
    """Decodes a byte stream incrementally, keeping at most `limit` characters of it."""

    def __init__(self, encoding: str, limit: int) -> None:
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._limit = limit
        self._parts: list[str] = []
        self.kept = 0
        self.total = 0

    def feed(self, data: bytes, *, final: bool = False) -> None:
        """Take in more bytes (`final`: the stream ended)."""
        text = self._decoder.decode(data, final)
        self.total += len(text)
        room = self._limit - self.kept
        if room > 0 and text:
            piece = text[:room]
            self._parts.append(piece)
            self.kept += len(piece)

    def text(self) -> str:
        """What was kept, ending with the cut marker when more came."""
        kept = clean_text("".join(self._parts))
        if self.total > self.kept:
            kept += limits.cut_marker(self.kept, self.total)
        return kept


# The reaper: argv[1:] is the script's command. Standard library only, no site, no cwd on the
# path (-I -S): a file in the script's workspace cannot stand in for a module it imports.
REAPER = r"""
import ctypes, os, signal, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
def dies_with_us():
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
try:
    child = subprocess.Popen(sys.argv[1:], preexec_fn=dies_with_us)
except OSError as exc:
    sys.stderr.write(f"{exc.strerror or exc}\n")
    sys.exit(127)
code = child.wait()
me = str(os.getpid())
def below():
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    parent = stat.read().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                continue
            if parent == me:
                found.append(int(name))
    return found
while left := below():
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    while True:
        try:
            if os.waitpid(-1, 0)[0] == 0:
                break
        except ChildProcessError:
            break
sys.stdout.flush()
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""
# What the reaper exits with when the interpreter could not be started at all.
REAPER_NOT_STARTED = 127


def reaped(command: Sequence[str]) -> list[str]:
    """`command` under the reaper (Linux), or as it is elsewhere."""
    if not sys.platform.startswith("linux"):
        return list(command)
    return [sys.executable, "-I", "-S", "-c", REAPER, *command]


async def run_script(
    command: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    encoding: str,
    prefix: Sequence[str] = (),
) -> ScriptOutcome:
    """Run `command` in `cwd` with `env` for at most `timeout` seconds.

    `prefix` goes before the command once it is known to be startable: the sandbox's bwrap
    and its options (procs/sandbox.py).
    """
    missing = _not_startable(command[0], cwd, env)
    if missing is not None:
        return missing
    try:
        proc = await asyncio.create_subprocess_exec(
            *reaped([*prefix, *command]),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            preexec_fn=die_with_parent(),
        )
    except FileNotFoundError:
        return ScriptOutcome("not_started", error=f"Interpreter {command[0]} not found")
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return ScriptOutcome(
            "not_started", error=f"Interpreter {command[0]} could not be started: {reason}"
        )
    # No await between the spawn and the registration: a cancellation cannot leak the child.
    register(proc.pid)
    return await _supervise(proc, timeout, encoding)


async def _supervise(
    proc: asyncio.subprocess.Process, timeout: float, encoding: str
) -> ScriptOutcome:
    assert proc.stdout is not None and proc.stderr is not None
    out = CappedText(encoding, limits.CODE_OUTPUT_CHARS)
    err = CappedText(encoding, limits.CODE_OUTPUT_CHARS)
    readers = [
        asyncio.create_task(_pump(proc.stdout, out)),
        asyncio.create_task(_pump(proc.stderr, err)),
    ]
    tracker = asyncio.create_task(_track(proc.pid))
    try:
        timed_out = not await _exited(proc, timeout)
    finally:
        # Ended, timed out or cancelled: nothing of the script's process group may live on.
        tracker.cancel()
        await _end_group(proc, readers)
    if timed_out:
        return ScriptOutcome(
            "timeout",
            stdout=out.text(),
            stderr=err.text(),
            error=f"Script did not finish within {timeout:g}s",
        )
    code = proc.returncode
    status = "ok" if code == 0 else "failed"
    error = None if code == 0 else "Script execution failed"
    return ScriptOutcome(status, out.text(), err.text(), code, error)


async def _exited(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Whether the child exited within `timeout` seconds.

    Not `proc.wait()`: that also waits for the pipes to close, which a process the script
    left running in the background keeps open.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while proc.returncode is None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(POLL)
    return True


async def _pump(stream: asyncio.StreamReader, sink: CappedText) -> None:
    while chunk := await stream.read(CHUNK):
        sink.feed(chunk)
    sink.feed(b"", final=True)


async def _track(pid: int) -> None:
    # Helpers that call setsid leave the group: found while their parent still links them.
    while True:
        track_descendants(pid)
        await asyncio.sleep(TRACK_INTERVAL)


async def _end_group(proc: asyncio.subprocess.Process, readers: list[asyncio.Task[None]]) -> None:
    """SIGKILL what is left of the group, reap the child, read the last output, forget it."""
    track_descendants(proc.pid)
    signal_tree(proc.pid, signal.SIGKILL)
    with contextlib.suppress(asyncio.CancelledError):
        await _exited(proc, REAP_WAIT)
    # The pipes close once every holder is gone; a helper that escaped may hold them open.
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait(readers, timeout=DRAIN_WAIT)
    for reader in readers:
        reader.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()  # releases the pipes now instead of warning at garbage collection
    with contextlib.suppress(asyncio.CancelledError):
        if await wait_gone(proc, TREE_WAIT, resend=signal.SIGKILL):
            unregister(proc.pid)
