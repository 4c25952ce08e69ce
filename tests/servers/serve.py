"""Run a test server script over HTTP in a subprocess on a loopback port, and clean up after it.

The scripts in this folder take `--transport http|sse --host H --port N` (port 0 picks a free one)
and write `... ready on port N` to stderr once their socket listens (the example server writes
`MCP server ready on http://HOST:N/mcp`). Each server runs in its own
process group, which is killed when the helper stops it, so no server outlives its test.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path

SERVERS_DIR = Path(__file__).resolve().parent
FIXTURE_SERVER = SERVERS_DIR / "fixture_server.py"
HANG_SERVER = SERVERS_DIR / "hang_server.py"
EXAMPLE_SERVER = SERVERS_DIR.parent.parent / "mcp_example" / "mcp_server.py"
# `... ready on port N` (test servers) or `MCP server ready on http://HOST:N/mcp` (the example)
_READY = re.compile(r"ready on (?:port |https?://[^\s/]+:)(\d+)")


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a server process: ours, quiet, plus `extra`."""
    env = dict(os.environ)
    env.update(FASTMCP_SHOW_SERVER_BANNER="false", FASTMCP_CHECK_FOR_UPDATES="off")
    env.update(extra or {})
    return env


def live_children() -> list[int]:
    """Pids of this process's live (non-zombie) children, read from /proc."""
    me = os.getpid()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def wait_no_children(timeout: float = 5.0) -> list[int]:
    """Wait until this process has no live children; return those still there after `timeout`."""
    deadline = time.monotonic() + timeout
    while (children := live_children()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return children


def pid_gone(pid: int) -> bool:
    """True when no process `pid` runs (a zombie waiting for init counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ServerProcess:
    """One server script served over HTTP (or SSE) in its own process group."""

    def __init__(
        self,
        script: Path | str,
        transport: str = "http",
        *,
        port: int = 0,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        ready_timeout: float = 20.0,
    ) -> None:
        self.script = Path(script)
        self.transport = transport
        self.port = port
        self.args = list(args)
        self.env = env
        self.ready_timeout = ready_timeout
        self.proc: subprocess.Popen[str] | None = None
        self.log: deque[str] = deque(maxlen=200)
        self.last_pid: int | None = None
        self._pump: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint: `/sse` for the SSE transport, `/mcp` otherwise."""
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> str:
        """Start the process, wait until it listens, return the URL."""
        command = [sys.executable, str(self.script), "--transport", self.transport]
        command += ["--host", "127.0.0.1", "--port", str(self.port), *self.args]
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=server_env(self.env),
            start_new_session=True,
        )
        self.port = self._wait_ready()
        self._wait_listening()
        return self.url

    def _wait_ready(self) -> int:
        assert self.proc is not None and self.proc.stderr is not None
        found: list[int] = []
        ready = threading.Event()
        stream = self.proc.stderr

        def pump() -> None:
            # Keeps reading after `ready` so a chatty server never blocks on a full pipe.
            for line in stream:
                self.log.append(line.rstrip("\n"))
                match = _READY.search(line)
                if match and not found:
                    found.append(int(match.group(1)))
                    ready.set()
            ready.set()

        self._pump = threading.Thread(target=pump, daemon=True)
        self._pump.start()
        if not ready.wait(self.ready_timeout) or not found:
            self.stop()
            raise RuntimeError(f"{self.script.name} did not start: {list(self.log)[-10:]}")
        return found[0]

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5),
            ):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.script.name} never accepted connections on {self.port}")

    def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL it if it lingers; wait for the exit."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # any grandchild left in the group
        deadline = time.monotonic() + 5
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.last_pid = proc.pid
        if self._pump is not None:
            self._pump.join(timeout=2)  # the pipe reaches EOF once the group is gone
            self._pump = None
        if proc.stderr is not None:
            proc.stderr.close()

    def kill(self) -> None:
        """Kill the server abruptly (SIGKILL), as a crash would."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.stop()

    def restart(self) -> str:
        """Kill the server and start a new one on the same port."""
        self.kill()
        return self.start()

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def serve_http(
    script: Path | str = FIXTURE_SERVER,
    transport: str = "http",
    *,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Serve `script` on a free loopback port for the duration of the block; yields the URL."""
    server = ServerProcess(script, transport, args=args, env=env)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
