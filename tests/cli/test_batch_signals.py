"""`devall batch` stopped by SIGTERM or killed with `kill -9`: records intact, resume goes on.

The batch runs as a real process; its model is the fake LLM in this process, answering each
request after 0.4 s, so that tasks are running when the signal comes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from devall_cli.cli.app import app
from tests.cli.batch_flows import jsonl_tasks, llm_workflow, results, summary
from tests.servers.fake_llm import FakeLLM

DEVALL = Path(sys.executable).parent / "devall"
TASKS = 8


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def finished_lines(batch_dir: Path) -> int:
    path = batch_dir / "results.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def start_batch(tmp_path: Path, llm: FakeLLM) -> tuple[subprocess.Popen[str], Path, Path, Path]:
    flow = llm_workflow(tmp_path, llm)
    tasks = jsonl_tasks(tmp_path, *({"id": f"t{i}", "task": f"task {i}"} for i in range(TASKS)))
    llm.enqueue(*(FakeLLM.slow_reply(0.4, "done") for _ in range(TASKS)))
    batch_dir = tmp_path / "b"
    proc = subprocess.Popen(
        [str(DEVALL), "batch", str(flow), str(tasks), "--out", str(batch_dir), "-c", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, flow, tasks, batch_dir


def resume(flow: Path, tasks: Path, batch_dir: Path) -> None:
    result = CliRunner().invoke(app, ["batch", str(flow), str(tasks), "--out", str(batch_dir)])
    assert result.exit_code == 0, result.stderr


def last_status(batch_dir: Path) -> dict[str, str]:
    return {line["id"]: line["status"] for line in results(batch_dir)}


def test_sigterm_records_the_running_tasks_as_interrupted_and_resume_runs_the_rest(
    tmp_path: Path, llm: FakeLLM
) -> None:
    proc, flow, tasks, batch_dir = start_batch(tmp_path, llm)
    try:
        assert wait_for(lambda: finished_lines(batch_dir) >= 2, 30)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "devall: error: terminated (SIGTERM)" in err
    statuses = last_status(batch_dir)
    interrupted = [i for i, s in statuses.items() if s == "interrupted"]
    ok = [i for i, s in statuses.items() if s == "ok"]
    assert 1 <= len(interrupted) <= 2 and len(ok) >= 2 and len(ok) + len(interrupted) < TASKS
    for task_id in interrupted:
        result = json.loads((batch_dir / "runs" / task_id / "result.json").read_text())
        assert result["status"] == "interrupted" and result["exit_code"] == 143
    document = summary(batch_dir)
    assert document["status"] == "interrupted" and document["exit_code"] == 143
    assert out.startswith(f"{TASKS} tasks: {len(ok)} ok, 0 failed, {len(interrupted)} interrupted")
    requests = len(llm.chat_requests)
    resume(flow, tasks, batch_dir)
    assert len(llm.chat_requests) - requests == TASKS - len(ok)  # finished tasks not re-run
    assert set(last_status(batch_dir).values()) == {"ok"} and len(last_status(batch_dir)) == TASKS


def test_kill_9_loses_at_most_the_running_tasks_and_never_a_line(
    tmp_path: Path, llm: FakeLLM
) -> None:
    proc, flow, tasks, batch_dir = start_batch(tmp_path, llm)
    try:
        assert wait_for(lambda: finished_lines(batch_dir) >= 3, 30)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    statuses = last_status(batch_dir)  # every line is whole JSON, the file ends with a newline
    ok = [i for i, s in statuses.items() if s == "ok"]
    assert len(ok) >= 3 and set(statuses.values()) == {"ok"}
    requests = len(llm.chat_requests)
    resume(flow, tasks, batch_dir)
    assert len(llm.chat_requests) - requests == TASKS - len(ok)
    lines = results(batch_dir)
    assert [line["id"] for line in lines[: len(ok)]] == ok  # the earlier lines are untouched
    assert sorted(line["id"] for line in lines) == [f"t{i}" for i in range(TASKS)]
