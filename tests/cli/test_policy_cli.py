"""The tool policy from the command line: what models are offered, refused calls, listings.

The tools are the stdlib fixture server's (`raw_server.py --fixture --annotated`): `echo` and
`add` read-only, `die` destructive, `pid` not destructive, the others saying nothing (so, by
the MCP spec's defaults, maybe destructive). Only the model is faked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.cli.flows import LLM_KEY, edge, llm_agent, scripted, write_flow
from tests.helpers import cli, events
from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import SERVERS_DIR

RAW = SERVERS_DIR / "raw_server.py"
SERVER = {
    "type": "mcp_local",
    "config": {"command": sys.executable, "args": [str(RAW), "--fixture", "--annotated"]},
}


def flow(tmp_path: Path, agent: dict[str, Any], **graph: Any) -> Path:
    agent["config"]["tooling"] = [SERVER]
    return write_flow(tmp_path, [agent], [], start=[agent["id"]], **graph)


def offered(llm: FakeLLM, request: int = 0) -> list[str]:
    """The tools the model was offered in one of its requests."""
    return [tool["function"]["name"] for tool in llm.requests[request].body.get("tools", [])]


def test_denied_tools_never_reach_the_model_and_allow_tool_overrides(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    wf = flow(tmp_path, llm_agent("a", fake_llm), tool_policy={"deny": ["destructiveHint"]})
    env = {"LLM_KEY": LLM_KEY}
    done = cli("run", str(wf), "--task", "t", "--out", str(tmp_path / "r1"), "-q", env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(offered(fake_llm)) == ["add", "echo", "pid"]
    (denied,) = events(tmp_path / "r1", "tool.denied")
    assert {item["tool"] for item in denied["tools"]} >= {"die", "fail"}
    assert {item["rule"] for item in denied["tools"]} == {"destructiveHint"}

    out = str(tmp_path / "r2")
    done = cli("run", str(wf), "--task", "t", "--out", out, "-q", "--allow-tool", "die", env=env)
    assert done.returncode == 0, done.stderr
    again = offered(fake_llm, request=1)
    assert "die" in again and "fail" not in again


def test_approve_never_refuses_the_call_and_the_model_reads_why(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.enqueue(FakeLLM.tool_call_reply([("fail", {"message": "x"})]), "gave up")
    wf = flow(tmp_path, llm_agent("a", fake_llm))
    run = ("run", str(wf), "--task", "t", "--out", str(tmp_path / "r"), "-q")
    policy = ("--approve", "never", "--allow-tool", "readOnlyHint")
    done = cli(*run, *policy, env={"LLM_KEY": LLM_KEY})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "gave up\n"
    tool_message = fake_llm.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"] == (
        "refused by policy: approve: never (cli); allow it with --allow-tool fail"
    )
    (approval,) = events(tmp_path / "r", "tool.approval")
    assert (approval["approved"], approval["by"]) == (False, "policy")


def echoing(node_id: str) -> dict[str, Any]:
    """A scripted agent that calls `echo` once, then answers with its result."""
    agent = scripted(node_id)
    call = {"name": "echo", "arguments": {"text": node_id}}
    agent["config"]["script"] = [{"tool_calls": [call]}, {"content": "{tool_result}"}]
    agent["config"]["tooling"] = [SERVER]
    return agent


def test_asking_with_nobody_to_ask_refuses_and_the_records_say_why(tmp_path: Path) -> None:
    agent = scripted("a")
    agent["config"]["script"] = [
        {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]},
        {"tool_calls": [{"name": "pid", "arguments": {}}]},
        {"content": "done: {tool_result}"},
    ]
    wf = flow(tmp_path, agent, tool_policy={"allow": ["readOnlyHint"], "approve": "ask"})
    done = cli("run", str(wf), "--task", "t", "--out", str(tmp_path / "r"), "-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("done: refused by policy: approve: ask (graph), and no terminal")
    (approval,) = events(tmp_path / "r", "tool.approval")  # echo is read-only: it just ran
    assert approval["tool"] == "pid" and approval["by"] == "no_terminal"
    assert approval["reason"].startswith("approve: ask (graph), and no terminal to ask")
    results = {e["tool"]: e for e in events(tmp_path / "r", "tool.result")}
    assert results["echo"]["is_error"] is False
    assert results["pid"]["error_class"] == "refused_by_policy"


def test_tools_list_call_and_probe_show_and_apply_the_decisions(tmp_path: Path) -> None:
    wf = flow(tmp_path, scripted("a", "hi"), tool_policy={"deny": ["die"], "approve": "never"})
    policy = ("--allow-tool", "readOnlyHint")
    listed = cli("tools", "list", str(wf), *policy)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines()[3:]}
    assert rows["echo"] == "allow" and rows["die"] == "deny" and rows["fail"] == "refuse"
    as_json = json.loads(cli("tools", "list", str(wf), "--json", *policy).stdout)
    by_name = {row["name"]: row["policy"] for row in as_json}
    assert by_name["die"] == {"decision": "deny", "layer": "graph", "rule": "die"}
    assert by_name["echo"] == {"decision": "allow", "layer": "cli", "rule": "readOnlyHint"}

    denied = cli("tools", "call", str(wf), "die", "--out", str(tmp_path / "c1"))
    assert denied.returncode == 1
    assert "hint: allow it with --allow-tool die" in denied.stderr
    # Refused for a model (approve: never), but whoever types the command approves the call.
    called = cli("tools", "call", str(wf), "pid", "--out", str(tmp_path / "c2"))
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip().isdigit()

    probe = json.loads(cli("probe", str(wf), "--json", *policy).stdout)
    (server,) = probe["servers"]
    assert server["policy"] == {"allow": 2, "deny": 1, "ask": 0, "refuse": server["tools"] - 3}
    assert server["sandbox"] is None


def test_bad_rules_on_the_command_line_and_rules_that_match_nothing(tmp_path: Path) -> None:
    wf = flow(tmp_path, scripted("a", "hi"), tool_policy={"allow": ["server:raw_srever"]})
    bad = cli("tools", "list", str(wf), "--deny-tool", "[ab")
    assert bad.returncode == 2 and "--deny-tool" in bad.stderr and "unclosed '['" in bad.stderr
    checked = cli("validate", str(wf))
    assert checked.returncode == 0, checked.stderr  # a warning does not fail the file
    assert (
        "graph.tool_policy.allow[0]: the rule 'server:raw_srever' matches no server of the "
        "graph (its servers: raw_server); did you mean 'raw_server'?"
    ) in checked.stderr


def test_a_node_policy_binds_only_its_own_node(tmp_path: Path) -> None:
    # Only the agent that declares the policy obeys it: the next one on the same server does not.
    first, second = echoing("a"), echoing("b")
    first["config"]["tool_policy"] = {"deny": ["echo"]}
    wf = write_flow(tmp_path, [first, second], [edge("a", "b")], start=["a"], end=["b"])
    done = cli("run", str(wf), "--task", "t", "--out", str(tmp_path / "r"), "-q")
    assert done.returncode == 0, done.stderr
    results = {e["node_id"]: e for e in events(tmp_path / "r", "tool.result")}
    assert results["a"]["error_class"] == "refused_by_policy"
    assert results["b"]["is_error"] is False
