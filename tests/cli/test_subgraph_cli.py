"""Subgraph nodes through the real CLI: the examples, a fake model endpoint, MCP tools in a child,
errors located in subgraph files, and secrets declared only in a child file."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devall_cli.errors import ExitCode
from tests.conftest import REPO_ROOT
from tests.helpers import events, invoke
from tests.servers.fake_llm import FakeLLM

EXAMPLES = REPO_ROOT / "workflows" / "examples"
CHILD_KEY = "sk-child-only-5b1e9d4c2a"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def result_nodes(run_dir: Path) -> dict[str, dict[str, Any]]:
    document = json.loads((run_dir / "result.json").read_text())
    return {node["id"]: node for node in document["nodes"]}


# --- the examples --------------------------------------------------------------------------


def test_inline_example_validates_and_runs() -> None:
    example = str(EXAMPLES / "subgraph_inline.yaml")
    code, out, _ = invoke("validate", example)
    assert code == 0
    assert "panel               subgraph (inline)\n" in out
    assert "  panel/chair         agent (scripted: scripted-chair)\n" in out
    code, out, err = invoke("run", example, "--task", "rain", "--out", "run")
    assert code == 0, err
    assert out == "Final version, after the panel's review: Verdict: publish with light edits.\n"
    assert "node panel/style_critic" in err and "node panel/chair" in err
    nodes = list(result_nodes(Path("run")))
    assert nodes == [
        "writer",
        "panel",
        "panel/style_critic",
        "panel/fact_critic",
        "panel/chair",
        "editor",
    ]
    chair_inputs = next(
        e["inputs"]
        for e in events(Path("run"))
        if e["kind"] == "node.started" and e["node_id"] == "panel/chair"
    )
    assert sorted(chair_inputs) == [
        "Facts: nothing to check in a mood piece.",
        "Style: vivid, keep the drumming rain.",
    ]


def test_file_example_nested_twice_validates_and_runs() -> None:
    example = str(EXAMPLES / "subgraph_files.yaml")
    code, out, _ = invoke("validate", example)
    assert code == 0
    assert f"article/polish           subgraph (file: {EXAMPLES}/subgraphs/polish.yaml)" in out
    code, out, err = invoke("run", example, "--task", "night trains", "--out", "run")
    assert code == 0, err
    assert out == (
        "Published: Headline added. Copy-edited for commuters, wistful tone kept: "
        "A wistful draft (Brief for commuters: night trains)\n"
    )
    nodes = result_nodes(Path("run"))
    assert list(nodes) == [
        "planner",
        "article",
        "article/writer",
        "article/polish",
        "article/polish/copyedit",
        "article/polish/headline",
        "publisher",
    ]
    assert all(node["status"] == "ok" for node in nodes.values())
    started = [e["node_id"] for e in events(Path("run")) if e["kind"] == "node.started"]
    assert started == list(nodes)


def test_the_inner_file_of_the_example_runs_on_its_own() -> None:
    inner = str(EXAMPLES / "subgraphs" / "article.yaml")
    code, out, err = invoke("run", inner, "--task", "t", "--var", "AUDIENCE=readers", "-q")
    assert code == 0, err
    assert out == (
        "Headline added. Copy-edited for readers, wistful tone kept: A wistful draft (t)\n"
    )


def test_mcp_example_starts_the_childs_server_with_the_run() -> None:
    example = str(EXAMPLES / "subgraph_mcp_tool.yaml")
    python = f"PYTHON={sys.executable}"
    code, _, err = invoke("validate", example, "--var", python)
    assert code == 0, err
    code, out, err = invoke("run", example, "--task", "x", "--out", "run", "--var", python)
    assert code == 0, err
    assert out.startswith("Fortune: Your lucky number is ")
    number = int(out.removeprefix("Fortune: Your lucky number is ").rstrip(".\n"))
    assert 1 <= number <= 100
    run_events = events(Path("run"))
    starting = [e for e in run_events if e["kind"] == "server.starting"]
    first_node = next(i for i, e in enumerate(run_events) if e["kind"] == "node.started")
    assert len(starting) == 1 and run_events.index(starting[0]) < first_node  # with the run
    calls = [e for e in run_events if e["kind"] == "tool.call"]
    assert [(e["node_id"], e["tool"]) for e in calls] == [("lucky/draw", "rand_num")]
    assert result_nodes(Path("run"))["lucky/draw"]["tool_calls"] == 1


def test_tools_of_a_node_in_a_subgraph_file(tmp_path: Path) -> None:
    """`tools list --node parent/child`; function tools come from the workflow's functions/."""
    flow = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          start: team
          nodes:
            - id: team
              type: subgraph
              config: {type: file, config: {path: parts/team.yaml}}
        """,
    )
    write(
        tmp_path / "parts" / "team.yaml",
        """\
        graph:
          start: helper
          nodes:
            - id: helper
              type: agent
              config:
                provider: scripted
                script: [done]
                tooling: [{type: function, config: {tools: [{name: shout}]}}]
        """,
    )
    write(
        tmp_path / "functions" / "words.py",
        """\
        def shout(text: str) -> str:
            \"\"\"Say it louder.\"\"\"
            return text.upper()
        """,
    )
    code, out, err = invoke("tools", "list", str(flow), "--node", "team/helper", "--json")
    assert code == 0, err
    (tool,) = json.loads(out)
    assert (tool["name"], tool["nodes"], tool["source"]) == ("shout", ["team/helper"], "function")
    code, out, err = invoke("tools", "call", str(flow), "shout", "--args", '{"text": "hi"}')
    assert (code, out) == (0, "HI\n"), err
    code, _, err = invoke("tools", "list", str(flow), "--node", "team/nope")
    assert code == ExitCode.USAGE
    assert "no node 'team/nope' in the workflow (nodes: team, team/helper)" in err


# --- a real model endpoint -----------------------------------------------------------------


def test_file_subgraph_agents_on_a_model_endpoint(tmp_path: Path, llm: FakeLLM) -> None:
    """The child's task is the parent's output; its key is declared only in the child file."""
    flow = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          id: endpoint
          start: ask
          nodes:
            - {id: ask, type: literal, config: {content: "Name a colour."}}
            - id: team
              type: subgraph
              config: {type: file, config: {path: parts/team.yaml}}
            - {id: done, type: passthrough}
          edges: [{from: ask, to: team}, {from: team, to: done}]
        """,
    )
    write(
        tmp_path / "parts" / "team.yaml",
        f"""\
        vars:
          KEY: {CHILD_KEY}
        graph:
          start: first
          nodes:
            - id: first
              type: agent
              config:
                provider: openai
                name: model-one
                base_url: ${{BASE_URL}}
                api_key: ${{KEY}}
                role: You answer with a colour.
                params: {{retries: 0}}
            - id: second
              type: agent
              config:
                provider: openai
                name: model-two
                base_url: ${{BASE_URL}}
                api_key: ${{KEY}}
                params: {{retries: 0}}
          edges: [{{from: first, to: second}}]
        """,
    )
    llm.enqueue("Blue.")
    llm.enqueue(f"Blue, said with the key {CHILD_KEY}.")
    code, out, err = invoke(
        "run", str(flow), "--out", "run", "--var", f"BASE_URL={llm.base_url}", "--json"
    )
    assert code == 0, err
    first, second = llm.requests
    assert first.body["model"] == "model-one"
    assert first.body["messages"] == [
        {"role": "system", "content": "You answer with a colour."},
        {"role": "user", "content": "Name a colour."},
    ]
    assert second.body["messages"] == [{"role": "user", "content": "Blue."}]
    assert first.headers["authorization"] == f"Bearer {CHILD_KEY}"
    document = json.loads(out)
    assert document["output"] == "Blue, said with the key ***."
    ids = [node["id"] for node in document["nodes"]]
    assert ids == ["ask", "team", "team/first", "team/second", "done"]
    written = "".join(p.read_text() for p in Path("run").rglob("*") if p.is_file())
    assert CHILD_KEY not in out + err + written


