"""The Ray cluster of a batch: one devall starts on this machine, or an existing one it joins.

A cluster devall starts listens on 127.0.0.1 only. Ray otherwise takes the machine's interface
address as the node address and its servers listen on every interface; with the node address
127.0.0.1 (which Ray only keeps when clusters are switched off, hence its environment switch)
the GCS, the raylet and every worker bind to loopback. Such a cluster runs without a dashboard,
with a token of its own (kept in this process's environment, never written to disk) and in a
temporary directory removed at the end. `shutdown()` stops it and then makes sure no process it
started is left: the processes below this one that Ray started are remembered (pid and start
time, so a reused pid is never hit) and whatever survives Ray's own shutdown is killed.

Joining an existing cluster (`--ray-address`) changes nothing there: the driver connects,
its workers run as the cluster places them, and `shutdown()` only disconnects.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli.procs.proc_table import ProcessInfo, descendants, process_table

LOOPBACK = "127.0.0.1"
# Ray's object store is for task arguments and results here: small ones.
OBJECT_STORE_BYTES = 128 * 1024 * 1024
REAP_WAIT_S = 10.0
# Never shipped to workers with the workflow's folder.
SHIP_EXCLUDES = (".git", ".venv", "venv", "node_modules", "__pycache__", "logs", ".env")


def loopback_environ() -> dict[str, str]:
    """The environment a local cluster starts with: loopback only, its own token, no stats."""
    return {
        # With clusters off, Ray keeps 127.0.0.1 as the node address instead of replacing it.
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_USAGE_STATS_ENABLED": "0",
    }


def ray_installed() -> bool:
    """Whether the ray extra is installed (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


@dataclass
class RayCluster:
    """A connection to Ray; for a cluster started here, what to stop and remove at the end."""

    address: str | None  # None: started by devall on this machine
    temp_dir: Path | None = None
    processes: dict[int, int] = field(default_factory=dict)  # pid -> start time
    roots: set[int] = field(default_factory=set)  # the processes Ray started below this one
    _looked: float = float("-inf")  # when remember_processes last read /proc

    @property
    def local(self) -> bool:
        """Started by devall (and stopped by it)."""
        return self.address is None

    def cpus(self) -> int:
        """The CPUs the cluster offers (at least 1)."""
        import ray

        resources: Callable[[], Mapping[str, float]] = ray.cluster_resources
        return max(1, int(resources().get("CPU", 1)))

    def remember_processes(self, *, every_s: float = 0.0) -> None:
        """Note every process now below the ones Ray started (workers come and go).

        With `every_s`, not again before that many seconds passed since the last look.
        """
        if not self.local or time.monotonic() - self._looked < every_s:
            return
        self._looked = time.monotonic()
        table = process_table()
        for info in _tree(self.roots | set(self.processes), table):
            self.processes.setdefault(info.pid, info.start)

    def shutdown(self) -> None:
        """Disconnect; a local cluster is stopped, its leftovers killed, its directory removed."""
        import ray

        self.remember_processes()
        with contextlib.suppress(Exception):
            ray.shutdown()
        if not self.local:
            return
        reap(self.processes)
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def connect(
    address: str | None,
    *,
    working_dir: Path | None,
    num_cpus: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> RayCluster:
    """Start a local cluster (`address` None) or join the one at `address`; `working_dir` is
    shipped to the workers as their working directory (None: nothing is shipped).

    Blocking (Ray takes seconds to start). Raises what `ray.init` raises.
    """
    # Ray's own handler of fatal signals would turn devall's clean SIGTERM exit into an abort.
    os.environ["RAY_DISABLE_FAILURE_SIGNAL_HANDLER"] = "1"
    # RAY_BACKEND_LOG_LEVEL is left alone: set, it makes Ray's C++ side announce it on stderr.
    if address is None:
        os.environ.update(environ if environ is not None else loopback_environ())
    else:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if on_loopback(address):
            # A cluster on loopback: the driver must not turn 127.0.0.1 into this machine's
            # interface address either, or it would look for the cluster there.
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray

    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
        "namespace": "devall",
    }
    _quiet_ray_loggers()
    if address is not None:
        reachable(address)
        if working_dir is not None:
            options["runtime_env"] = ship(working_dir)
        ray.init(address=address, **options)
        return RayCluster(address)
    before = _children(process_table())
    cluster = RayCluster(None, temp_dir=Path(tempfile.mkdtemp(prefix="devall-ray-", dir=_tmp())))
    if working_dir is not None:
        options["runtime_env"] = ship(working_dir, cluster.temp_dir)
    try:
        ray.init(
            _node_ip_address=LOOPBACK,
            _temp_dir=str(cluster.temp_dir),
            object_store_memory=OBJECT_STORE_BYTES,
            num_cpus=num_cpus,
            **options,
        )
    except BaseException:
        cluster.roots = _children(process_table()) - before - _devall_helpers()
        cluster.shutdown()  # what Ray had started before it failed
        raise
    cluster.roots = _children(process_table()) - before - _devall_helpers()
    cluster.remember_processes()
    return cluster


def ship(working_dir: Path, temp_dir: Path | None = None) -> dict[str, Any]:
    """The runtime environment that ships `working_dir` to the workers.

    A cluster's own temporary folder is never shipped, even when it lies inside `working_dir`
    (a workflow kept in /tmp): Ray would be zipping the files its running session writes.
    """
    excludes = list(SHIP_EXCLUDES)
    skipped: Path | None = None
    if temp_dir is not None:
        with contextlib.suppress(ValueError):
            inside = temp_dir.resolve().relative_to(working_dir.resolve())
            excludes.append(_anchored(inside.as_posix()))
            skipped = temp_dir.resolve()
    excludes += [_anchored(name) for name in special_files(working_dir, skipped)]
    return {"working_dir": str(working_dir), "excludes": excludes}


def _anchored(relative: str) -> str:
    """Ray reads excludes as .gitignore lines: anchored, wildcard characters escaped."""
    return "/" + re.sub(r"([\\\[\]*?!#])", r"\\\1", relative)


def special_files(folder: Path, skipped: Path | None = None) -> list[str]:
    """What below `folder` is neither a regular file nor a folder (FIFOs, sockets, devices,
    links to them), as paths relative to it: Ray would open each to pack it, and a FIFO with no
    writer blocks that open for ever. The folders Ray is told to leave out are not walked."""
    found: list[str] = []
    root = folder.resolve()
    for current, dirs, files in os.walk(root):
        here = Path(current)
        dirs[:] = [d for d in dirs if d not in SHIP_EXCLUDES and (here / d) != skipped]
        for name in files:
            path = here / name
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue  # a dangling link: Ray skips what it cannot open
            if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def on_loopback(address: str) -> bool:
    """Whether a cluster address (`host:port`, `ray://host:port`) is on loopback."""
    import ipaddress

    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def reachable(address: str, timeout_s: float = 10.0) -> None:
    """ConnectionError unless `host:port` accepts a connection (Ray itself retries for minutes)."""
    import socket

    if address == "auto" or "://" in address:
        return  # Ray finds the address itself, or a client-mode address: Ray's own check
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ConnectionError(f"not a HOST:PORT address: {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ConnectionError(exc.strerror or str(exc) or type(exc).__name__) from None


def reap(processes: Mapping[int, int], wait_s: float = REAP_WAIT_S) -> list[int]:
    """Wait for these processes to end, then SIGKILL the survivors; the pids killed."""
    deadline = time.monotonic() + wait_s
    while _alive(processes) and time.monotonic() < deadline:
        time.sleep(0.1)
    killed = _alive(processes)
    for pid in killed:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while _alive(processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    return killed


def _alive(processes: Mapping[int, int]) -> list[int]:
    table = process_table()
    return [
        pid
        for pid, start in processes.items()
        if (info := table.get(pid)) is not None and info.start == start and info.running
    ]


def _tree(roots: set[int], table: dict[int, ProcessInfo]) -> list[ProcessInfo]:
    found = [table[pid] for pid in roots if pid in table]
    return found + descendants(roots, table)


def _children(table: dict[int, ProcessInfo]) -> set[int]:
    me = os.getpid()
    return {info.pid for info in table.values() if info.ppid == me}


def _devall_helpers() -> set[int]:
    """devall's own watcher process, which is not Ray's."""
    from devall_cli.procs.process_groups import watcher_pid

    pid = watcher_pid()
    return {pid} if pid is not None else set()


def _tmp() -> str:
    """A short temporary folder: Ray's socket paths must stay under the kernel's length limit."""
    default = tempfile.gettempdir()
    return default if len(default) <= 40 or not os.path.isdir("/tmp") else "/tmp"


def _quiet_ray_loggers() -> None:
    """Ray's notices (a local instance started, token mode) are not devall's output."""
    for name in ("ray", "ray._private.worker", "ray._private.authentication"):
        logging.getLogger(name).setLevel(logging.ERROR)
