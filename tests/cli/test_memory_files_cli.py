"""Memory files through `devall run` and `devall batch`: what devall refuses to read, and many
runs writing one store at the same time."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.cli.batch_flows import jsonl_tasks
from tests.helpers import cli, devall

WRITERS = 10  # writer nodes of the board workflow, each posting once per run

# Every run waits here until `count` runs have loaded the board, so that all of them hold the
# file as it was before any of them wrote: without locking and merging, each would then save
# its own copy over the others'.
BARRIER = """
import os, pathlib, time
folder = pathlib.Path({folder!r})
(folder / str(os.getpid())).touch()
deadline = time.monotonic() + 30
while len(list(folder.iterdir())) < {count} and time.monotonic() < deadline:
    time.sleep(0.02)
print("every writer has loaded the board")
"""


def write_flow(
    folder: Path, memory: dict[str, Any], nodes: list[dict[str, Any]], **graph: Any
) -> Path:
    """`flow.yaml` (JSON is YAML) with one memory store and these nodes."""
    document = {"graph": {"id": "flow", "memory": [memory], "nodes": nodes, **graph}}
    path = folder / "flow.yaml"
    path.write_text(json.dumps(document, indent=1))
    return path


def poster(node_id: str, text: str) -> dict[str, Any]:
    """A scripted agent that posts `text` on the board."""
    config = {"provider": "scripted", "script": [text], "memories": [{"name": "board"}]}
    return {"id": node_id, "type": "agent", "config": config}


def board_flow(folder: Path, barrier: Path, runs: int) -> Path:
    """Wait for `runs` runs at the barrier, then WRITERS nodes each post once on board.json."""
    barrier.mkdir()
    code = BARRIER.format(folder=str(barrier), count=runs)
    writers = [poster(f"w{n}", f"post of writer {n}") for n in range(WRITERS)]
    return write_flow(
        folder,
        {"name": "board", "type": "blackboard", "config": {"memory_path": "board.json"}},
        [
            {"id": "code", "type": "literal", "config": {"content": code}},
            {"id": "wait", "type": "python", "config": {}},
            *writers,
        ],
        start=["code"],
        edges=[
            {"from": "code", "to": "wait"},
            *({"from": "wait", "to": writer["id"]} for writer in writers),
        ],
    )


def one_poster_flow(folder: Path) -> Path:
    """One scripted agent posting on a blackboard kept in board.json."""
    return write_flow(
        folder,
        {"name": "board", "type": "blackboard", "config": {"memory_path": "board.json"}},
        [poster("a", "a post")],
        start=["a"],
    )


def test_a_fifo_as_memory_path_is_refused_not_waited_on(tmp_path: Path) -> None:
    flow = one_poster_flow(tmp_path)
    fifo = (tmp_path / "board.json").resolve()
    os.mkfifo(fifo)
    done = devall("run", str(flow), "--task", "t", "--out", str(tmp_path / "run"), timeout=120)
    assert done.returncode == 1, done.stderr
    assert (
        f"devall: error: memory store 'board': cannot read {fifo}: it is a FIFO (named pipe), "
        "not a regular file"
    ) in done.stderr
    assert "Traceback" not in done.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # left as it is


def test_a_memory_file_holding_other_entries_exits_1_and_is_left_as_it_is(
    tmp_path: Path,
) -> None:
    flow = one_poster_flow(tmp_path)
    board = (tmp_path / "board.json").resolve()
    board.write_text('[{"foo": "bar"}, 42, "str", null]')
    done = cli("run", str(flow), "--task", "t", "--out", str(tmp_path / "run"))
    assert done.returncode == 1, done.stderr
    assert (
        f"devall: error: memory store 'board': cannot read {board}: entry 0 is not a memory "
        "item: it has no 'id'"
    ) in done.stderr
    assert board.read_text() == '[{"foo": "bar"}, 42, "str", null]'
    assert json.loads((tmp_path / "run" / "result.json").read_text())["status"] == "failed"


def test_parallel_runs_and_batch_tasks_on_one_board_keep_every_post(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    flow = board_flow(runs, runs / "barrier", 4)

    def run(n: int) -> subprocess.CompletedProcess[str]:
        return devall("run", str(flow), "--task", f"t{n}", "--out", str(runs / f"run{n}"))

    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(run, range(4)))
    assert [d.returncode for d in done] == [0] * 4, [d.stderr for d in done]
    posts = json.loads((runs / "board.json").read_text())
    assert len(posts) == 4 * WRITERS
    assert len({post["id"] for post in posts}) == 4 * WRITERS

    batch = tmp_path / "batch"
    batch.mkdir()
    flow = board_flow(batch, batch / "barrier", 4)
    tasks = jsonl_tasks(batch, *({"id": f"t{n}", "task": f"t{n}"} for n in range(8)))
    done_batch = cli("batch", str(flow), str(tasks), "-c", "4", "--out", str(batch / "out"))
    assert done_batch.returncode == 0, done_batch.stderr
    posts = json.loads((batch / "board.json").read_text())
    assert len(posts) == 8 * WRITERS
    assert sorted(p["content_summary"] for p in posts) == sorted(
        f"post of writer {n}" for n in range(WRITERS) for _ in range(8)
    )