# --- errors --------------------------------------------------------------------------------


def test_problems_in_subgraph_files_are_located_there_all_at_once(tmp_path: Path) -> None:
    flow = write(
        tmp_path / "flow.yaml",
        """\
        graph:
          start: a
          nodes:
            - id: a
              type: subgraph
              config: {type: file, config: {path: parts/a.yaml}}
            - id: b
              type: subgraph
              config: {type: file, config: {path: parts/missing.yaml}}
        """,
    )
    write(
        tmp_path / "parts" / "a.yaml",
        """\
        graph:
          start: x
          nodes:
            - {id: x, type: agent, config: {provider: openai, name: m, params: {timeout: soon}}}
            - id: y
              type: subgraph
              config: {type: file, config: {path: a.yaml}}
        """,
    )
    code, out, err = invoke("validate", str(flow))
    assert code == ExitCode.CONFIG and out == ""
    a_file = tmp_path / "parts" / "a.yaml"
    assert f"devall: error: {a_file}:4:82: graph.nodes[0].config.params.timeout: " in err
    assert (
        f"devall: error: {a_file}:7:43: graph.nodes[1].config.config.path: subgraph files "
        f"include each other in a loop: {a_file} → {a_file}"
    ) in err
    assert (
        f"devall: error: {flow}:9:43: graph.nodes[1].config.config.path: subgraph file "
        f"'parts/missing.yaml' not found (tried: {tmp_path}/parts/missing.yaml)"
    ) in err
    assert "Traceback" not in err
    code, out, _ = invoke("validate", str(flow), "--json")
    issues = json.loads(out)["issues"]
    assert [(i["file"], i["line"]) for i in issues] == [
        (str(a_file), 4),
        (str(a_file), 7),
        (str(flow), 9),
    ]
    code, _, run_err = invoke("run", str(flow), "--task", "t")
    assert code == ExitCode.CONFIG and run_err == err  # nothing ran
