"""Supervisor of one local MCP server process: spawn, log capture, readiness, teardown.

The child speaks newline-delimited JSON-RPC on stdin/stdout. Stdout lines that carry a JSON-RPC
object go to the session (junk glued to the front of such a line is split off); every other
stdout line and every stderr line is a log line: kept in a tail buffer, appended to the server
log file (of bounded size, see `server_log`), passed to `on_log` and matched against
`wait_for_log`.

A child with a sandbox setting runs under bubblewrap (procs/sandbox.py): bwrap is the process
devall starts, the server runs inside it, in the same process group.

The child runs in its own process group so that teardown reaches its children too; helpers that
leave the group (`setsid`) are looked for below it while it runs and torn down with it. Every
live child is registered in `process_groups`, which makes sure none outlives devall, and the
kernel kills the child when devall dies (parent_death.py). This module does not import fastmcp
or mcp.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from devall_cli import limits
from devall_cli.errors import SandboxError, ServerStartError
from devall_cli.procs.parent_death import die_with_parent
from devall_cli.procs.process_groups import (
    kill_all_children,
    live_child_pids,
    register,
    signal_tree,
    track_descendants,
    tree_alive,
    unregister,
    wait_gone,
)
from devall_cli.procs.sandbox import Sandbox, SandboxConfig, script_argument
from devall_cli.text import clean_text
from devall_cli.tools.server_log import ServerLogFile
from devall_cli.tools.stdio_lines import iter_lines, overlong_answer, split_message

__all__ = [
    "StdioProcess",
    "build_child_env",
    "kill_all_children",
    "live_child_pids",
    "resolve_command",
]

logger = logging.getLogger(__name__)

LogCallback = Callable[[str, str], None]  # (source_id, line)

# Quiet fastmcp children that inherit devall's environment: no banner on stderr, no network
# update check at start.
CHILD_ENV_DEFAULTS: Mapping[str, str] = {
    "FASTMCP_SHOW_SERVER_BANNER": "false",
    "FASTMCP_CHECK_FOR_UPDATES": "off",
}

LINE_LIMIT = limits.STDIO_LINE_BYTES  # longest stdout/stderr line kept; longer ones are dropped
TAIL_SIZE = 50
# Log lines a process spawned ahead of its source keeps for it (`hold_log`); later ones are
# counted, and the count is said in the log once the source takes the process over.
HELD_LINES = 10_000
STDIN_GRACE = 0.75  # seconds a server gets to leave on its own once stdin is closed
TERM_GRACE = 1.5  # seconds between SIGTERM and SIGKILL of the group
KILL_GRACE = 2.0  # seconds to wait for the kernel to finish a SIGKILL
EXIT_DRAIN = 0.5  # seconds to let the readers take in the last output of a dead process
TRACK_INTERVAL = 0.5  # seconds between looks for helpers that left the child's process group
_POLL = 0.02


def build_child_env(env: Mapping[str, str], inherit_env: bool) -> dict[str, str]:
    """The child's environment: `env` over os.environ plus the quiet defaults, or `env` alone.

    With `inherit_env` false the child gets exactly `env`, so a child that needs PATH (a
    `#!/usr/bin/env` script, a server spawning tools) or the FastMCP switches must be given them.
    """
    if not inherit_env:
        return dict(env)
    merged = dict(os.environ)
    merged.update(env)
    for name, value in CHILD_ENV_DEFAULTS.items():
        merged.setdefault(name, value)
    return merged


def resolve_command(command: str, cwd: str | None, *, server_id: str = "") -> str:
    """The executable to run: a bare name is looked up on devall's own PATH."""
    if os.sep in command:
        # A relative path names a file relative to the child's working directory.
        candidate = os.path.join(cwd or os.getcwd(), command)
    else:
        candidate = shutil.which(command) or ""
    if not candidate or not os.path.isfile(candidate):
        raise ServerStartError(
            f"server '{server_id}': command not found: {command}",
            status="spawn_failed",
            server_id=server_id,
        )
    if not os.access(candidate, os.X_OK):
        raise ServerStartError(
            f"server '{server_id}': command is not executable: {command}",
            status="spawn_failed",
            server_id=server_id,
        )
    return candidate


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


