"""`devall batch --executor ray` end to end on local Ray clusters bound to 127.0.0.1.

Two clusters in all (Ray takes seconds to start): one that devall starts and stops itself, and
one this module starts for `--ray-address`. Both are watched while they run: every process
below them, and every socket those processes listen on, which must be on loopback; once they
are stopped, none of those processes may be left.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devall_cli.procs.proc_table import descendants, process_table
from tests.cli.batch_flows import fixture_tooling, jsonl_tasks, results, scripted_workflow
from tests.conftest import REPO_ROOT

pytest.importorskip("ray", reason="needs the ray extra: pip install 'devall-cli[ray]'")
pytestmark = [pytest.mark.ray, pytest.mark.slow]

EXAMPLES = REPO_ROOT / "workflows" / "examples"
DEVALL = [sys.executable, "-m", "devall_cli"]


# --- watching a process tree --------------------------------------------------------------------


def _listening() -> dict[int, str]:
    """socket inode -> local address, for every TCP socket in LISTEN state."""
    found: dict[int, str] = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(name) as table:
            for line in list(table)[1:]:
                fields = line.split()
                if fields[3] == "0A":
                    found[int(fields[9])] = fields[1].split(":")[0]
    return found


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_address)
    # /proc writes each 32-bit word in host (little-endian) order.
    data = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(data)


def _is_loopback(hex_address: str) -> bool:
    address = _address(hex_address)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _socket_inodes(pid: int) -> set[int]:
    inodes: set[int] = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes


class TreeWatch:
    """Polls the processes below `root`: which ran, and where they listened."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, int] = {}  # pid -> start time
        self.listening: list[tuple[int, str]] = []  # (pid, hex address)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(0.1)

    def poll(self) -> None:
        """One look at the tree and its listening sockets."""
        table = process_table()
        listening = _listening()
        for info in descendants([self.root], table):
            self.seen.setdefault(info.pid, info.start)
            for inode in _socket_inodes(info.pid):
                if inode in listening:
                    self.listening.append((info.pid, listening[inode]))

    def stop(self) -> None:
        """Stop polling."""
        self._stop.set()
        self._thread.join(5)

    def survivors(self) -> list[int]:
        """The processes seen that still run (same pid and start time)."""
        table = process_table()
        return [
            pid
            for pid, start in self.seen.items()
            if (info := table.get(pid)) is not None and info.start == start and info.running
        ]

    def assert_loopback_only(self) -> None:
        """Something listened, and only on loopback."""
        assert self.listening, "no listening socket was seen: the check proves nothing"
        outside = [(pid, str(_address(a))) for pid, a in self.listening if not _is_loopback(a)]
        assert outside == []


def _wait_gone(watch: TreeWatch, seconds: float = 60.0) -> list[int]:
    """The processes of the tree still there after `seconds` (a hang guard: Ray takes its time)."""
    deadline = time.monotonic() + seconds
    while watch.survivors() and time.monotonic() < deadline:
        time.sleep(0.1)
    return watch.survivors()


