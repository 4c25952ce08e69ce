"""results.jsonl: whole lines, the last line of an id wins, an unfinished tail is cut off."""

from __future__ import annotations

import json
import os
from pathlib import Path

from devall_cli.batch.results import ResultsLog, TaskOutcome, read_results
from devall_cli.batch.runner import plan_resume
from devall_cli.batch.summary import Tally
from devall_cli.batch.tasks import BatchTask


def outcome(task_id: str, status: str = "ok", ms: float = 10.0, tokens: int = 0) -> TaskOutcome:
    return TaskOutcome(
        id=task_id,
        status=status,
        output=f"out {task_id}",
        duration_ms=ms,
        tokens={"prompt": tokens, "completion": 0, "total": tokens},
        run_dir=f"runs/{task_id}",
    )


NO_COST = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cached_tokens": 0,
    "reasoning_tokens": 0,
    "cost_usd": 0.0,
    "priced": True,
    "price_source": None,
}


def test_each_outcome_is_one_json_line_with_the_documented_fields(tmp_path: Path) -> None:
    log = ResultsLog(tmp_path / "results.jsonl")
    log.append(outcome("a"))
    log.append(TaskOutcome(id="b", status="failed", error="boom\nsecond line", exit_code=4))
    log.close()
    assert 1 <= log.syncs <= 3  # the flusher's fsyncs (lines may share one), and close's
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {
            "id": "a",
            "status": "ok",
            "output": "out a",
            "error": None,
            "duration_ms": 10.0,
            "tokens": {"prompt": 0, "completion": 0, "total": 0},
            "run_dir": "runs/a",
            "exit_code": 0,
            "details": [],
            "hint": None,
            "cost": NO_COST,
        },
        {
            "id": "b",
            "status": "failed",
            "output": "",
            "error": "boom\nsecond line",
            "duration_ms": 0.0,
            "tokens": {},
            "run_dir": "",
            "exit_code": 4,
            "details": [],
            "hint": None,
            "cost": NO_COST,
        },
    ]
    assert os.stat(tmp_path / "results.jsonl").st_mode & 0o777 == 0o600


def test_reading_back_keeps_the_last_line_of_each_id_and_skips_an_unfinished_tail(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.jsonl"
    log = ResultsLog(path)
    for item in (outcome("a", "failed"), outcome("b"), outcome("a")):
        log.append(item)
    log.close()
    whole = path.read_bytes()
    with path.open("ab") as handle:
        handle.write(b"not a result\n" + b'{"id": "c", "status": "ok", "out')  # killed mid-write
    previous = read_results(path)
    assert {k: v.status for k, v in previous.outcomes.items()} == {"a": "ok", "b": "ok"}
    assert previous.bad_lines == [4]
    assert previous.whole_bytes == len(whole) + len(b"not a result\n")
    # Appending again first cuts the unfinished line, so the next line stays whole.
    log = ResultsLog(path, keep_bytes=previous.whole_bytes)
    log.append(outcome("c"))
    log.close()
    assert path.read_bytes().endswith(
        b"not a result\n" + json.dumps(outcome("c").record()).encode() + b"\n"
    )
    assert set(read_results(path).outcomes) == {"a", "b", "c"}


def test_lines_deeper_than_the_limit_or_with_wrong_counts_are_skipped_not_fatal(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.jsonl"
    lines = [
        json.dumps(outcome("a").record()),
        '{"a":' * 10000 + "1" + "}" * 10000,
        '{"id": "b", "status": "ok", "tokens": {"total": "lots", "prompt": null}}',
        '{"id": "c", "status": "ok", "tokens": [1]}',
        '{"id": "d", "status": "ok", "duration_ms": "slow"}',
    ]
    path.write_text("\n".join(lines) + "\n")
    previous = read_results(path)
    assert set(previous.outcomes) == {"a"}
    assert previous.bad_lines == [2, 3, 4, 5]


def test_a_missing_file_is_no_previous_result(tmp_path: Path) -> None:
    previous = read_results(tmp_path / "results.jsonl")
    assert previous.outcomes == {} and previous.whole_bytes == 0


def test_resume_runs_every_task_not_already_ok() -> None:
    tasks = [BatchTask(i, f"task {i}") for i in ("a", "b", "c", "d")]
    previous = {"a": outcome("a"), "b": outcome("b", "failed"), "c": outcome("c", "interrupted")}
    plan = plan_resume(tasks, previous, resume=True)
    assert [t.id for t in plan.to_run] == ["b", "c", "d"] and [t.id for t in plan.skipped] == ["a"]
    assert [t.id for t in plan_resume(tasks, previous, resume=False).to_run] == ["a", "b", "c", "d"]


def test_the_tally_counts_each_tasks_latest_result() -> None:
    previous = {"a": outcome("a", tokens=5), "b": outcome("b", "failed"), "gone": outcome("gone")}
    tally = Tally(["a", "b", "c", "d"], previous)
    tally.skipped = 1
    tally.record(outcome("b", ms=300.0, tokens=7))
    tally.record(outcome("c", "failed", ms=50.0))
    assert tally.counts() == {
        "total": 4,
        "ok": 2,
        "failed": 1,
        "interrupted": 0,
        "budget": 0,
        "not_run": 1,
        "ran": 2,
        "skipped": 1,
    }
    assert tally.tokens() == {"prompt": 12, "completion": 0, "total": 12}
    assert [s["id"] for s in tally.slowest(2)] == ["b", "c"]


def test_a_long_output_refers_to_its_run_directory_and_resume_reads_it_whole(
    tmp_path: Path,
) -> None:
    long = "long output " * 10_000  # over run_values.LARGE_CHARS
    log = ResultsLog(tmp_path / "results.jsonl")
    log.append(TaskOutcome(id="t1", status="ok", output=long, run_dir="runs/t1"))
    log.close()
    line = json.loads((tmp_path / "results.jsonl").read_text(encoding="utf-8"))
    ref = line["output"]
    assert ref["$ref"].startswith("runs/t1/values/") and ref["chars"] == len(long)
    assert (tmp_path / ref["$ref"]).read_text(encoding="utf-8") == long
    assert read_results(tmp_path / "results.jsonl").outcomes["t1"].output == long
