"""Map and tree dynamic edges through `devall run` and `devall validate`, end to end: the fake
OpenAI-compatible server, the scripted provider, a real MCP fixture server, and the examples."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.helpers import events, invoke
from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import SERVERS_DIR

EXAMPLES = REPO_ROOT / "workflows" / "examples"
API_KEY = "sk-dynamic-5c1e9a7b3d"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "wf.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def model(llm: FakeLLM, role: str) -> str:
    """The config of an agent on the fake LLM (one line of YAML flow style)."""
    return (
        f"{{provider: openai, name: fake-model, base_url: '{llm.base_url}', "
        f"api_key: '${{LLM_KEY}}', role: '{role}', params: {{retries: 0}}}}"
    )


def users(request_body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request_body["messages"] if m["role"] == "user"]


def fan_out_flow(tmp_path: Path, llm: FakeLLM, *, map_parallel: int = 1) -> Path:
    return write(
        tmp_path,
        f"""\
        graph:
          id: fan_out
          start: [planner, style]
          end: [editor]
          nodes:
            - {{id: planner, type: agent, config: {model(llm, "List the topics as JSON.")}}}
            - {{id: style, type: literal, config: {{content: "Style: short"}}}}
            - {{id: worker, type: agent, config: {model(llm, "Write about one topic.")}}}
            - {{id: editor, type: agent, config: {model(llm, "Merge the notes.")}}}
          edges:
            - from: planner
              to: worker
              dynamic:
                type: map
                split: {{type: json_path, config: {{json_path: topics}}}}
                config: {{max_parallel: {map_parallel}}}
            - {{from: style, to: worker, trigger: false}}
            - from: worker
              to: editor
              dynamic: {{type: tree, config: {{group_size: 2, max_parallel: 1}}}}
        """,
    )


# --- map and tree on the fake LLM --------------------------------------------------------------


def test_map_then_tree_on_a_model_endpoint(tmp_path: Path, llm: FakeLLM) -> None:
    wf = fan_out_flow(tmp_path, llm)
    llm.enqueue('```json\n{"topics": ["alpha", "beta", "gamma"]}\n```')
    llm.enqueue("W-alpha", "W-beta", "W-gamma", "E-1", "E-2", "FINAL")
    code, out, err = invoke(
        "run", str(wf), "--task", "three topics", "--out", "run", "--var", f"LLM_KEY={API_KEY}"
    )
    assert code == 0, err
    assert out == "FINAL\n"
    bodies = [r.body for r in llm.requests]
    assert len(bodies) == 7
    assert users(bodies[0]) == ["three topics"]
    # one worker per topic, the static style first in each, in topic order (max_parallel 1)
    assert [users(b) for b in bodies[1:4]] == [
        ["Style: short", "alpha"],
        ["Style: short", "beta"],
        ["Style: short", "gamma"],
    ]
    assert bodies[1]["messages"][0] == {"role": "system", "content": "Write about one topic."}
    # the tree: groups of two, then the two summaries as user messages
    assert [users(b) for b in bodies[4:]] == [["W-alpha", "W-beta"], ["W-gamma"], ["E-1", "E-2"]]
    result = json.loads(Path("run/result.json").read_text())
    assert [(n["id"], n["status"], n["model_calls"]) for n in result["nodes"]] == [
        ("planner", "ok", 1),
        ("style", "ok", 0),
        ("worker", "ok", 0),
        ("worker#1", "ok", 1),
        ("worker#2", "ok", 1),
        ("worker#3", "ok", 1),
        ("editor", "ok", 0),
        ("editor#1-1", "ok", 1),
        ("editor#1-2", "ok", 1),
        ("editor#2-1", "ok", 1),
    ]
    assert result["nodes"][2]["output"] == "W-gamma"
    assert result["nodes"][2]["visits"][0]["outputs"] == ["W-alpha", "W-beta", "W-gamma"]
    assert result["totals"]["model_calls"] == 7
    assert [n["message"] for n in result["notes"]] == [
        "node worker: map over 3 units, at most 1 at once",
        "node editor: tree layer 1: 3 inputs in 2 groups of up to 2",
        "node editor: tree layer 2: 2 inputs in 1 group of up to 2",
    ]
    replies = [e["node_id"] for e in events(Path("run")) if e["kind"] == "model.reply"]
    assert replies[1:4] == ["worker#1", "worker#2", "worker#3"]
    assert "node worker#2" in err and "map over 3 units" in err
    assert API_KEY not in err + Path("run/events.jsonl").read_text()


def test_map_units_wait_on_the_model_at_the_same_time(tmp_path: Path, llm: FakeLLM) -> None:
    wf = fan_out_flow(tmp_path, llm, map_parallel=3)
    llm.enqueue('{"topics": ["a", "b", "c"]}')
    llm.enqueue(*(FakeLLM.slow_reply(0.3, "W") for _ in range(3)), "E", "E", "F")
    code, _out, err = invoke(
        "run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}", "--quiet"
    )
    assert code == 0, err
    units = [e for e in events(Path("run")) if e.get("node_id", "").startswith("worker#")]
    asked = [e["ts"] for e in units if e["kind"] == "model.request"]
    answered = [e["ts"] for e in units if e["kind"] == "model.reply"]
    assert len(asked) == 3 and max(asked) < min(answered)  # all three asked before any answer


def test_a_failing_unit_fails_the_node_and_the_run(tmp_path: Path, llm: FakeLLM) -> None:
    wf = fan_out_flow(tmp_path, llm)
    llm.enqueue('{"topics": ["a", "b", "c"]}', "W-a", FakeLLM.error_reply(400))
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}")
    assert code == 5, err
    assert out == ""
    assert "devall: error:" in err and "Traceback" not in err
    result = json.loads(Path("run/result.json").read_text())
    status = {n["id"]: n["status"] for n in result["nodes"]}
    assert status["worker#1"] == "ok" and status["worker#2"] == "failed"
    assert status["worker"] == "failed" and "worker#3" not in status
    assert status["editor"] == "not_run"
    assert result["status"] == "failed" and len(llm.requests) == 3


# --- units use their node's tools ---------------------------------------------------------------


# The stdlib server's fixture tools: what is tested is how the units share their node's server.
RAW = SERVERS_DIR / "raw_server.py"


def test_every_unit_calls_the_tools_of_its_node_on_one_server(tmp_path: Path) -> None:
    wf = write(
        tmp_path,
        f"""\
        graph:
          id: tools_per_unit
          start: [src]
          nodes:
            - id: src
              type: literal
              config: {{content: "- red\\n- green\\n- blue"}}
            - id: worker
              type: agent
              config:
                provider: scripted
                tooling:
                  - type: mcp_local
                    prefix: fx
                    config:
                      command: "{sys.executable}"
                      args: ["{RAW}", "--fixture"]
                      wait_for_log: raw server ready
                script:
                  - tool_calls: [{{name: fx_echo, arguments: {{text: colour}}}}]
                  - content: "{{input}} -> {{tool_result}}"
          edges:
            - from: src
              to: worker
              dynamic:
                type: map
                split: {{type: regex, config: {{pattern: '^- (\\w+)$', group: 1, multiline: true}}}}
                config: {{max_parallel: 2}}
        """,
    )
    code, out, err = invoke("run", str(wf), "--out", "run")
    assert code == 0, err
    assert out == "blue -> colour\n"  # the last output of the node: its last unit's
    result = json.loads(Path("run/result.json").read_text())
    worker = next(n for n in result["nodes"] if n["id"] == "worker")
    assert worker["visits"][0]["outputs"] == [
        "red -> colour",
        "green -> colour",
        "blue -> colour",
    ]
    calls = [e for e in events(Path("run")) if e["kind"] == "tool.result"]
    assert sorted(e["node_id"] for e in calls) == ["worker#1", "worker#2", "worker#3"]
    assert not any(e["is_error"] for e in calls)
    assert len(result["servers"]) == 1 and result["tools"][0]["calls"] == 3


# --- validate ----------------------------------------------------------------------------------


def test_validate_reports_every_dynamic_problem_located_with_exit_3(tmp_path: Path) -> None:
    wf = write(
        tmp_path,
        """\
        graph:
          start: a
          nodes:
            - {id: a, type: passthrough}
            - {id: b, type: passthrough}
            - {id: c, type: passthrough}
            - {id: d, type: passthrough}
          edges:
            - from: a
              to: b
              dynamic:
                type: map
                split: {type: regex, pattern: ','}
            - {from: b, to: c, dynamic: {type: tree, config: {group_size: 1}}}
            - {from: a, to: d, dynamic: {type: map}}
            - {from: c, to: d, dynamic: {type: tree}}
        """,
    )
    code, out, err = invoke("validate", str(wf))
    assert code == 3 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("devall: error:")]
    assert [line.split("wf.yaml:", 1)[1] for line in errors] == [
        "13:30: graph.edges[0].dynamic.split.pattern: pattern belongs in split.config: write "
        "`split: {type: regex, config: {pattern: ...}}`",
        "14:67: graph.edges[1].dynamic.config.group_size: group_size must be at least 2, got 1",
        "16:33: graph.edges[3].dynamic: the dynamic edges into 'd' must agree: this one differs "
        "from the edge from 'a' (graph.edges[2]) in type (tree, there map)",
    ]
    code, out, _ = invoke("validate", str(wf), "--json")
    document = json.loads(out)
    assert code == 3 and not document["ok"] and document["summary"] is None
    assert len([i for i in document["issues"] if i["severity"] == "error"]) == len(errors)


# --- the examples -------------------------------------------------------------------------------

EXAMPLE_OUTPUTS = {
    "dynamic_map": (
        "Guide:\n"
        "answer(Style: one plain sentence.\nWhere does the ferry go?)\n"
        "answer(Style: one plain sentence.\nHow old is the lighthouse?)\n"
        "answer(Style: one plain sentence.\nWhat is the market day?)\n"
    ),
    "dynamic_tree": (
        "sum(sum(sum(Sales rose four percent in the spring.\nThe new warehouse opens in June.)\n"
        "sum(Two engineers join the platform team.\nThe audit found no open issues.))\n"
        "sum(sum(Next meeting: the first Monday of July.)))\n"
    ),
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_OUTPUTS))
def test_the_dynamic_examples_validate_and_run_offline(name: str) -> None:
    example = str(EXAMPLES / f"{name}.yaml")
    code, out, err = invoke("validate", example)
    assert code == 0, err
    assert f"workflow '{name}' is valid" in out and "warning" not in err
    code, out, err = invoke("run", example, "--task", "the harbour town", "--out", "run")
    assert code == 0, err
    assert out == EXAMPLE_OUTPUTS[name]
    result = json.loads(Path("run/result.json").read_text())
    assert any("#" in node["id"] for node in result["nodes"])
