"""Edge conditions and processors from the functions directory, end to end through the CLI.

The example workflows in workflows/examples/edge_functions/ are validated and run as shipped;
other workflows are written per test, with scripted agents or agents on the fake LLM.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devall_cli.errors import ExitCode
from tests.conftest import REPO_ROOT
from tests.helpers import events, invoke
from tests.servers.fake_llm import FakeLLM

EXAMPLES = REPO_ROOT / "workflows" / "examples" / "edge_functions"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def run(workflow: Path, out: Path, *extra: str, **env: str) -> tuple[int, str, str]:
    return invoke("run", str(workflow), "--task", "T", "--out", str(out), *extra, env=env)


def result(out: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((out / "result.json").read_text())
    return document


def node_outputs(out: Path) -> dict[str, list[str]]:
    return {
        node["id"]: [text for visit in node["visits"] for text in visit["outputs"]]
        for node in result(out)["nodes"]
    }


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


# --- the shipped examples --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["function_condition", "regex_processor", "function_processor"])
def test_every_example_is_valid(name: str) -> None:
    code, stdout, stderr = invoke("validate", str(EXAMPLES / f"{name}.yaml"))
    assert (code, stderr) == (0, "")
    assert f"workflow '{name}' is valid" in stdout


def test_the_function_condition_example_loops_until_the_review_approves(tmp_path: Path) -> None:
    code, stdout, stderr = run(EXAMPLES / "function_condition.yaml", tmp_path / "run")
    assert code == 0, stderr
    assert stdout.startswith("Score: 8/10. Ship it. (Draft 2")
    outputs = node_outputs(tmp_path / "run")
    assert outputs["writer"] == [
        "Draft 1 for: T",
        "Draft 2, longer and warmer, after: Score: 4/10. Too short.",
    ]
    assert len(outputs["reviewer"]) == 2 and len(outputs["publish"]) == 1
    routes = [(e["target"], e["condition"], e["met"]) for e in events(tmp_path / "run", "edge")]
    assert routes == [
        ("reviewer", "true", True),
        ("writer", "needs_work", True),
        ("publish", "is_approved", False),
        ("reviewer", "true", True),
        ("writer", "needs_work", False),
        ("publish", "is_approved", True),
    ]


def test_the_regex_example_cuts_the_answer_for_each_target(tmp_path: Path) -> None:
    code, stdout, stderr = run(EXAMPLES / "regex_processor.yaml", tmp_path / "run")
    assert code == 0, stderr
    assert stdout == 'print("hello, world")  # TODO: read the name from argv\n'
    assert node_outputs(tmp_path / "run")["notes"] == [
        "* read the name from argv\n* add a test"
    ]


def test_the_function_processor_example_shapes_and_filters(tmp_path: Path) -> None:
    code, stdout, stderr = run(EXAMPLES / "function_processor.yaml", tmp_path / "run")
    assert code == 0, stderr
    assert stdout.splitlines() == [
        "Checklist #1 (4 items)",
        "- [ ] Steps to T:",
        "- [ ] book a van",
        "- [ ] pack the kitchen",
        "- [ ] Who keeps the spare keys?",
    ]
    assert node_outputs(tmp_path / "run")["questions"] == ["Who keeps the spare keys?"]


# --- workflows written per test ------------------------------------------------------------

PAIR = """\
graph:
  start: [a]
  end: [b]
  nodes:
    - id: a
      type: agent
      config:
        provider: scripted
        script: [{content: "%s"}]
    - id: b
      type: passthrough
      config: {}
  edges:
    - from: a
      to: b
