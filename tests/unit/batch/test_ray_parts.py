"""The Ray executor's parts that need no cluster: the pool's size, the worker, run files."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from devall_cli.batch.ray_cluster import (
    SHIP_EXCLUDES,
    loopback_environ,
    on_loopback,
    reap,
    ship,
)
from devall_cli.batch.ray_worker import (
    BatchWorker,
    WorkerSpec,
    disk_mark,
    read_tree,
    write_tree,
)
from tests.cli.batch_flows import fixture_tooling, scripted_workflow


@pytest.mark.parametrize(
    ("concurrency", "tasks", "cpus", "expected"),
    [
        (16, 64, 2, (2, 8)),  # few CPUs: fewer workers, each running several tasks
        (4, 64, 8, (4, 1)),  # enough CPUs: one task at a time per worker
        (16, 3, 8, (3, 1)),  # never more slots than tasks
        (5, 64, 2, (2, 3)),  # an uneven split rounds up
        (1, 1, 1, (1, 1)),
    ],
)
def test_the_pool_splits_the_concurrency_over_the_clusters_cpus(
    concurrency: int, tasks: int, cpus: int, expected: tuple[int, int]
) -> None:
    pytest.importorskip("ray", reason="the executor module imports ray's parts lazily only")
    from devall_cli.batch.ray_executor import plan_pool

    assert plan_pool(concurrency, tasks, cpus) == expected


def test_a_local_cluster_is_kept_on_loopback_with_a_token_of_its_own() -> None:
    first, second = loopback_environ(), loopback_environ()
    assert first["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
    assert first["RAY_AUTH_MODE"] == "token" and first["RAY_USAGE_STATS_ENABLED"] == "0"
    assert len(first["RAY_AUTH_TOKEN"]) == 64
    assert first["RAY_AUTH_TOKEN"] != second["RAY_AUTH_TOKEN"]


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1:6379", True),
        ("127.3.4.5:6379", True),
        ("localhost:6379", True),
        ("ray://127.0.0.1:10001", True),
        ("[::1]:6379", True),
        ("10.1.2.3:6379", False),
        ("head-node:6379", False),
        ("auto", False),
    ],
)
def test_which_cluster_addresses_are_on_loopback(address: str, loopback: bool) -> None:
    assert on_loopback(address) is loopback


def test_a_clusters_own_folder_inside_the_workflow_folder_is_never_shipped(
    tmp_path: Path,
) -> None:
    """A workflow kept in the temporary folder: Ray must not zip the session it is writing."""
    pytest.importorskip("ray", reason="uses Ray's own packaging to see what is shipped")
    from ray._private.runtime_env.packaging import get_uri_for_directory

    (tmp_path / "flow.yaml").write_text("graph: {}")
    (tmp_path / "logs").mkdir()
    session = tmp_path / "tmp[1]" / "devall-ray-x1"  # names are patterns to Ray: escaped
    (session / "session_1").mkdir(parents=True)
    env = ship(tmp_path, session)
    assert env["working_dir"] == str(tmp_path)

    def shipped() -> str:
        return get_uri_for_directory(str(tmp_path), True, env["excludes"])

    before = shipped()
    (session / "session_1" / "ports_by_node.json").write_text("Ray writes here")
    (tmp_path / "logs" / "run.log").write_text("devall's own logs stay home too")
    assert shipped() == before
    (tmp_path / "tmp1" / "devall-ray-x1").mkdir(parents=True)
    (tmp_path / "tmp1" / "devall-ray-x1" / "f.py").write_text("a folder of the workflow ships")
    assert shipped() != before
    # A cluster folder elsewhere adds nothing to the list.
    assert ship(tmp_path, Path("/elsewhere/devall-ray-x1"))["excludes"] == list(SHIP_EXCLUDES)


def test_fifos_sockets_and_devices_in_the_workflow_folder_are_never_packed(
    tmp_path: Path,
) -> None:
    """Ray opens every file it packs: a FIFO with no writer would block that for ever."""
    pytest.importorskip("ray", reason="uses Ray's own packaging to see what is shipped")
    import os
    import socket
    import threading

    from ray._private.runtime_env.packaging import get_uri_for_directory

    (tmp_path / "flow.yaml").write_text("graph: {}")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    os.mkfifo(tmp_path / "deep" / "er" / "a pipe[1]")
    os.symlink("/dev/zero", tmp_path / "zeros")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "sock"))
    try:
        env = ship(tmp_path)
        assert env["excludes"][-3:] == ["/deep/er/a pipe\\[1\\]", "/sock", "/zeros"]
        done: list[str] = []
        packer = threading.Thread(
            target=lambda: done.append(get_uri_for_directory(str(tmp_path), True, env["excludes"])),
            daemon=True,
        )
        packer.start()
        packer.join(30)
        if not done:  # unblock the open that hangs, then fail
            os.close(os.open(tmp_path / "deep" / "er" / "a pipe[1]", os.O_WRONLY | os.O_NONBLOCK))
        assert done, "packing the folder blocked on a FIFO"
    finally:
        listening.close()


def test_run_files_go_back_whole_and_never_outside_their_directory(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "attachments").mkdir(parents=True)
    (source / "result.json").write_text("{}")
    (source / "attachments" / "a.png").write_bytes(b"\x89PNG\x00")
    files = read_tree(source)
    assert sorted(files) == [("attachments/a.png", b"\x89PNG\x00"), ("result.json", b"{}")]
    target = tmp_path / "batch" / "runs" / "t1"
    target.mkdir(parents=True)
    (target / "stale.txt").write_text("from an earlier attempt")
    write_tree(target, [*files, ("../../escaped.txt", b"x"), ("/etc/owned", b"x")])
    assert sorted(read_tree(target)) == sorted(files)
    assert not (tmp_path / "batch" / "escaped.txt").exists()
    assert read_tree(tmp_path / "missing") == []


def test_reap_kills_what_does_not_end_by_itself() -> None:
    import subprocess
    import sys

    from devall_cli.procs.proc_table import read_process

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    info = read_process(child.pid)
    assert info is not None
    assert reap({child.pid: info.start}, wait_s=0.2) == [child.pid]
    assert child.wait(5) != 0
    assert reap({child.pid: info.start}, wait_s=0.2) == []  # gone: nothing to kill


async def test_a_worker_runs_tasks_from_the_shipped_folder_on_one_server(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "env", "arguments": {"name": "PWD"}}]}, "${WHO}: {input}"]
    scripted_workflow(tmp_path, *turns, tooling=[fixture_tooling()], variables={"WHO": "nobody"})
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    shutil.copy(tmp_path / "flow.yaml", shipped / "flow.yaml")
    os.chdir(shipped)  # Ray makes the shipped folder the worker's working directory
    spec = WorkerSpec(
        workflow_path=str(tmp_path / "elsewhere" / "flow.yaml"),  # not on the worker's machine
        workflow_name="flow.yaml",
        cli_vars={"WHO": "cli"},
        dotenv_text="WHO=dotenv\n",
    )
    worker = BatchWorker(spec)
    try:
        replies = [
            await worker.run({"id": "t1", "task": "one", "vars": {}}),
            await worker.run({"id": "t2", "task": "two", "vars": {"WHO": "task"}}),
        ]
    finally:
        logs = await worker.close()
    outcomes = [reply["outcome"] for reply in replies]
    assert [o["status"] for o in outcomes] == ["ok", "ok"]
    assert [o["output"] for o in outcomes] == ["cli: one", "task: two"]
    assert [o["run_dir"] for o in outcomes] == ["runs/t1", "runs/t2"]
    for reply in replies:
        names = {name for name, _ in reply["files"]}
        assert {"events.jsonl", "result.json"} <= names
        result = json.loads(dict(reply["files"])["result.json"])
        assert result["status"] == "ok"
    assert [name for name, _ in logs] == ["raw_server.log"]  # one server for both tasks
    assert not worker.scratch.exists()


async def test_a_worker_confines_its_children_as_the_driver_would(tmp_path: Path) -> None:
    from devall_cli.procs.sandbox import default_sandbox, set_default_sandbox

    scripted_workflow(tmp_path, "hi", tooling=[fixture_tooling()])
    spec = WorkerSpec(workflow_path=str(tmp_path / "flow.yaml"), workflow_name="flow.yaml")
    assert spec.sandbox == "off"
    try:
        worker = BatchWorker(dataclasses.replace(spec, sandbox="prefer"))
        assert default_sandbox() == "prefer"  # the driver's --sandbox, before any spawn
        await worker.close()
    finally:
        set_default_sandbox(None)


def test_an_address_nobody_listens_on_is_refused_at_once() -> None:
    import socket

    from devall_cli.batch.ray_cluster import reachable

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        reachable(f"127.0.0.1:{port}")  # listening: no error
    with pytest.raises(ConnectionError):
        reachable(f"127.0.0.1:{port}")  # closed now
    with pytest.raises(ConnectionError, match="not a HOST:PORT address"):
        reachable("nowhere")
    reachable("ray://127.0.0.1:1")  # client mode: left to Ray's own check


async def test_a_worker_on_the_drivers_machine_streams_a_chunk_and_writes_runs_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the worker moves to the driver's folder; undone after
    scripted_workflow(tmp_path, "done: {input}")
    batch_dir, elsewhere = tmp_path / "batch", tmp_path / "elsewhere"
    batch_dir.mkdir()
    elsewhere.mkdir()
    spec = WorkerSpec(
        workflow_path=str(tmp_path / "flow.yaml"),
        workflow_name="flow.yaml",
        per_worker=2,
        batch_dir=str(batch_dir),
        cwd=str(elsewhere),
        mark=disk_mark(batch_dir),  # the driver's view of it: this very folder
    )
    worker = BatchWorker(spec)
    try:
        assert Path.cwd() == elsewhere  # the driver's working directory, as a local batch's
        records = [{"id": f"t{n}", "task": f"task {n}", "vars": {}} for n in range(3)]
        messages = [message async for message in worker.run_chunk(records)]
        await worker.hold()
        held = [message async for message in worker.run_chunk([{"id": "t9", "task": "x"}])]
    finally:
        await worker.close()
    started = [task_id for message in messages for task_id in message["started"]]
    done = [reply for message in messages for reply in message["done"]]
    assert started == ["t0", "t1", "t2"] and messages[0]["started"] == ["t0", "t1"]
    outputs = [reply["outcome"]["output"] for reply in done]
    assert outputs == ["done: task 0", "done: task 1", "done: task 2"]
    assert all(reply["written"] and "files" not in reply for reply in done)
    for n in range(3):  # written where the batch keeps them, not sent back
        result = json.loads((batch_dir / "runs" / f"t{n}" / "result.json").read_text())
        assert result["status"] == "ok"
    assert held == []  # held: the chunk's task never starts
