"""`human` and `python` nodes through the real CLI: --answers, no terminal, code runs, signals."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devall_cli import limits
from tests.conftest import REPO_ROOT
from tests.helpers import events, invoke
from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import pid_gone

EXAMPLES = REPO_ROOT / "workflows" / "examples"
REVIEW_LOOP = EXAMPLES / "human_review_loop.yaml"
REVIEW_ANSWERS = EXAMPLES / "human_review_loop.answers.json"
AGENT_CODE = EXAMPLES / "python_runs_agent_code.yaml"
DEVALL = Path(sys.executable).parent / "devall"
API_KEY = "sk-humanpy-7c41e0d2b9"
TOKEN = "tok-humanpy-3a9f51c8e6"
FENCE = "```"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def result(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "result.json").read_text())  # type: ignore[no-any-return]


def gate_workflow(tmp_path: Path, second: str = "") -> Path:
    """A literal, then a human node `gate` (visited once), optionally a second human node."""
    nodes: list[dict[str, Any]] = [
        {"id": "draft", "type": "literal", "config": {"content": "the draft"}},
        {"id": "gate", "type": "human", "config": {"description": "Approve?"}},
    ]
    edges = [{"from": "draft", "to": "gate"}]
    if second:
        nodes.append({"id": second, "type": "human"})
        edges.append({"from": "gate", "to": second})
    document = {"graph": {"id": "gate", "start": ["draft"], "nodes": nodes, "edges": edges}}
    path = tmp_path / "gate.yaml"
    path.write_text(json.dumps(document, indent=1))  # JSON is YAML
    return path


# --- human nodes with --answers ------------------------------------------------------------


def test_a_review_loop_takes_one_reply_per_visit_from_the_answers_file(tmp_path: Path) -> None:
    code, out, err = invoke(
        "run", str(REVIEW_LOOP), "--task", "rain", "--answers", str(REVIEW_ANSWERS), "--out", "run"
    )
    assert code == 0, err
    assert out == (
        "Draft 3, after the notes (Better. Add rain\nin the last line.): "
        "low grey clouds, the first drops fall\n"
    )
    replies = [
        (r["node"], r["visit"], r["channel"], r["reply"])
        for r in result(Path("run"))["human_replies"]
    ]
    assert replies == [
        ("review", 1, "answers", "Make it lower and slower."),
        ("review", 2, "answers", "Better. Add rain\nin the last line."),
        ("review", 3, "answers", "APPROVE"),
    ]
    asked = events(Path("run"), "human.asked")
    assert [(e["visit"], e["channel"]) for e in asked] == [(v, "answers") for v in (1, 2, 3)]
    assert asked[0]["description"].startswith("Read the draft. Reply APPROVE")
    assert [e["reply"] for e in events(Path("run"), "human.replied")][-1] == "APPROVE"
    assert "? review asks the operator from the answers file" in err
    assert "node review (visit 3)" in err


def test_json_answers_for_any_node_and_the_json_document(tmp_path: Path) -> None:
    wf = gate_workflow(tmp_path, second="final")
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"*": ["first reply", "second reply"]}))
    code, out, err = invoke("run", str(wf), "--answers", str(answers), "--out", "run", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["output"] == "second reply"
    assert [r["node"] for r in document["human_replies"]] == ["gate", "final"]


def test_running_out_of_replies_fails_the_run_at_that_node(tmp_path: Path) -> None:
    answers = write(tmp_path / "short.yaml", "review: [more please]\n")
    code, out, err = invoke(
        "run", str(REVIEW_LOOP), "--task", "rain", "--answers", str(answers), "--out", "run"
    )
    assert code == 1
    assert out == ""
    message = (
        f"devall: error: node 'review' (visit 2) waits for a human reply, but {answers} has no "
        "reply left for it (all used: 1 under 'review')"
    )
    assert message in err
    document = result(Path("run"))
    assert document["status"] == "failed" and "node 'review' (visit 2)" in document["error"]
    assert [r["reply"] for r in document["human_replies"]] == ["more please"]


def test_without_a_terminal_or_answers_a_human_node_fails_at_once(tmp_path: Path) -> None:
    """A subprocess whose stdin stays open: waiting for it would hang; devall must not."""
    wf = gate_workflow(tmp_path)
    proc = subprocess.run(  # the timeout only guards a hang: the run fails at once
        [str(DEVALL), "run", str(wf), "--out", str(tmp_path / "run")],
        stdin=subprocess.PIPE,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert (
        "devall: error: node 'gate' waits for a human reply, but there is no terminal to ask on "
        "and no --answers file\n  hint: run devall on a terminal" in proc.stderr
    )
    assert "Traceback" not in proc.stderr
    assert result(tmp_path / "run")["nodes"][0]["status"] == "ok"  # the draft ran first


def test_every_problem_of_an_answers_file_is_reported_before_the_run(tmp_path: Path) -> None:
    wf = gate_workflow(tmp_path)
    answers = write(tmp_path / "bad.yaml", "gat: [yes]\ngate: {a: 1}\n'*': [[nested]]\n")
    code, out, err = invoke("run", str(wf), "--task", "t", "--answers", "bad.yaml", "--out", "run")
    assert code == 3
    assert out == ""
    assert err.splitlines()[::3] == [
        "devall: error: bad.yaml:1:1: gat: 'gat' is not a human node of the workflow "
        "(human nodes: gate); did you mean 'gate'?",
        "devall: error: bad.yaml:2:7: gate: the replies for 'gate' must be a list of texts, "
        "got a mapping",
        "devall: error: bad.yaml:3:7: *[0]: each reply must be text, got a list",
    ]
    assert not Path("run").exists()  # nothing started
    assert answers.exists()


def test_a_missing_answers_file_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = invoke("run", str(gate_workflow(tmp_path)), "--answers", "nope.yaml")
    assert code == 2
    assert "'--answers'" in err and "does not exist" in err


def test_an_answers_file_over_the_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "ANSWERS_FILE_BYTES", 64)
    write(tmp_path / "big.yaml", "gate: [" + "x" * 100 + "]\n")
    code, _, err = invoke("run", str(gate_workflow(tmp_path)), "--answers", "big.yaml")
    assert code == 3
    assert "devall: error: big.yaml: the file is too large: 109 bytes; answers files may" in err


# --- python nodes ----------------------------------------------------------------------------


def test_the_example_runs_agent_code_fixes_it_on_failure_and_reports(tmp_path: Path) -> None:
    code, out, err = invoke("validate", str(AGENT_CODE))
    assert code == 0, err
    code, out, err = invoke("run", str(AGENT_CODE), "--task", "the primes below 50", "--out", "run")
    assert code == 0, err
    assert out == (
        "The program ran and printed:\n"
        "primes: [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47]\ncount: 15\n"
    )
    runs = result(Path("run"))["code_runs"]
    assert [(r["node"], r["visit"], r["script"], r["status"], r["exit_code"]) for r in runs] == [
        ("run_code", 1, "code_workspace/run_code.py", "failed", 1),
        ("run_code", 2, "code_workspace/run_code_run-2.py", "ok", 0),
    ]
    fixed = Path("run/code_workspace/run_code_run-2.py").read_text()
    assert fixed.startswith("def is_prime(n):\n    return") and FENCE not in fixed
    assert "code · run_code · code_workspace/run_code.py · failed (exit 1)" in err
    assert "NameError: name 'prime' is not defined" in err


def test_the_review_example_validates(tmp_path: Path) -> None:
    code, out, err = invoke("validate", str(REVIEW_LOOP))
    assert code == 0, err
    assert "  review   human\n" in out


def test_code_an_openai_model_wrote_runs_and_its_output_reaches_the_next_model(
    tmp_path: Path, llm: FakeLLM
) -> None:
    wf = write(
        tmp_path / "code.yaml",
        f"""
        graph:
          id: code
          start: [coder]
          nodes:
            - id: coder
              type: agent
              config: &model
                provider: openai
                name: gpt-test
                base_url: {llm.base_url}
                api_key: {API_KEY}
                params: {{retries: 0}}
            - id: run
              type: python
              config: {{timeout_seconds: 20}}
            - id: critic
              type: agent
              config: *model
          edges:
            - {{from: coder, to: run}}
            - {{from: run, to: critic}}
        """,
    )
    llm.enqueue(f"Sure:\n{FENCE}python\n    import math\n    print(math.factorial(10))\n{FENCE}\n")
    llm.enqueue("3628800 is right")
    code, out, err = invoke("run", str(wf), "--task", "10!", "--out", "run")
    assert code == 0, err
    assert out == "3628800 is right\n"
    critic = llm.requests[1].body["messages"]
    assert {"role": "user", "content": "3628800\n"} in critic


def test_a_failing_script_is_data_for_the_next_node_and_the_run_goes_on(tmp_path: Path) -> None:
    wf = write(
        tmp_path / "fail.yaml",
        """
        graph:
          id: fail
          start: [code]
          nodes:
            - {id: code, type: literal, config: {content: "import sys; sys.exit('no luck')"}}
            - {id: run, type: python}
            - {id: after, type: passthrough}
          edges: [{from: code, to: run}, {from: run, to: after}]
        """,
    )
    code, out, err = invoke("run", str(wf), "--out", "run")
    assert code == 0, err
    failure = "==CODE EXECUTION FAILED==\nScript execution failed\nexit_code=1\nstderr:\nno luck\n"
    assert out == failure
    assert result(Path("run"))["nodes"][1]["status"] == "ok"
    (finished,) = events(Path("run"), "code.finished")
    assert (finished["status"], finished["exit_code"]) == ("failed", 1)
    assert finished["stderr"] == "no luck\n"


def test_secrets_a_script_prints_are_masked_everywhere(tmp_path: Path) -> None:
    wf = write(
        tmp_path / "secret.yaml",
        """
        graph:
          id: secret
          start: [code]
          nodes:
            - id: code
              type: literal
              config:
                content: |
                  import os, sys
                  print("token is", os.environ["API_TOKEN"])
                  print("and again", os.environ["API_TOKEN"], file=sys.stderr)
                  sys.exit(3)
            - id: run
              type: python
              config: {env: {API_TOKEN: "${TOKEN}"}}
          edges: [{from: code, to: run}]
        """,
    )
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"TOKEN={TOKEN}", "-v")
    assert code == 0, err
    assert "and again ***" in out and "and again ***" in err
    for text in (out, err, *(p.read_text() for p in Path("run").glob("*.json*"))):
        assert TOKEN not in text


def test_validate_never_runs_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    interpreter = tmp_path / "fake-python"
    interpreter.write_text(f"#!/bin/sh\necho ran > {marker}\necho interpreted\n")
    interpreter.chmod(0o755)
    wf = write(
        tmp_path / "never.yaml",
        f"""
        graph:
          id: never
          start: [code]
          nodes:
            - {{id: code, type: literal, config: {{content: "open('{marker}', 'w')"}}}}
            - {{id: run, type: python, config: {{interpreter: {interpreter}}}}}
          edges: [{{from: code, to: run}}]
        """,
    )
    code, out, err = invoke("validate", str(wf), "--json")
    assert code == 0, err
    summary = json.loads(out)["summary"]
    assert summary["nodes"][1] == {
        "id": "run",
        "type": "python",
        "interpreter": str(interpreter),
        "timeout_seconds": 60,
        "tooling": [],
    }
    assert not marker.exists()
    code, out, err = invoke("run", str(wf), "--out", "run")
    assert (code, out) == (0, "interpreted\n") and marker.exists()  # run does run it


@pytest.mark.parametrize(
    ("signum", "exit_code"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_during_a_script_kills_its_process_group(
    tmp_path: Path, signum: int, exit_code: int
) -> None:
    wf = write(
        tmp_path / "slow.yaml",
        """
        graph:
          id: slow
          start: [code]
          nodes:
            - id: code
              type: literal
              config:
                content: |
                  import subprocess, sys, time
                  child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
                  open("pids.txt", "w").write(f"{child.pid}\\n")
                  time.sleep(60)
            - {id: run, type: python}
          edges: [{from: code, to: run}]
        """,
    )
    run_dir = tmp_path / "run"
    pids_file = run_dir / "code_workspace" / "pids.txt"
    proc = subprocess.Popen(
        [str(DEVALL), "run", str(wf), "--out", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The deadlines only guard a hang; a loaded machine may take its time.
        deadline = time.monotonic() + 60
        while not (pids_file.exists() and pids_file.read_text().endswith("\n")):
            assert time.monotonic() < deadline, "the script never wrote its child's pid"
            time.sleep(0.05)
        started = next(e for e in events(run_dir, "code.started"))
        grandchild = int(pids_file.read_text())
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == exit_code, err
    assert out == "" and "Traceback" not in err
    assert started["script"] == "code_workspace/run.py"
    deadline = time.monotonic() + 30
    while not pid_gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_gone(grandchild)
    document = result(run_dir)
    assert document["status"] == "interrupted" and document["exit_code"] == exit_code


def test_the_script_sees_devalls_environment_under_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf = write(
        tmp_path / "env.yaml",
        """
        graph:
          id: env
          start: [code]
          nodes:
            - id: code
              type: literal
              config:
                content: "import os; print(*(os.environ[n] for n in ('KEPT', 'OWN', 'SET')))"
            - {id: run, type: python, config: {env: {OWN: "mine", SET: "replaced"}}}
          edges: [{from: code, to: run}]
        """,
    )
    monkeypatch.setenv("KEPT", "inherited")
    monkeypatch.setenv("SET", "devall's")
    code, out, err = invoke("run", str(wf), "--out", "run")
    assert code == 0, err
    assert out == "inherited mine replaced\n"