%s
"""


def pair(folder: Path, answer: str, edge: str) -> Path:
    return write(folder / "flow.yaml", PAIR % (answer, textwrap.indent(edge, "      ")))


def test_a_dropped_payload_does_not_start_the_target(tmp_path: Path) -> None:
    flow = pair(
        tmp_path,
        "nothing to extract",
        "process: {type: regex_extract, config: {pattern: '\\d+', on_no_match: drop}}",
    )
    code, _, stderr = run(flow, tmp_path / "run")
    assert code == 0, stderr
    (edge,) = events(tmp_path / "run", "edge")
    assert (edge["met"], edge["dropped"], edge["triggered"]) == (True, True, False)
    statuses = {node["id"]: node["status"] for node in result(tmp_path / "run")["nodes"]}
    assert statuses == {"a": "ok", "b": "skipped"}


def test_a_raising_condition_fails_the_run_naming_the_edge_and_function(tmp_path: Path) -> None:
    rules = tmp_path / "functions" / "edge" / "rules.py"
    write(rules, "def picky(text):\n    raise KeyError(text)\n")
    flow = pair(tmp_path, "hello", "condition: picky")
    code, stdout, stderr = run(flow, tmp_path / "run")
    assert code == ExitCode.FAILED
    assert "devall: error: edge a → b: condition 'picky' raised KeyError: 'hello'" in stderr
    assert "Traceback" not in stderr and stdout == ""


def test_a_raising_processor_fails_the_run_naming_the_edge_and_function(tmp_path: Path) -> None:
    write(
        tmp_path / "functions" / "edge_processor" / "shape.py",
        "def tidy(text, state):\n    return text / 2\n",
    )
    flow = pair(tmp_path, "hello", "process: {type: function, config: {name: tidy}}")
    code, _, stderr = run(flow, tmp_path / "run")
    assert code == ExitCode.FAILED
    assert "edge a → b: processor 'function(tidy)' raised TypeError: unsupported operand" in stderr
    assert result(tmp_path / "run")["status"] == "failed"


def test_an_edge_module_that_cannot_be_imported_stops_the_run_before_any_node(
    tmp_path: Path,
) -> None:
    module = write(
        tmp_path / "functions" / "edge" / "rules.py",
        "import no_such_module_devall_x\n\ndef ok(text):\n    return True\n",
    )
    code, _, stderr = run(pair(tmp_path, "hello", "condition: ok"), tmp_path / "run")
    assert code == ExitCode.CONFIG
    assert (
        f"devall: error: {module}:1: cannot import function module: ModuleNotFoundError: "
        "No module named 'no_such_module_devall_x'"
    ) in stderr
    assert events(tmp_path / "run", "node.started") == []


def test_a_function_condition_routes_the_answers_of_a_real_model_endpoint(
    tmp_path: Path, llm: FakeLLM
) -> None:
    write(
        tmp_path / "functions" / "edge" / "triage.py",
        '''\
        def is_bug(text: str) -> bool:
            """A report the model classified as a bug."""
            return text.strip().upper().startswith("BUG")
        ''',
    )
    flow = write(
        tmp_path / "flow.yaml",
        f"""\
        graph:
          start: [triage]
          nodes:
            - id: triage
              type: agent
              config:
                provider: openai
                name: m
                base_url: {llm.base_url}
                api_key: sk-test-edge-functions
                params: {{retries: 0}}
            - {{id: fix, type: passthrough, config: {{}}}}
            - {{id: answer, type: passthrough, config: {{}}}}
          edges:
            - {{from: triage, to: fix, condition: is_bug}}
            - from: triage
              to: answer
              condition: {{type: keyword, config: {{none: [BUG]}}}}
        """,
    )
    llm.enqueue("BUG: the button does nothing")
    code, stdout, stderr = run(flow, tmp_path / "run")
    assert code == 0, stderr
    assert stdout.strip() == "BUG: the button does nothing"
    statuses = {node["id"]: node["status"] for node in result(tmp_path / "run")["nodes"]}
    assert statuses == {"triage": "ok", "fix": "ok", "answer": "skipped"}
    assert len(llm.requests) == 1


def test_chatdevs_layout_with_its_environment_variables(tmp_path: Path) -> None:
    """Workflows in yaml_instance/, functions/ at the root; MAC_* override one folder each."""
    root = tmp_path / "repo"
    write(root / "functions" / "function_calling" / "utils.py", "def tag(text: str) -> str:\n"
          "    return f'<{text}>'\n")
    write(root / "functions" / "edge" / "conditions.py", "def tagged(data):\n"
          "    return data.startswith('<')\n")
    write(tmp_path / "alt" / "transformers.py", "def upper(data, _context):\n"
          "    return data.upper()\n")
    flow = write(
        root / "yaml_instance" / "flow.yaml",
        """\
        graph:
          start: [a]
          end: [b]
          nodes:
            - id: a
              type: agent
              config:
                provider: scripted
                tooling:
                  - type: function
                    prefix: ''
                    config: {tools: [{name: tag}]}
                script:
                  - tool_calls: [{name: tag, arguments: {text: hi}}]
                  - content: "{tool_result}"
            - {id: b, type: passthrough, config: {}}
          edges:
            - from: a
              to: b
              condition: tagged
              process: {type: function, config: {name: upper}}
        """,
    )
    environ = {"MAC_EDGE_PROCESSOR_FUNCTIONS_DIR": str(tmp_path / "alt")}
    code, _, stderr = invoke("validate", str(flow), env=environ)
    assert code == 0, stderr
    code, stdout, stderr = run(flow, tmp_path / "run", **environ)
    assert (code, stdout) == (0, "<HI>\n"), stderr


def test_validate_reports_every_function_problem_in_one_pass(tmp_path: Path) -> None:
    write(tmp_path / "functions" / "tools.py", "def count(text: str) -> int:\n    return 1\n")
    write(tmp_path / "functions" / "edge" / "rules.py", "def ok(text):\n    return True\n")
    shape = tmp_path / "functions" / "edge_processor" / "shape.py"
    write(shape, "def tidy(text):\n    return text\n")
    flow = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          start: [a]
          nodes:
            - id: a
              type: agent
              config:
                provider: scripted
                script: [{content: x}]
                tooling:
                  - type: function
                    config:
                      tools: [{name: count}, {name: fetch}, {name: "tools:cuont"}, {name: 7}]
                      timeot: 3
            - {id: b, type: passthrough, config: {}}
            - {id: c, type: passthrough, config: {}}
          edges:
            - {from: a, to: b, condition: ready, keep_mesage: true}
            - from: a
              to: c
              process: {type: function, config: {name: tidy}}
            - from: b
              to: c
              process: {type: regex_extract, config: {pattern: "(x)", group: 3}}
        """,
    )
    code, stdout, stderr = invoke("validate", "--json", str(flow))
    assert (code, stderr) == (ExitCode.CONFIG, "")
    document = json.loads(stdout)
    found = {(i["severity"], i["path"], i["line"]) for i in document["issues"]}
    tooling = "graph.nodes[0].config.tooling[0].config"
    assert found == {
        ("error", f"{tooling}.tools[1].name", 12),
        ("error", f"{tooling}.tools[2].name", 12),
        ("error", f"{tooling}.tools[3].name", 12),
        ("error", f"{tooling}.timeot", 13),
        ("error", "graph.edges[0].condition", 17),
        ("warning", "graph.edges[0].keep_mesage", 17),
        ("error", "graph.edges[1].process.config.name", 20),
        ("error", "graph.edges[2].process.config.group", 23),
    }