class StdioProcess:
    """One supervised child process speaking newline-delimited JSON-RPC on stdio (single use)."""

    def __init__(
        self,
        *,
        id: str,
        command: str,
        args: Sequence[str] = (),
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        wait_for_log: str | re.Pattern[str] | None = None,
        log_path: Path | None = None,
        append_log: bool = False,
        on_log: LogCallback | None = None,
        redact: Callable[[str], str] | None = None,
        tail_size: int = TAIL_SIZE,
        line_limit: int = LINE_LIMIT,
        sandbox: SandboxConfig | None = None,
        workflow_dir: str | None = None,
    ) -> None:
        self.id = id
        self.command = command
        self.args = tuple(args)
        self.cwd = cwd
        self.env: Mapping[str, str] = dict(env or {})
        self.inherit_env = inherit_env
        self.pattern = re.compile(wait_for_log) if isinstance(wait_for_log, str) else wait_for_log
        self.log_path = log_path
        self.append_log = append_log  # continue the file of an earlier process (a restart)
        self.on_log = on_log
        self._redact = redact
        self._line_limit = line_limit
        self._tail: deque[str] = deque(maxlen=tail_size)
        self._log_file: ServerLogFile | None = None
        self._log_done = False  # closed for good (torn down, or the file cannot be written)
        self._held: list[tuple[str, bool]] | None = None  # (line, notify) kept for `hand_over`
        self._held_dropped = 0
        self._proc: asyncio.subprocess.Process | None = None
        self._messages: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._messages_ended = False
        self._tasks: list[asyncio.Task[None]] = []
        self._close_task: asyncio.Task[None] | None = None
        self.log_matched = asyncio.Event()
        self.exited = asyncio.Event()
        # When (time.monotonic) devall began to start the child: a start's time counts from here.
        self.spawned_at: float | None = None
        self.sandbox = sandbox  # the effective setting (None: unconfined)
        self.workflow_dir = workflow_dir  # bound read-only in the sandbox
        # How the child runs confined (Sandbox.describe()), once spawned; None: no sandbox.
        self.sandbox_description: dict[str, Any] | None = None

    # --- state -------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The child's pid (None before spawn)."""
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        """Exit status; negative for a signal; None while running."""
        return self._proc.returncode if self._proc else None

    @property
    def log_tail(self) -> list[str]:
        """The last log lines (stderr and non-JSON stdout), oldest first."""
        return list(self._tail)

    @property
    def stdout_closed(self) -> bool:
        """Whether no more messages can come (stdout ended, or the child exited)."""
        return self._messages_ended

    @property
    def closing(self) -> bool:
        """Whether teardown has begun."""
        return self._close_task is not None

    def exit_status_text(self) -> str:
        """`status N` or `signal NAME`, or `running`."""
        code = self.returncode
        if code is None:
            return "running"
        return f"signal {_signal_name(-code)}" if code < 0 else f"status {code}"

    # --- start -------------------------------------------------------------------------------

    async def spawn(self) -> None:
        """Start the child in its own process group; ServerStartError(spawn_failed) if it can't."""
        if self._proc is not None:
            raise RuntimeError("StdioProcess.spawn() called twice")
        executable = resolve_command(self.command, self.cwd, server_id=self.id)
        if self.cwd is not None and not os.path.isdir(self.cwd):
            raise ServerStartError(
                f"server '{self.id}': working directory not found: {self.cwd}",
                status="spawn_failed",
                server_id=self.id,
            )
        env = build_child_env(self.env, self.inherit_env)
        prefix, env = self._confined(executable, env)
        self._open_log_file()
        self.spawned_at = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *prefix,
                executable,
                *self.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
                preexec_fn=die_with_parent(),
            )
        except (OSError, ValueError) as exc:
            self._close_log_file()
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ServerStartError(
                f"server '{self.id}': cannot start {self.command}: {reason}",
                status="spawn_failed",
                server_id=self.id,
            ) from exc
        # No await between the spawn and the registration: a cancellation cannot leak the child.
        self._proc = proc
        register(proc.pid)
        assert proc.stdout is not None and proc.stderr is not None
        self._tasks = [
            asyncio.create_task(self._read_stdout(proc.stdout)),
            asyncio.create_task(self._read_stderr(proc.stderr)),
        ]
        self._tasks.append(asyncio.create_task(self._watch_exit(proc, list(self._tasks))))
        self._tasks.append(asyncio.create_task(self._track(proc.pid)))

    def _confined(self, executable: str, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """bwrap's command prefix and the confined environment (nothing and `env` unconfined)."""
        if self.sandbox is None:
            return [], env
        box = Sandbox(
            self.sandbox,
            workdir=self.cwd or os.getcwd(),
            program=executable,
            script=script_argument(self.args, self.cwd),
            workflow_dir=self.workflow_dir,
        )
        who = f"server '{self.id}'"
        try:
            prefix, env = box.confine(env, self.env, who=who)
        except SandboxError as exc:
            error = ServerStartError(exc.message, status="spawn_failed", server_id=self.id)
            error.hint = exc.hint
            raise error from None
        self.sandbox_description = box.describe()
        if not box.active:
            self.log_line(box.unconfined_note(who), match=False)
        return prefix, env

    async def wait_ready(self, timeout: float, *, startup_timeout: float | None = None) -> None:
        """Wait for the `wait_for_log` match (if any); raise ServerStartError when it fails.

        `startup_timeout` is the limit named in the error, when `timeout` is what is left of it.
        """
        if self.pattern is None or self.log_matched.is_set():
            self.raise_if_exited("before it was ready")
            self._track_now()
            return
        waiters = [
            asyncio.create_task(self.log_matched.wait()),
            asyncio.create_task(self.exited.wait()),
        ]
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        if self.log_matched.is_set():
            self._track_now()  # helpers started while getting ready are known from now on
            return
        self.raise_if_exited("before it was ready")
        raise ServerStartError(
            f"server '{self.id}' was not ready within {startup_timeout or timeout:g} s: "
            f"no log line matched {self.pattern.pattern!r}",
            status="startup_timeout",
            server_id=self.id,
            log_tail=self.log_tail,
        )

    def raise_if_exited(self, when: str) -> None:
        """Raise ServerStartError(exited) with the exit status and log tail if the child is gone."""
        if self.returncode is not None:
            raise self.exited_error(when)

    def exited_error(self, when: str) -> ServerStartError:
        """ServerStartError(exited): `server X exited with status N <when>`, with the log tail."""
        return ServerStartError(
            f"server '{self.id}' exited with {self.exit_status_text()} {when}",
            status="exited",
            server_id=self.id,
            log_tail=self.log_tail,
        )

    # --- messages ----------------------------------------------------------------------------

    async def receive_message(self) -> dict[str, Any] | None:
        """The next JSON-RPC object from stdout; None once stdout ended or the child exited."""
        if self._messages_ended and self._messages.empty():
            return None
        return await self._messages.get()

    def discard_pending(self) -> int:
        """Drop messages nobody has read (answers meant for an earlier session); their count."""
        dropped = 0
        while not self._messages.empty():
            if self._messages.get_nowait() is None:
                self._messages.put_nowait(None)  # the end marker stays for the next reader
                break
            dropped += 1
        return dropped

    async def send_line(self, line: str) -> None:
        """Write one message line to the child's stdin (OSError when it is gone)."""
        stdin = self._proc.stdin if self._proc else None
        if stdin is None or stdin.is_closing() or self.closing:
            raise BrokenPipeError(f"server '{self.id}': stdin is closed")
        stdin.write(line.encode("utf-8") + b"\n")
        await stdin.drain()

    def hold_log(self) -> None:
        """Keep the log lines from now on for the source that will take this process over
        (spawned ahead of it, before its log file and its trace are known)."""
        self._held = []

    def hand_over(
        self, *, log_path: Path | None, on_log: LogCallback | None, append_log: bool = False
    ) -> None:
        """The source's log from now on; the lines held so far go to it first, in order."""
        held, self._held = self._held or [], None
        self.log_path, self.on_log, self.append_log = log_path, on_log, append_log
        for line, notify in held:
            self._write_log(line, notify)
        if self._held_dropped:
            note = f"[devall: {self._held_dropped} log lines from the start were not kept]"
            self._write_log(note, True)
            self._held_dropped = 0

    def log_line(self, line: str, *, match: bool = True, notify: bool = True) -> None:
        """Record a log line: tail buffer, log file, `on_log` (if `notify`), readiness match."""
        shown = clean_text(self._redact(line) if self._redact else line)
        self._tail.append(shown)
        if self._held is not None:
            if len(self._held) < HELD_LINES:
                self._held.append((shown, notify))
            else:
                self._held_dropped += 1
        else:
            self._write_log(shown, notify)
        pattern = self.pattern if match and not self.log_matched.is_set() else None
        if pattern is not None and pattern.search(line):
            self.log_matched.set()

    def _write_log(self, shown: str, notify: bool) -> None:
        """A (masked) log line into the log file and to `on_log`."""
        if self._log_file is None and not self._log_done:
            self._open_log_file()  # lazily: a note may come before the spawn
        log_file = self._log_file
        if log_file is not None:
            try:
                log_file.write(shown)
            except OSError as exc:
                self._close_log_file()
                # Said in the log itself (trace and event log), which goes on without the file.
                reason = exc.strerror or str(exc)
                self.log_line(f"[devall: cannot write {log_file.path}: {reason}]", match=False)
        if notify and self.on_log is not None:
            try:
                self.on_log(self.id, shown)
            except Exception:  # a failing sink must not stop the log reader
                logger.exception("on_log callback failed")

    def _end_messages(self) -> None:
        if not self._messages_ended:
            self._messages_ended = True
            self._messages.put_nowait(None)

    # --- readers -----------------------------------------------------------------------------

    def _decode(self, raw: bytes | None, stream: str) -> str:
        if raw is None:
            return f"[devall: dropped a {stream} line longer than {self._line_limit} bytes]"
        return raw.decode("utf-8", errors="replace").rstrip("\r")

    async def _read_stdout(self, reader: asyncio.StreamReader) -> None:
        heads: list[bytes] = []  # the opening of each overlong line, to answer its request
        try:
            async for raw in iter_lines(reader, self._line_limit, on_overlong=heads.append):
                text = self._decode(raw, "stdout")
                if raw is None:
                    junk, message = text, overlong_answer(heads.pop(), self._line_limit)
                else:
                    junk, message = split_message(text)
                if junk.strip():
                    self.log_line(junk)
                if message is not None:
                    self._messages.put_nowait(message)
        except (OSError, ValueError) as exc:
            self.log_line(f"[devall: reading stdout failed: {exc}]", match=False)
        finally:
            self._end_messages()

    async def _read_stderr(self, reader: asyncio.StreamReader) -> None:
        try:
            async for raw in iter_lines(reader, self._line_limit):
                text = self._decode(raw, "stderr")
                if text.strip():
                    self.log_line(text)
        except (OSError, ValueError) as exc:
            self.log_line(f"[devall: reading stderr failed: {exc}]", match=False)

    async def _watch_exit(
        self, proc: asyncio.subprocess.Process, readers: list[asyncio.Task[None]]
    ) -> None:
        # Not proc.wait(): it also waits for pipe EOF, which a surviving grandchild can hold off.
        while proc.returncode is None:
            await asyncio.sleep(_POLL)
        # Let the readers take in the last words of the process so the log tail is complete.
        pending = [task for task in readers if not task.done()]
        if pending:
            await asyncio.wait(pending, timeout=EXIT_DRAIN)
        if not self.closing:
            logger.info("server %s exited with %s", self.id, self.exit_status_text())
        if not tree_alive(proc.pid):
            unregister(proc.pid)  # nothing left to kill; its pid may be reused from now on
        self._end_messages()
        self.exited.set()

    # --- teardown ----------------------------------------------------------------------------

    async def close(self, *, graceful: bool = True) -> None:
        """Close stdin, wait, SIGTERM the group, wait, SIGKILL it; reap; idempotent.

        `graceful=False` skips the wait after closing stdin (for a server that failed to start).
        """
        if self._proc is None:
            self._close_log_file()
            return
        if self._close_task is None:
            teardown = self._teardown(self._proc, STDIN_GRACE if graceful else 0.0)
            self._close_task = asyncio.get_running_loop().create_task(teardown)
        try:
            await asyncio.shield(self._close_task)
        except asyncio.CancelledError:
            # Interrupted (Ctrl-C): no more grace periods, the group dies now.
            self.kill()
            raise

    def kill(self) -> None:
        """SIGKILL the child's process group at once (synchronous)."""
        if self._proc is not None:
            self._signal_group(signal.SIGKILL)

    async def _track(self, pid: int) -> None:
        # Helpers that call setsid leave the group: found while their parent still links them.
        while True:
            await asyncio.sleep(TRACK_INTERVAL)
            track_descendants(pid)

    def _track_now(self) -> None:
        if self._proc is not None:
            track_descendants(self._proc.pid)

    async def _teardown(self, proc: asyncio.subprocess.Process, stdin_grace: float) -> None:
        self._track_now()  # the helpers started since the last look
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # EOF on stdin asks a well-behaved server to leave
            if not await wait_gone(proc, stdin_grace):
                self._signal_group(signal.SIGTERM)
                if not await wait_gone(proc, TERM_GRACE):
                    self._signal_group(signal.SIGKILL)
                    if not await wait_gone(proc, KILL_GRACE):
                        logger.warning("server %s (pid %s) survived SIGKILL", self.id, proc.pid)
        finally:
            await self._finish(proc)

    async def _finish(self, proc: asyncio.subprocess.Process) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._end_messages()
        if proc.returncode is not None:
            self.exited.set()
            if not tree_alive(proc.pid):
                unregister(proc.pid)
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()  # releases the pipes now instead of warning at garbage collection
        self._close_log_file()

    def _signal_group(self, signum: int) -> None:
        if self._proc is not None:
            signal_tree(self._proc.pid, signum)

    # --- log file ----------------------------------------------------------------------------

    def _open_log_file(self) -> None:
        if self.log_path is None or self._log_file is not None or self._log_done:
            return
        try:
            self._log_file = ServerLogFile(self.log_path, append=self.append_log)
        except OSError as exc:
            self._log_done = True
            reason = exc.strerror or str(exc)
            # Said in the log itself, so the lines that follow still reach the trace.
            self.log_line(f"[devall: cannot write {self.log_path}: {reason}]", match=False)

    def _close_log_file(self) -> None:
        self._log_done = True
        if self._log_file is not None:
            with contextlib.suppress(OSError):
                self._log_file.close()
            self._log_file = None

    def __repr__(self) -> str:
        return f"<StdioProcess {self.id} pid={self.pid} {self.exit_status_text()}>"
