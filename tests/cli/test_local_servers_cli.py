"""Local servers through the CLI: the child's environment, and tool names that clash once made
safe. The servers are real scripts from `tests/servers/` on stdio; the model is the fake LLM.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_reliability_cli import events, invoke, local_tooling, workflow
from tests.servers.serve import SERVERS_DIR

TRICKY = SERVERS_DIR / "tricky_server.py"


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