def _environ(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["TMPDIR"] = str(tmp)
    env["PYTHONPATH"] = str(REPO_ROOT)
    return {**env, **extra}


def _foreign_lines(stderr: str) -> list[str]:
    """What a batch where every task is ok printed on stderr that is not its progress."""
    return [line for line in stderr.splitlines() if not line.startswith("batch: ")]


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short temporary folder (Ray's socket paths have a length limit), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="dvr", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _batch(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str, TreeWatch]:
    process = subprocess.Popen(
        [*DEVALL, "batch", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watch = TreeWatch(process.pid)
    try:
        out, err = process.communicate(timeout=240)
    finally:
        watch.stop()
        if process.poll() is None:
            process.kill()
    return process.returncode, out, err, watch


# --- a cluster devall starts --------------------------------------------------------------------


def test_a_local_cluster_runs_the_batch_on_loopback_and_leaves_nothing(
    tmp_path: Path, short_tmp: Path
) -> None:
    example = str(EXAMPLES / "batch_fortunes.yaml")
    tasks = str(EXAMPLES / "batch_fortunes.tasks.jsonl")
    args = [example, tasks, "--executor", "ray", "-c", "2", "--out", "b", "--json"]
    args += ["--var", f"PYTHON={sys.executable}"]
    token_file = Path.home() / ".ray" / "auth_token"
    had_token_file = token_file.exists()
    code, out, err, watch = _batch(args, tmp_path, _environ(short_tmp))
    assert code == 0, err
    summary = json.loads(out)
    assert summary["executor"] == "ray" and summary["counts"]["ok"] == 4
    assert _foreign_lines(err) == []
    assert "batch: starting a local Ray cluster on 127.0.0.1\n" in err
    assert re.search(r"^batch: cluster up in [0-9.]+ s; 2 workers, 1 task at once each$", err, re.M)
    outputs = {line["id"]: line["output"] for line in results(tmp_path / "b")}
    assert sorted(outputs) == ["ana", "bo", "cy", "dee"]
    assert outputs["bo"].startswith("A gloomy fortune. Bo, your lucky number is ")
    for task_id in outputs:
        run_dir = tmp_path / "b" / "runs" / task_id
        assert json.loads((run_dir / "result.json").read_text())["status"] == "ok"
        assert (run_dir / "events.jsonl").stat().st_size > 0
    # Each worker started the example server once and kept it for all its tasks.
    logs = sorted((tmp_path / "b" / "servers").glob("worker-*/*.log"))
    assert 1 <= len(logs) <= 2 and all(log.name == "mcp_server.log" for log in logs)
    assert len(watch.seen) >= 3  # GCS, raylet, workers, servers...
    watch.assert_loopback_only()
    assert _wait_gone(watch) == []
    assert list(short_tmp.iterdir()) == []  # Ray's session folder and the workers' scratch
    assert token_file.exists() == had_token_file  # the cluster's token is never written down


def test_a_cluster_nobody_runs_at_the_address_is_refused_at_once(
    tmp_path: Path, short_tmp: Path
) -> None:
    from tests.servers.serve import free_port

    flow = scripted_workflow(tmp_path, "{input}")
    tasks = jsonl_tasks(tmp_path, {"id": "t1", "task": "one"})
    address = f"127.0.0.1:{free_port()}"
    args = [str(flow), str(tasks), "--executor", "ray", "--ray-address", address, "--out", "b"]
    code, _, err, _ = _batch(args, tmp_path, _environ(short_tmp))
    assert code == 4
    assert f"devall: error: cannot join the Ray cluster at {address}: " in err
    assert [r["id"] for r in results(tmp_path / "b")] == []  # nothing ran, nothing recorded


# --- a cluster this module starts, joined with --ray-address ------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    """A two-CPU local cluster; yields its address and token, then checks it left nothing.

    The folder is both the shipped working directory and the temporary one, so Ray's session
    folder lies inside what is shipped: it must be left out (zipping it filled a disk once).
    """
    folder = Path(tempfile.mkdtemp(prefix="dvc", dir="/tmp"))
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.servers.ray_cluster"],
        cwd=folder,
        env=_environ(folder),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    watch = TreeWatch(process.pid)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line, "the test cluster did not start"
        info = json.loads(line)
        watch.poll()
        watch.assert_loopback_only()
        yield {**info, "watch": watch}
    finally:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(60)
        watch.stop()
        shutil.rmtree(folder, ignore_errors=True)
    assert _wait_gone(watch) == []
    watch.assert_loopback_only()


def test_ray_address_runs_on_an_existing_cluster_and_resumes(
    tmp_path: Path, short_tmp: Path, cluster: dict[str, Any]
) -> None:
    turns = [
        {"tool_calls": [{"name": "env", "arguments": {"name": "HOME"}}]},
        "${GREETING} {input}",
    ]
    flow = scripted_workflow(
        tmp_path, *turns, tooling=[fixture_tooling()], variables={"GREETING": "hi"}
    )
    flow.write_text(flow.read_text().replace('"start": [\n   "a"\n  ]', '"start": ["${START}"]'))
    records = [
        {"id": "t1", "task": "one", "vars": {"START": "a"}},
        {"id": "t2", "task": "two", "vars": {"START": "a", "GREETING": "hello"}},
        {"id": "bad", "task": "three", "vars": {"START": "nowhere"}},
        {"id": "t4", "task": "four", "vars": {"START": "a"}},
    ]
    tasks = jsonl_tasks(tmp_path, *records)
    env = _environ(short_tmp, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=cluster["token"])
    args = [str(flow), str(tasks), "--executor", "ray", "--ray-address", cluster["address"]]
    args += ["-c", "2", "--out", "b"]
    code, out, err, _ = _batch(args, tmp_path, env)
    assert code == 1, err
    assert "task bad failed: the workflow does not load" in err
    assert f"batch: joining the Ray cluster at {cluster['address']}\n" in err
    assert re.search(r"^batch: joined in [0-9.]+ s; 2 workers, 1 task at once each$", err, re.M)
    lines = {r["id"]: r for r in results(tmp_path / "b")}
    assert {k: v["status"] for k, v in lines.items()} == {
        "t1": "ok",
        "t2": "ok",
        "bad": "failed",
        "t4": "ok",
    }
    assert lines["t1"]["output"] == "hi one" and lines["t2"]["output"] == "hello two"
    assert (tmp_path / "b" / "runs" / "t4" / "result.json").is_file()
    # Resume: the task fixed in the file runs again, the three ok ones do not.
    records[2]["vars"] = {"START": "a"}
    jsonl_tasks(tmp_path, *records)
    code, out, err, _ = _batch([*args, "--json"], tmp_path, env)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["counts"]["ran"] == 1 and summary["counts"]["skipped"] == 3
    assert _foreign_lines(err) == []
    second = results(tmp_path / "b")
    assert len(second) == 5 and second[-1]["id"] == "bad" and second[-1]["output"] == "hi three"
    # The cluster is still up: devall only left it.
    cluster["watch"].poll()
    assert cluster["watch"].survivors()
    assert list(short_tmp.iterdir()) == []
