"""servers/<id>.log: bounded in size, moved aside when full, long lines cut with a marker."""

from __future__ import annotations

from pathlib import Path

import pytest

from devall_cli import limits
from devall_cli.tools.server_log import ServerLogFile, cut_line


def test_cut_line_counts_bytes_and_never_splits_a_character() -> None:
    line = "é" * 100  # 200 bytes of UTF-8
    cut = cut_line(line, 60)
    assert len(cut.encode()) <= 60
    assert cut.startswith("é") and cut.endswith("of 100 characters]")
    assert "\ufffd" not in cut
    assert cut_line("short", 60) == "short"


def test_a_full_log_moves_aside_and_a_new_one_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "SERVER_LOG_BYTES", 200)
    path = tmp_path / "servers" / "s.log"
    log = ServerLogFile(path)
    for n in range(8):
        log.write(f"line {n} " + "x" * 40)
    log.close()
    older = path.with_name("s.log.1")
    assert path.stat().st_size <= 200 and older.stat().st_size <= 200
    assert path.read_text().splitlines()[-1].startswith("line 7 ")
    assert path.read_text().startswith("[devall: the log reached 200 bytes; ")
    # A restart continues the file, and still moves it aside when it is full.
    log = ServerLogFile(path, append=True)
    log.write("after the restart")
    log.close()
    assert path.read_text().splitlines()[-1] == "after the restart"
