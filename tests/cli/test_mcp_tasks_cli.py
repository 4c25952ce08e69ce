"""MCP tasks: a workflow's model calls tools that run as tasks on tests/servers/task_server.py
(one `optional`, one `required`) and gets their results; `tools call` of a task-only tool by
fastmcp's client (2025-11-25) and by devall's own (2026-07-28); a task given up at the call's
timeout is cancelled on the server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.cli.flows import events, invoke, llm_agent, write_flow
from tests.helpers import cli
from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import SERVERS_DIR

SERVER = str(SERVERS_DIR / "task_server.py")


def _tooling(log: Path, **config: Any) -> dict[str, Any]:
    args = [SERVER, "--log", str(log)]
    return {"type": "mcp_local", "config": {"command": sys.executable, "args": args, **config}}


def _seen(log: Path) -> list[tuple[str, bool]]:
    """(method, asked for a task) of each request the server got."""
    lines = log.read_text().splitlines()
    return [(entry["method"], entry["task"]) for entry in map(json.loads, lines)]


def test_a_model_calls_task_tools_and_gets_their_results(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    log = tmp_path / "server.jsonl"
    calls = [("crunch", {"steps": 3, "delay": 0.15}), ("brief", {"topic": "owls"})]
    fake_llm.enqueue(FakeLLM.tool_call_reply(calls), "done")
    agent = llm_agent("a", fake_llm, tooling=[_tooling(log)])
    flow = write_flow(tmp_path, [agent], [], start=["a"])
    code, _, err = invoke("run", str(flow), "--task", "go", "--out", str(tmp_path / "run"))
    assert code == 0, err
    first, second = fake_llm.chat_requests
    offered = {tool["function"]["name"] for tool in first.body["tools"]}
    assert offered == {"crunch", "brief", "flop", "plain"}  # the task-only tools too
    answers = [m["content"] for m in second.body["messages"] if m["role"] == "tool"]
    assert answers == ["crunched 3 steps", "brief on owls"]
    seen = _seen(log)
    assert seen.count(("tools/call", True)) == 2  # both called as tasks
    assert seen.count(("tasks/result", False)) == 2
    # the task's status, step by step, as progress of the call it belongs to
    traced = events(tmp_path / "run")
    crunch = next(e for e in traced if e["kind"] == "tool.call" and e["tool"] == "crunch")
    progress = [e for e in traced if e["kind"] == "tool.progress" and e["message"]]
    steps = [e for e in progress if str(e["message"]).startswith("task working: step ")]
    assert steps and {e["call_id"] for e in steps} == {crunch["call_id"]}
    ended = [e for e in progress if str(e["message"]).startswith("task completed")]
    assert len(ended) == 2  # once for each call


def test_tools_call_runs_a_task_only_tool_and_a_timeout_cancels_the_task(tmp_path: Path) -> None:
    log = tmp_path / "server.jsonl"
    command = f"{sys.executable} {SERVER} --log {log}"
    fastmcp = {"DEVALL_MCP_CLIENT": "fastmcp"}
    called = cli("tools", "call", "--command", command, "brief", "--args", '{"topic": "owls"}',
                 env=fastmcp, cwd=tmp_path)
    assert called.returncode == 0, called.stderr
    assert called.stdout == "brief on owls\n"
    assert ("tools/call", True) in _seen(log) and ("tasks/result", False) in _seen(log)
    # 2026-07-28: the extension declared by the task's requests, the result polled for
    log.unlink()
    modern = cli("tools", "call", "--command", f"{command} --modern", "brief",
                 "--args", '{"topic": "bats"}', cwd=tmp_path)
    assert modern.returncode == 0, modern.stderr
    assert modern.stdout == "brief on bats\n"
    seen = _seen(log)
    assert seen[0] == ("server/discover", False) and ("tools/call", True) in seen
    assert ("tasks/get", True) in seen and ("tasks/result", False) not in seen
    flop = cli("tools", "call", "--command", f"{command} --modern", "flop", cwd=tmp_path)
    assert flop.returncode == 1  # the task failed: the server's error is the tool's error
    assert "tool 'flop' failed: flop went wrong" in flop.stderr

    log.unlink()
    agent = {"id": "a", "type": "agent",
             "config": {"provider": "scripted", "script": ["x"],
                        "tooling": [_tooling(log, call_timeout=0.5)]}}
    flow = write_flow(tmp_path, [agent], [], start=["a"])
    slow = cli("tools", "call", str(flow), "crunch", "--args", '{"steps": 100, "delay": 0.1}',
               cwd=tmp_path)
    assert slow.returncode == 1, slow.stderr
    assert "tool 'crunch' timed out after 0.5s" in slow.stderr
    assert _seen(log)[-1] == ("tasks/cancel", False)  # what the server got last
