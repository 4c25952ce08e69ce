"""Local servers through the CLI: the child's environment, and tool names that clash once made
safe. The servers are real scripts from `tests/servers/` on stdio; the model is the fake LLM.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_reliability_cli import (
    events,
    invoke,
    local_tooling,
    tool_messages,
    workflow,
)
from tests.servers.fake_llm import FakeLLM, FakeReply
from tests.servers.serve import SERVERS_DIR

TRICKY = SERVERS_DIR / "tricky_server.py"
API_KEY = "sk-local-servers-7c1e9a"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


# --- the child's environment -------------------------------------------------------------------


def environ_of_server(tmp_path: Path, **settings: object) -> set[str]:
    """The names of the environment variables the tricky server sees, via `tools call`."""
    wf = workflow(tmp_path, local_tooling(TRICKY, **settings), script=[{"content": "x"}])
    code, out, err = invoke("tools", "call", str(wf), "environ", "--json")
    assert code == 0, err
    (block,) = json.loads(out)["blocks"]
    return set(json.loads(block["text"]))


def test_inherit_env_false_gives_the_server_exactly_env(tmp_path: Path) -> None:
    # PYTHONCOERCECLOCALE=0 keeps Python from adding LC_CTYPE to its own environment.
    env = {"ONLY_VAR": "given", "PYTHONCOERCECLOCALE": "0"}
    names = environ_of_server(tmp_path, env=env, inherit_env=False)
    assert names == {"ONLY_VAR", "PYTHONCOERCECLOCALE"}


def test_inheriting_servers_get_the_quiet_fastmcp_switches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FASTMCP_SHOW_SERVER_BANNER")  # set for every test by conftest.py
    monkeypatch.delenv("FASTMCP_CHECK_FOR_UPDATES")
    names = environ_of_server(tmp_path, env={"ONLY_VAR": "given"})
    assert {"ONLY_VAR", "PATH", "FASTMCP_SHOW_SERVER_BANNER", "FASTMCP_CHECK_FOR_UPDATES"} <= names


# --- tool names that clash once made safe ------------------------------------------------------

# Names that already fit keep them; the others get the first free `<safe>_<n>`.
CLASH_MAPPING = {
    "a b": "a_b_4",
    "a_b": "a_b",
    "a_b_2": "a_b_2",
    "a.b": "a_b_5",
    "a_b_3": "a_b_3",
}


def test_sanitized_names_never_take_a_valid_name_and_calls_reach_the_listed_tool(
    tmp_path: Path,
) -> None:
    script = [
        {"tool_calls": [{"name": name, "arguments": {}} for name in CLASH_MAPPING.values()]},
        {"content": "done"},
    ]
    wf = workflow(tmp_path, local_tooling(TRICKY, "--clashing-names"), script=script)
    code, out, err = invoke("tools", "list", str(wf), "--json")
    assert code == 0, err
    assert {row["original_name"]: row["name"] for row in json.loads(out)} == CLASH_MAPPING
    for original, name in CLASH_MAPPING.items():
        code, out, err = invoke("tools", "call", str(wf), name, "--json")
        assert code == 0, err
        assert json.loads(out)["blocks"][0]["text"] == f"called {original}"
    code, _, err = invoke("run", str(wf), "--out", "run")
    assert code == 0, err
    results = [e for e in events(Path("run")) if e["kind"] == "tool.result"]
    reached = {e["tool"]: e["blocks"][0]["text"] for e in results}
    assert reached == {name: f"called {original}" for original, name in CLASH_MAPPING.items()}


# --- JSON too deep from the model or the command line ------------------------------------------


def nested_arguments(levels: int) -> str:
    """Tool-call arguments as JSON text: an object whose `text` nests `levels - 1` lists."""
    return '{"text": ' + "[" * (levels - 1) + '"x"' + "]" * (levels - 1) + "}"


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (nested_arguments(600), "nested deeper than 100 levels"),
        (nested_arguments(5000), "nested deeper than 100 levels"),
        (nested_arguments(101), "nested deeper than 100 levels"),
        ('{"text": ' + "9" * 5000 + "}", "an integer longer than 4300 digits"),
    ],
    ids=["600_levels", "5000_levels", "101_levels", "5000_digits"],
)
def test_arguments_beyond_the_limits_are_a_tool_error_the_model_can_correct(
    tmp_path: Path, llm: FakeLLM, arguments: str, words: str
) -> None:
    wf = workflow(tmp_path, local_tooling(TRICKY), llm=llm)
    llm.enqueue(
        FakeLLM.tool_call_reply([("echo", arguments)]),
        FakeLLM.tool_call_reply([("echo", nested_arguments(100).replace('"x"', '"ok"'))]),
        "recovered",
    )
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}")
    assert code == 0, err
    assert out == "recovered\n" and "Traceback" not in err and "RecursionError" not in err
    refused = tool_messages(llm.requests[1].body)["call_fake_1"]
    assert refused.startswith("Error: tool call arguments ") and words in refused
    at_the_limit = tool_messages(llm.requests[2].body)["call_fake_1"]
    assert at_the_limit == "[" * 99 + "'ok'" + "]" * 99  # 100 levels reach the server
    results = [e for e in events(Path("run")) if e["kind"] == "tool.result"]
    assert [e["error_class"] for e in results] == ["invalid_arguments", None]


def test_a_model_response_nested_too_deep_is_a_clear_error(tmp_path: Path, llm: FakeLLM) -> None:
    # Some endpoints send the arguments as an object inside the body instead of as JSON text.
    call = {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "@"}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    body = json.dumps({"choices": [{"message": message}]})
    body = body.replace('"@"', nested_arguments(2000))
    wf = workflow(tmp_path, local_tooling(TRICKY), llm=llm)
    llm.enqueue(FakeReply(body=body.encode()))
    code, _, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}")
    assert code == 5, err
    assert "devall: error: invalid response from model endpoint" in err
    assert "nested deeper than 100 levels" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (nested_arguments(3000), "nested deeper than 100 levels"),
        ('{"text": ' + "9" * 5000 + "}", "an integer longer than 4300 digits"),
    ],
)
def test_tools_call_args_beyond_the_limits_are_a_usage_error(
    tmp_path: Path, arguments: str, words: str
) -> None:
    wf = workflow(tmp_path, local_tooling(TRICKY), script=[{"content": "x"}])
    code, out, err = invoke("tools", "call", str(wf), "echo", "--args", arguments)
    assert code == 2 and out == ""
    assert "--args" in err and words in err and "Traceback" not in err
