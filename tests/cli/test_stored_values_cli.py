"""A large tool result is stored once in the run directory (values/), the records refer to it,
and what reads the records back (the report) sees the whole text."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from devall_cli.report.reader import read_run
from tests.conftest import SERVERS_DIR
from tests.helpers import invoke

PIECE, TIMES = "0123456789abcdef", 60_000  # a result of 960,000 characters


def test_tools_call_of_a_large_result_stores_it_once(tmp_path: Path) -> None:
    server = f"{sys.executable} {SERVERS_DIR / 'raw_server.py'} --fixture"
    run_dir = tmp_path / "run"
    args = json.dumps({"text": PIECE, "times": TIMES})
    code, _, err = invoke(
        "tools", "call", "--command", server, "echo", "--args", args, "--out", str(run_dir)
    )
    assert code == 0, err
    whole = PIECE * TIMES
    files = [path for path in run_dir.rglob("*") if path.is_file()]
    size = sum(path.stat().st_size for path in files)
    assert len(whole) <= size < 1.1 * len(whole), sorted((p.name, p.stat().st_size) for p in files)
    stored = [path for path in files if path.parent.name == "values"]
    assert [path.read_text(encoding="utf-8") for path in stored] == [whole]
    document = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    ref = {"$ref": f"values/{stored[0].name}", "chars": len(whole), "sha256": stored[0].stem}
    assert document["output"] == document["nodes"][0]["output"] == ref
    assert document["nodes"][0]["visits"][0]["outputs"] == [ref]
    log = read_run(run_dir)  # what the HTML report is made from
    assert log.result["output"] == log.result["nodes"][0]["output"] == whole
    steps = [step for node in log.nodes for visit in node.visits for step in visit.steps]
    [call] = [step.call for step in steps if step.call is not None]
    assert call.blocks[0]["text"] == whole
    assert log.nodes[0].visits[0].outputs == [whole]
