"""The run directory: devall's files never go through a symlink, and what cannot be written is said.

The end-to-end case (`devall run` into a directory full of planted links) is in
tests/cli/test_reliability_cli.py; these tests pin each writer on its own.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from devall_cli.errors import RunFailedError
from devall_cli.events import RunStartedEvent
from devall_cli.redaction import Redactor
from devall_cli.run_files import locked_run_dir, open_run_file
from devall_cli.tools.stdio_process import StdioProcess
from devall_cli.trace.jsonl import JsonlSink
from devall_cli.trace.result import write_json_atomic

SECRET = "not yours\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the run directory that a planted link points at."""
    target = tmp_path / "outside.txt"
    target.write_text(SECRET)
    return target


def test_the_event_log_replaces_a_planted_link(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "run").mkdir()
    link = tmp_path / "run" / "events.jsonl"
    link.symlink_to(outside)
    with JsonlSink(link, Redactor()) as sink:
        sink(RunStartedEvent(run_id="r", workflow="w", task="t"))
    assert outside.read_text() == SECRET
    assert not link.is_symlink() and '"run.started"' in link.read_text()


def test_result_json_replaces_a_planted_link(tmp_path: Path, outside: Path) -> None:
    link = tmp_path / "result.json"
    link.symlink_to(outside)
    write_json_atomic(link, {"status": "ok"})
    assert outside.read_text() == SECRET
    assert not link.is_symlink() and '"ok"' in link.read_text()


def test_appending_keeps_a_regular_file_and_replaces_a_dangling_link(tmp_path: Path) -> None:
    log = tmp_path / "servers" / "s.log"
    with open_run_file(log, append=True, own_folder=True) as handle:
        handle.write("one\n")
    with open_run_file(log, append=True, own_folder=True) as handle:
        handle.write("two\n")
    assert log.read_text() == "one\ntwo\n"
    dangling = tmp_path / "servers" / "d.log"
    dangling.symlink_to(tmp_path / "nowhere" / "created.txt")
    with open_run_file(dangling, append=True, own_folder=True) as handle:
        handle.write("here\n")
    assert not (tmp_path / "nowhere").exists()
    assert dangling.read_text() == "here\n"


def test_a_symlinked_folder_is_refused_only_where_devall_owns_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "servers").symlink_to(elsewhere)
    with pytest.raises(OSError, match="is a symlink, not a folder of the run"):
        open_run_file(tmp_path / "servers" / "s.log", own_folder=True)
    assert list(elsewhere.iterdir()) == []
    # The run directory itself is the user's choice (`--out`): a link to it is followed.
    with open_run_file(tmp_path / "servers" / "events.jsonl") as handle:
        handle.write("{}\n")
    assert (elsewhere / "events.jsonl").read_text() == "{}\n"


def test_a_fifo_in_place_of_the_event_log_is_an_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RunFailedError) as info:
        JsonlSink(fifo, Redactor())
    assert "cannot write the event log" in info.value.message
    assert "is not a regular file" in info.value.message


async def test_a_server_log_that_cannot_be_written_is_said_in_the_log(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "servers").symlink_to(elsewhere)
    lines: list[str] = []
    process = StdioProcess(
        id="s",
        command=sys.executable,
        args=["-c", "import sys; print('up', file=sys.stderr, flush=True)"],
        log_path=tmp_path / "servers" / "s.log",
        on_log=lambda _id, line: lines.append(line),
        wait_for_log="up",
    )
    try:
        await process.spawn()
        await process.wait_ready(10)
    finally:
        await process.close()
    assert list(elsewhere.iterdir()) == []
    assert lines[0].startswith("[devall: cannot write ") and "symlink" in lines[0]
    assert "up" in lines


def test_a_file_with_another_name_is_replaced_not_written_through(
    tmp_path: Path, outside: Path
) -> None:
    for append in (False, True):
        log = tmp_path / f"run{append}" / "servers" / "s.log"
        log.parent.mkdir(parents=True)
        os.link(outside, log)
        with open_run_file(log, append=append, own_folder=True) as handle:
            handle.write("ours\n")
        assert outside.read_text() == SECRET
        assert log.read_text() == "ours\n"
        assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_a_run_directory_is_held_by_one_run_at_a_time(tmp_path: Path) -> None:
    busy = pytest.raises(RunFailedError, match="is in use by another devall run")
    with locked_run_dir(tmp_path / "run"), busy, locked_run_dir(tmp_path / "run"):
        pass
    with locked_run_dir(tmp_path / "run"):  # free again once the first run is over
        pass
