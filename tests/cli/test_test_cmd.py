"""`devall test`: cases run and checked, the table, --json, --junit, judges, cassettes, exit codes.

The workflows are scripted (function tools, no server) or talk to the fake LLM; the starter of
`devall init` runs its own MCP server.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

from tests.helpers import cli, write_tool_flow
from tests.servers.fake_llm import FakeLLM

VENV_PATH = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
JUDGE_KEY = "sk-judge-secret-8c1f27"
LLM_KEY = "sk-model-secret-51d0aa"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_failing_expectation_fails_the_command_and_every_report_names_it(
    tmp_path: Path,
) -> None:
    write_tool_flow(tmp_path / "flows")
    write(
        tmp_path / "tests" / "weather.test.yaml",
        textwrap.dedent(
            """\
        cases:
          - name: the answer names the city
            workflow: ../flows/flow.yaml
            task: the weather
            expect:
              - output: {json_path: {path: $.city, equals: Paris}}
              - tool: {name: lookup, args: {city: Paris}, times: 1}
          - name: the lookup is for London
            workflow: ../flows/flow.yaml
            task_file: task.txt
            vars: {CITY: London}
            expect:
              - node: {id: writer, visits: 1}
              - tool: {name: lookup, args: {city: London}}
          - name: the budget holds
            workflow: ../flows/flow.yaml
            expect:
              - budget: {model_calls: 3, tool_calls: 2}
              - edge: {from: teller, to: writer}
            """
        ),
    )
    write(tmp_path / "tests" / "task.txt", "the weather in London\n")

    done = cli("test", "tests", "--junit", "junit.xml", "--out", "runs", cwd=tmp_path)

    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert "FAIL" in done.stderr and "3 cases: 2 passed, 1 failed" in done.stderr
    suite = ElementTree.parse(tmp_path / "junit.xml").getroot()
    assert (suite.tag, suite.get("tests"), suite.get("failures")) == ("testsuite", "3", "1")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "the answer names the city", "the lookup is for London", "the budget holds"
    ]  # fmt: skip
    (failure,) = suite.iter("failure")
    assert failure.get("message", "").startswith("expect[1] tool lookup: tool lookup was called")
    assert "weather.test.yaml:14:9" in (failure.text or "")
    for name in ("the-answer-names-the-city", "the-lookup-is-for-London", "the-budget-holds"):
        assert (tmp_path / "runs" / name / "events.jsonl").is_file()
        assert json.loads((tmp_path / "runs" / name / "result.json").read_text())["status"] == "ok"

    done = cli("test", "tests", "--json", "--case", "the lookup is for London", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    (case,) = document["cases"]
    assert (case["name"], case["status"], case["failed"]) == (
        "the lookup is for London", "failed", "expect[1] tool lookup"
    )  # fmt: skip
    node, tool = case["expectations"]
    assert node["passed"] and node["actual"]["visits"] == 1
    assert not tool["passed"]
    assert tool["spec"] == {"tool": {"name": "lookup", "args": {"city": "London"}}}
    assert tool["actual"] == [{"node": "teller", "arguments": {"city": "Paris", "days": 2}}]
    assert case["run_dir"].startswith("logs/test-") and case["duration_ms"] > 0


def test_a_judge_passes_and_fails_on_the_graders_score(tmp_path: Path, fake_llm: FakeLLM) -> None:
    write_tool_flow(tmp_path)
    judge = (
        '{model: {provider: openai, name: grader, base_url: "${JUDGE_URL}", '
        'api_key: "${JUDGE_KEY}", params: {retries: 0}}, rubric: "RUBRIC", threshold: 0.5}'
    )
    write(
        tmp_path / "graded.test.yaml",
        "cases:\n  - name: graded\n    workflow: flow.yaml\n    task: weather in Paris\n"
        "    expect:\n"
        f"      - judge: {judge.replace('RUBRIC', 'Does it name the city?')}\n"
        f"      - judge: {judge.replace('RUBRIC', 'Does it give the wind?')}\n",
    )
    fake_llm.enqueue('{"score": 0.9, "reasoning": "It names Paris."}')
    fake_llm.enqueue('Here is my grade: {"score": 0.2, "reasoning": "No wind at all."} Thanks')
    env = {"JUDGE_URL": fake_llm.base_url, "JUDGE_KEY": JUDGE_KEY}

    done = cli("test", "graded.test.yaml", "--json", "--junit", "j.xml", env=env, cwd=tmp_path)

    assert done.returncode == 1, done.stderr
    first, second = json.loads(done.stdout)["cases"][0]["expectations"]
    assert (first["passed"], first["score"], first["reasoning"]) == (True, 0.9, "It names Paris.")
    assert (second["passed"], second["score"], second["actual"]) == (False, 0.2, 0.2)
    assert second["reasoning"] == "No wind at all."
    assert "scored the final answer 0.2, below the threshold 0.5" in second["message"]
    asked = [request.body["messages"][-1]["content"] for request in fake_llm.chat_requests]
    assert "Does it name the city?" in asked[0] and '"city": "Paris"' in asked[0]
    assert fake_llm.chat_requests[0].headers["authorization"] == f"Bearer {JUDGE_KEY}"
    assert first["spec"]["judge"]["model"]["api_key"] == "***"
    report = (tmp_path / "j.xml").read_text()
    for text in (done.stdout, done.stderr, report):
        assert JUDGE_KEY not in text


def test_a_cassette_is_recorded_once_then_replayed_without_the_model(tmp_path: Path) -> None:
    write(
        tmp_path / "flow.yaml",
        "graph:\n  id: asker\n  start: [asker]\n  nodes:\n    - id: asker\n      type: agent\n"
        "      config: {provider: openai, name: m, base_url: '${LLM_URL}',"
        " api_key: '${LLM_KEY}', params: {retries: 0}}\n",
    )
    tests = write(
        tmp_path / "asker.test.yaml",
        "cases:\n  - name: asks\n    workflow: flow.yaml\n    task: pick a number\n"
        "    replay: cassettes/asks.jsonl\n    expect:\n      - output: {contains: '7'}\n",
    )
    (tmp_path / "cassettes").mkdir()
    with FakeLLM() as llm:
        llm.enqueue("I pick 7.")
        env = {"LLM_URL": llm.base_url, "LLM_KEY": LLM_KEY}
        recorded = cli("test", "asker.test.yaml", "--record", env=env, cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    assert "cassette written: cassettes/asks.jsonl" in recorded.stderr
    assert LLM_KEY not in (tmp_path / "cassettes" / "asks.jsonl").read_text()

    # No model, no variables: the cassette answers, and holds the placeholders' values.
    replayed = cli("test", "asker.test.yaml", "--json", drop=("LLM_URL", "LLM_KEY"), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["cases"][0]["mode"] == "replay"

    tests.write_text(tests.read_text().replace("pick a number", "pick a letter"))
    changed = cli("test", "asker.test.yaml", "--json", cwd=tmp_path)
    assert changed.returncode == 1, changed.stderr
    (exit_check,) = json.loads(changed.stdout)["cases"][0]["expectations"]
    assert (exit_check["kind"], exit_check["actual"]) == ("exit", 6)
    assert "differs from the recording" in exit_check["message"]
    assert any(line.startswith("+") and "pick a letter" in line for line in exit_check["details"])
    assert "asker.test.yaml --case asks --record" in changed.stderr


def test_a_bad_test_file_exits_3_pointing_at_each_mistake(tmp_path: Path) -> None:
    write_tool_flow(tmp_path)
    write(
        tmp_path / "bad.test.yaml",
        "cases:\n"
        "  - name: typo\n    workflow: flow.yaml\n    expect:\n"
        "      - tool: {name: lookup, tims: 1}\n"
        "  - name: nowhere\n    workflow: missing.yaml\n",
    )

    done = cli("test", "bad.test.yaml", cwd=tmp_path)

    assert done.returncode == 3, done.stderr
    assert "bad.test.yaml:5:30: cases[0].expect[0].tool.tims: unknown key 'tims'" in done.stderr
    assert "did you mean 'times'?" in done.stderr
    missing = "bad.test.yaml:7:15: cases[1].workflow: no such workflow file: missing.yaml"
    assert missing in done.stderr
    assert done.stdout == ""


def test_the_starter_of_init_comes_with_tests_that_pass(tmp_path: Path) -> None:
    made = cli("init", "proj", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "devall test proj/workflow.test.yaml" in made.stderr

    done = cli("test", "proj/workflow.test.yaml", "--json", env=VENV_PATH, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    (case,) = json.loads(done.stdout)["cases"]
    assert case["status"] == "passed" and len(case["expectations"]) == 5
    output = case["expectations"][0]
    assert output["actual"].startswith("Fortune cookie says: Your lucky number is ")
