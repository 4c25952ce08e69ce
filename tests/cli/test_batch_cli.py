"""`devall batch` end to end through the CLI: formats, bad files, resume, stopping, sharing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from devall_cli.cli.app import app
from tests import helpers
from tests.cli.batch_flows import (
    LLM_KEY,
    fixture_tooling,
    jsonl_tasks,
    llm_workflow,
    results,
    run_events,
    scripted_workflow,
    summary,
)
from tests.conftest import REPO_ROOT
from tests.servers.fake_llm import FakeLLM


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """`devall batch ARGS`, in-process."""
    return helpers.invoke("batch", *args, stdin=stdin)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def topic_workflow(folder: Path) -> Path:
    """A scripted agent whose answer shows its task and the TOPIC placeholder."""
    return scripted_workflow(folder, "{input} about ${TOPIC}", variables={"TOPIC": "nothing"})


# --- formats ----------------------------------------------------------------------------------


FORMATS = {
    "jsonl": (
        "tasks.jsonl",
        '{"id": "one", "task": "poem", "vars": {"TOPIC": "rain"}}\n{"task": "song"}\n',
    ),
    "csv": ("tasks.csv", "id,task,TOPIC\none,poem,rain\n,song,\n"),
    "text": ("tasks.txt", "poem\nsong\n"),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_tasks_format_runs_each_task_into_its_own_run_directory(
    tmp_path: Path, fmt: str
) -> None:
    name, text = FORMATS[fmt]
    (tmp_path / name).write_text(text)
    flow = topic_workflow(tmp_path)
    code, out, err = invoke(str(flow), str(tmp_path / name), "--out", "b", "--var", "TOPIC=sun")
    assert code == 0, err
    lines = {line["id"]: line for line in results(Path("b"))}
    first = "one" if fmt != "text" else "1"
    topic = "rain" if fmt != "text" else "sun"  # the task's vars over --var, over `vars`
    assert lines[first]["output"] == f"poem about {topic}"
    second = "3" if fmt == "csv" else "2"  # named by its line, the header being line 1
    assert lines[second]["output"] == "song about sun"
    for line in lines.values():
        assert line["status"] == "ok" and line["error"] is None and line["exit_code"] == 0
        run_dir = Path("b") / line["run_dir"]
        result = json.loads((run_dir / "result.json").read_text())
        assert result["status"] == "ok" and result["output"] == line["output"]
        assert run_events(run_dir)[-1]["kind"] == "run.finished"
    assert "2 tasks: 2 ok, 0 failed" in out and "results: b/results.jsonl" in out
    assert "batch: 2/2 done, 0 failed" in err


def test_tasks_from_standard_input_and_the_default_batch_directory(tmp_path: Path) -> None:
    flow = topic_workflow(tmp_path)
    code, out, err = invoke(str(flow), "-", "--json", stdin='{"id": "x", "task": "a"}\n')
    assert code == 0, err
    document = json.loads(out)
    batch_dir = Path(document["out"])
    assert batch_dir.parent == Path("logs") and batch_dir.name.startswith("batch-flow-")
    assert document == summary(batch_dir)
    assert document["counts"]["ok"] == 1 and document["status"] == "ok"
    assert results(batch_dir)[0]["output"] == "a about nothing"


def test_bad_task_files_exit_3_before_anything_runs(tmp_path: Path) -> None:
    flow = topic_workflow(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "task": "ok"}\n{"task": 3}\n{"id": "a", "task": "again"}\nnope\n')
    code, out, err = invoke(str(flow), str(bad), "--out", "b")
    assert code == 3 and out == ""
    assert f"devall: error: {bad}:2: 'task' must be a text, got the number 3" in err
    assert f"{bad}:3: duplicate id 'a' (first on line 1)" in err
    assert f"{bad}:4:1: not a JSON object" in err
    assert "Traceback" not in err and not Path("b").exists()
    (tmp_path / "bad.csv").write_text("id,prompt\n1,x\n")
    code, _, err = invoke(str(flow), str(tmp_path / "bad.csv"), "--out", "b")
    assert code == 3 and "bad.csv:1: the header has no 'task' column" in err
    code, _, err = invoke(str(flow), str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read TASKS" in err


def test_a_broken_workflow_exits_3_before_any_task_runs(tmp_path: Path) -> None:
    flow = scripted_workflow(tmp_path, "x ${UNSET}")
    tasks = jsonl_tasks(tmp_path, {"task": "a"})
    code, _, err = invoke(str(flow), str(tasks), "--out", "b")
    assert code == 3 and "UNSET" in err and not Path("b").exists()


def test_executor_options_are_checked_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("devall_cli.batch.ray_cluster.ray_installed", lambda: False)
    flow = topic_workflow(tmp_path)
    code, _, err = invoke(str(flow), "missing.jsonl", "--executor", "ray")
    assert code == 2
    assert "devall: error: --executor ray needs the ray extra" in err
    assert "pip install 'devall-cli[ray]'" in err
    code, _, err = invoke(str(flow), "missing.jsonl", "--executor", "spark")
    assert code == 2 and "unknown executor 'spark'; choose one of: local, ray" in err
    code, _, err = invoke(str(flow), "missing.jsonl", "--ray-address", "127.0.0.1:6379")
    assert code == 2 and "--ray-address is for --executor ray" in err


def test_a_batch_directory_in_use_or_unusable_is_refused_by_name(tmp_path: Path) -> None:
    from devall_cli.run_files import locked_run_dir

    flow = topic_workflow(tmp_path)
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("poem\n")
    with locked_run_dir(Path("b"), "batch"):
        code, _, err = invoke(str(flow), str(tasks), "--out", "b")
    assert code == 1
    assert err == (
        "devall: error: the batch directory b is in use by another devall batch;"
        " give another --out\n"
    )
    Path("plain-file").write_text("x")
    code, _, err = invoke(str(flow), str(tasks), "--out", "plain-file")
    assert code == 1
    assert err == "devall: error: cannot use the batch directory plain-file: File exists\n"


# --- failures, resume, stopping early ------------------------------------------------------------


def test_resume_after_a_failure_reruns_only_the_tasks_not_ok(tmp_path: Path, llm: FakeLLM) -> None:
    flow = llm_workflow(tmp_path, llm)
    tasks = jsonl_tasks(tmp_path, *({"id": f"t{i}", "task": f"task {i}"} for i in range(4)))
    llm.enqueue("first", FakeLLM.error_reply(400), "third", "fourth")
    code, out, err = invoke(str(flow), str(tasks), "--out", "b", "--concurrency", "1")
    assert code == 1
    assert "devall: error: 1 of 4 tasks failed; see b/results.jsonl" in err
    assert "task t1 failed: " in err and "400" in err
    first = results(Path("b"))
    assert [(r["id"], r["status"]) for r in first] == [
        ("t0", "ok"),
        ("t1", "failed"),
        ("t2", "ok"),
        ("t3", "ok"),
    ]
    assert first[1]["exit_code"] == 5 and "400" in first[1]["error"]
    failed_result = json.loads((Path("b") / "runs" / "t1" / "result.json").read_text())
    assert failed_result["status"] == "failed"
    assert summary(Path("b"))["status"] == "failed" and summary(Path("b"))["exit_code"] == 1
    before = len(llm.chat_requests)
    code, out, err = invoke(str(flow), str(tasks), "--out", "b", "--json")
    assert code == 0, err
    assert len(llm.chat_requests) == before + 1  # only t1 ran again
    assert "batch: 1 tasks to run (3 of 4 already ok, skipped)" in err
    lines = results(Path("b"))
    assert [(r["id"], r["status"]) for r in lines[4:]] == [("t1", "ok")]
    document = json.loads(out)
    assert document["counts"] == {
        "total": 4,
        "ok": 4,
        "failed": 0,
        "interrupted": 0,
        "budget": 0,
        "not_run": 0,
        "ran": 1,
        "skipped": 3,
    }
    assert document["tokens"]["total"] > 0
    # --no-resume runs everything again and starts results.jsonl afresh.
    code, _, _ = invoke(str(flow), str(tasks), "--out", "b", "--no-resume", "-c", "4")
    assert code == 0 and len(llm.chat_requests) == before + 5
    assert sorted(r["id"] for r in results(Path("b"))) == ["t0", "t1", "t2", "t3"]


def test_max_failures_stops_starting_tasks(tmp_path: Path, llm: FakeLLM) -> None:
    flow = llm_workflow(tmp_path, llm)
    tasks = jsonl_tasks(tmp_path, *({"task": f"task {i}"} for i in range(10)))
    llm.enqueue(*(FakeLLM.error_reply(500) for _ in range(10)))
    code, out, err = invoke(
        str(flow), str(tasks), "--out", "b", "-c", "1", "--max-failures", "2", "--json"
    )
    assert code == 1
    assert len(llm.chat_requests) == 2 and len(results(Path("b"))) == 2
    document = json.loads(out)
    assert document["stopped_early"] is True and document["status"] == "failed"
    assert document["counts"]["failed"] == 2 and document["counts"]["not_run"] == 8
    assert "stopped after 2 failures (--max-failures)" in err


def test_a_task_whose_vars_break_the_workflow_fails_alone(tmp_path: Path) -> None:
    flow = scripted_workflow(tmp_path, "{input}")
    flow.write_text(flow.read_text().replace('"start": [\n   "a"\n  ]', '"start": ["${START}"]'))
    tasks = jsonl_tasks(
        tmp_path,
        {"id": "good", "task": "a", "vars": {"START": "a"}},
        {"id": "bad", "task": "b", "vars": {"START": "nowhere"}},
    )
    code, _, err = invoke(str(flow), str(tasks), "--out", "b")
    assert code == 1 and "task bad failed: the workflow does not load" in err
    lines = {r["id"]: r for r in results(Path("b"))}
    assert lines["good"]["status"] == "ok"
    assert lines["bad"]["status"] == "failed" and lines["bad"]["exit_code"] == 3
    assert "does not load with this task's vars" in lines["bad"]["error"]
    assert "nowhere" in lines["bad"]["error"] and lines["bad"]["run_dir"] == ""


def test_a_failures_details_and_hint_go_to_its_records_and_once_to_stderr(
    tmp_path: Path,
) -> None:
    server = tmp_path / "server.py"
    server.write_text("import devall_module_nobody_installed\n")
    tooling = fixture_tooling(args=[str(server)])
    flow = scripted_workflow(tmp_path, "{input}", tooling=[tooling])
    tasks = jsonl_tasks(tmp_path, *({"id": f"t{n}", "task": "x"} for n in range(3)))
    code, _, err = invoke(str(flow), str(tasks), "--out", "b")
    assert code == 1
    lines = results(Path("b"))
    assert [line["status"] for line in lines] == ["failed"] * 3
    hint = lines[0]["hint"]
    assert "no module 'devall_module_nobody_installed'" in hint
    assert all(line["hint"] == hint for line in lines)
    assert err.count(f"  hint: {hint}\n") == 1 and err.count("hint:") == 1
    # The server's stderr, as `devall run` shows it under the error.
    details = lines[0]["details"]
    assert any("ModuleNotFoundError" in line for line in details)
    assert all(line["details"] == details for line in lines)
    assert err.count("ModuleNotFoundError") == 1


def test_secrets_in_task_vars_are_masked_in_every_record(tmp_path: Path) -> None:
    flow = scripted_workflow(tmp_path, "using ${API_KEY} for {input}")
    secret = "sk-task-secret-93b1f0c2"
    tasks = jsonl_tasks(tmp_path, {"id": "s", "task": "x", "vars": {"API_KEY": secret}})
    code, out, err = invoke(str(flow), str(tasks), "--out", "b", "--json")
    assert code == 0, err
    assert results(Path("b"))[0]["output"] == "using *** for x"
    written = [p.read_text() for p in Path("b").rglob("*") if p.is_file()]
    assert not any(secret in text for text in [out, err, *written])


# --- shared servers -------------------------------------------------------------------------------


@pytest.mark.slow  # a soak test: `make test` runs it, `make test-fast` does not
def test_one_server_process_serves_a_fifty_task_batch(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"name": "track", "arguments": {"seconds": 0.02, "tag": "{input}"}}]},
        {"tool_calls": [{"name": "counter", "arguments": {}}]},
        {"content": "{tool_result}"},
    ]
    flow = scripted_workflow(tmp_path, *turns, tooling=[fixture_tooling(max_concurrency=3)])
    tasks = jsonl_tasks(tmp_path, *({"id": f"t{i:02d}", "task": f"t{i}"} for i in range(50)))
    code, _, err = invoke(str(flow), str(tasks), "--out", "b", "--concurrency", "8")
    assert code == 0, err
    lines = results(Path("b"))
    assert len(lines) == 50 and {r["status"] for r in lines} == {"ok"}
    # One process: it saw one MCP handshake in all, and every task was told the same pid.
    assert {json.loads(r["output"])["handshakes"] for r in lines} == {1}
    pids = {
        event["pid"]
        for r in lines
        for event in run_events(Path("b") / r["run_dir"])
        if event["kind"] == "server.ready"
    }
    assert len(pids) == 1
    assert [p.name for p in (Path("b") / "servers").iterdir()] == ["raw_server.log"]
    assert not any((Path("b") / r["run_dir"] / "servers").exists() for r in lines)
    # Used by several tasks at once, never past its max_concurrency.
    peaks = [
        int(e["blocks"][0]["text"].rsplit("peak=", 1)[1])
        for r in lines
        for e in run_events(Path("b") / r["run_dir"])
        if e["kind"] == "tool.result" and e["tool"] == "track"
    ]
    assert 2 <= max(peaks) <= 3


def test_tasks_share_identical_servers_and_get_their_own_for_other_vars(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"name": "env", "arguments": {"name": "MODE"}}]},
        {"tool_calls": [{"name": "image", "arguments": {}}]},
        {"content": "mode {tool_result}"},
    ]
    tooling = [fixture_tooling(env={"MODE": "${MODE}"})]
    flow = scripted_workflow(tmp_path, *turns, tooling=tooling)
    tasks = jsonl_tasks(
        tmp_path,
        *({"id": f"x{i}", "task": "t", "vars": {"MODE": "x"}} for i in range(3)),
        *({"id": f"y{i}", "task": "t", "vars": {"MODE": "y"}} for i in range(3)),
    )
    code, _, err = invoke(str(flow), str(tasks), "--out", "b", "-c", "6")
    assert code == 0, err
    lines = {r["id"]: r for r in results(Path("b"))}
    for task_id, line in lines.items():
        run_dir = Path("b") / line["run_dir"]
        mode = run_events(run_dir)
        env_result = next(e for e in mode if e["kind"] == "tool.result" and e["tool"] == "env")
        assert env_result["blocks"][0]["text"] == task_id[0]
        # The image a shared server returned is saved in the run directory of the calling task.
        assert [p.name for p in (run_dir / "attachments").iterdir()] == ["image_image_1.png"]
        result = json.loads((run_dir / "result.json").read_text())
        assert [a["path"] for a in result["attachments"]] == ["attachments/image_image_1.png"]
    assert sorted(p.name for p in (Path("b") / "servers").iterdir()) == [
        "raw_server-2.log",
        "raw_server.log",
    ]


@pytest.mark.slow
def test_the_offline_demo_runs_as_a_batch_of_eight(tmp_path: Path) -> None:
    """`devall batch workflows/demo_offline.yaml tasks.jsonl --concurrency 8`, as README shows."""
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    tasks = jsonl_tasks(tmp_path, *({"id": f"f{i}", "task": f"fortune {i}"} for i in range(8)))
    done = subprocess.run(
        [
            str(bin_dir / "devall"),
            "batch",
            "workflows/demo_offline.yaml",
            str(tasks),
            "--concurrency",
            "8",
            "--out",
            str(tmp_path / "b"),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    lines = results(tmp_path / "b")
    assert len(lines) == 8
    for line in lines:
        assert line["output"].startswith("Fortune cookie says: Your lucky number is ")
    assert [p.name for p in (tmp_path / "b" / "servers").iterdir()] == ["mcp_server.log"]
    assert LLM_KEY not in done.stdout


# --- human nodes and the example ------------------------------------------------------------------

EXAMPLES = REPO_ROOT / "workflows" / "examples"


def test_human_nodes_take_their_replies_from_answers_in_every_task(tmp_path: Path) -> None:
    flow = str(EXAMPLES / "human_review_loop.yaml")
    tasks = jsonl_tasks(tmp_path, {"task": "rain"}, {"task": "snow"})
    code, out, err = invoke(flow, str(tasks), "--out", "b")
    assert code == 2 and out == ""
    assert "nobody can answer the human node(s) 'review' in a batch" in err
    assert "--answers FILE" in err and not Path("b").exists()
    answers = str(EXAMPLES / "human_review_loop.answers.json")
    code, _, err = invoke(flow, str(tasks), "--out", "b", "--answers", answers)
    assert code == 0, err
    outputs = [line["output"] for line in results(Path("b"))]
    assert (
        outputs
        == [
            "Draft 3, after the notes (Better. Add rain\nin the last line.): "
            "low grey clouds, the first drops fall"
        ]
        * 2
    )  # each task takes the replies from the first


def test_the_batch_example_runs_its_tasks_on_one_shared_server() -> None:
    example = str(EXAMPLES / "batch_fortunes.yaml")
    python = f"PYTHON={sys.executable}"
    validated = CliRunner().invoke(app, ["validate", example, "--var", python])
    assert validated.exit_code == 0, validated.stderr
    jsonl = EXAMPLES / "batch_fortunes.tasks.jsonl"
    csv = EXAMPLES / "batch_fortunes.tasks.csv"
    code, out, err = invoke(example, str(jsonl), "--out", "b", "--var", python, "--json")
    assert code == 0, err
    assert json.loads(out)["counts"]["ok"] == 4
    outputs = {line["id"]: line["output"] for line in results(Path("b"))}
    assert [outputs[i].split(".")[0] for i in ("ana", "bo", "cy", "dee")] == [
        "A plain fortune",
        "A gloomy fortune",
        "A cheerful fortune",
        "A plain fortune",
    ]
    assert outputs["bo"].startswith("A gloomy fortune. Bo, your lucky number is ")
    assert [p.name for p in (Path("b") / "servers").iterdir()] == ["mcp_server.log"]
    # The CSV file (ChatDev's batch format, `vars` as a JSON cell) holds the same tasks.
    from devall_cli.batch.tasks import read_tasks

    as_csv = [(t.id, t.task, dict(t.vars)) for t in read_tasks(str(csv))]
    assert as_csv == [(t.id, t.task, dict(t.vars)) for t in read_tasks(str(jsonl))]
    code, _, _ = invoke(example, str(jsonl), "--out", "b", "--var", python)
    assert code == 0 and len(results(Path("b"))) == 4  # all ok already: nothing ran again
