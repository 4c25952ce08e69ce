"""`devall run --record` and `--replay`: a run recorded against real servers and the fake model,
then replayed with both gone, no API key and no placeholder set — and a changed prompt caught."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.flows import edge, result, write_flow
from tests.helpers import cli, events
from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import SERVERS_DIR, serve_http

RAW = SERVERS_DIR / "raw_server.py"
API_KEY = "sk-replay-test-7d41c9e2"
MCP_TOKEN = "mcp-token-5b27aa90e1"
SERVICE_TOKEN = "service-secret-c3f18842"
SECRETS = {"API_KEY": API_KEY, "MCP_TOKEN": MCP_TOKEN, "SERVICE_TOKEN": SERVICE_TOKEN}


def agent(node_id: str, role: str, tooling: list[dict[str, Any]]) -> dict[str, Any]:
    config = {
        "provider": "openai",
        "name": f"model-{node_id}",
        "base_url": "${LLM_URL}",
        "api_key": "${API_KEY}",
        "role": role,
        "params": {"retries": 0},
        "tooling": tooling,
    }
    return {"id": node_id, "type": "agent", "config": config}


def two_servers(folder: Path, writer_role: str = "You write it up.") -> Path:
    remote = {
        "type": "mcp_remote",
        "config": {"server": "${MCP_URL}", "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}},
    }
    local = {
        "type": "mcp_local",
        "config": {
            "command": sys.executable,
            "args": [str(RAW), "--fixture"],
            "wait_for_log": "raw server ready",
            "env": {"SERVICE_TOKEN": "${SERVICE_TOKEN}"},
        },
    }
    nodes = [agent("adder", "You add numbers.", [remote]), agent("writer", writer_role, [local])]
    return write_flow(folder, nodes, [edge("adder", "writer")], start=["adder"], end=["writer"])


def script(llm: FakeLLM) -> None:
    llm.enqueue(
        FakeLLM.tool_call_reply([("add", {"a": 2, "b": 3})]),
        "The sum is 5.",
        FakeLLM.tool_call_reply([("echo", {"text": "five"})]),
        "Final: the sum is five.",
    )


def trace(run_dir: Path) -> list[tuple[Any, ...]]:
    """What the run did, without times and ids: model turns, tool calls and results, nodes."""
    kept = []
    for event in events(run_dir):
        kind = event["kind"]
        if kind.startswith(("model.", "tool.", "node.")):
            kept.append(
                (
                    kind,
                    event.get("node_id"),
                    event.get("content"),
                    json.dumps(event.get("arguments"), sort_keys=True),
                    json.dumps(event.get("blocks"), sort_keys=True),
                )
            )
    return kept


def forbid_the_outside(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, any connection or process the command attempts is refused and noted."""
    attempts: list[str] = []

    def no_connect(self: socket.socket, address: Any) -> Any:
        attempts.append(f"connect {address}")
        raise OSError("no connection allowed during a replay")

    def no_popen(*args: Any, **kwargs: Any) -> Any:
        attempts.append(f"process {args[:1]}")
        raise OSError("no process allowed during a replay")

    async def no_exec(*args: Any, **kwargs: Any) -> Any:
        attempts.append(f"process {args[:1]}")
        raise OSError("no process allowed during a replay")

    monkeypatch.setattr(socket.socket, "connect", no_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", no_connect)
    monkeypatch.setattr(subprocess, "Popen", no_popen)
    monkeypatch.setattr(asyncio, "create_subprocess_exec", no_exec)
    return attempts


def test_a_recorded_run_replays_offline_and_a_changed_prompt_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = two_servers(tmp_path)
    cassette = tmp_path / "run.cassette.jsonl"
    with FakeLLM() as llm:
        with serve_http(RAW, args=["--fixture"]) as url:
            script(llm)
            env = {**SECRETS, "LLM_URL": llm.base_url, "MCP_URL": url}
            recorded = cli("run", str(flow), "--task", "add 2 and 3", "--out", "rec",
                           "--record", str(cassette), env=env)
            assert recorded.returncode == 0, recorded.stderr
            assert f"cassette: {cassette}" in recorded.stderr
            # The model half alone, against the real servers: no model request is made.
            asked = len(llm.requests)
            only_model = cli("run", str(flow), "--task", "add 2 and 3", "--out", "model-only",
                             "--replay", str(cassette), "--replay-only", "model", env=env)
            assert only_model.returncode == 0, only_model.stderr
            assert len(llm.requests) == asked
            assert only_model.stdout == recorded.stdout
        # The tools half alone, the HTTP server gone: the real model, the recorded tools.
        script(llm)
        only_tools = cli("run", str(flow), "--task", "add 2 and 3", "--out", "tools-only",
                         "--replay", str(cassette), "--replay-only", "tools", env=env)
        assert only_tools.returncode == 0, only_tools.stderr
        assert only_tools.stdout == recorded.stdout
        assert len(llm.requests) == 2 * asked
    text = cassette.read_text()
    for secret in SECRETS.values():
        assert secret not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["version"] == 1
    assert lines[0]["placeholders"]["API_KEY"] is None  # a secret's value is never kept
    methods = {(e.get("server", ""), e.get("method")) for e in lines[1:] if e["type"] == "mcp"}
    assert {m for _, m in methods} == {"initialize", "tools/list", "tools/call"}
    assert len([e for e in lines[1:] if e["type"] == "model"]) == 4

    for name in [*SECRETS, "LLM_URL", "MCP_URL", "OPENAI_API_KEY"]:
        monkeypatch.delenv(name, raising=False)
    # Everything below runs with no server, no model, no network and no process.
    attempts = forbid_the_outside(monkeypatch)
    replayed = cli("run", str(flow), "--task", "add 2 and 3", "--out", "rep",
                   "--replay", str(cassette))
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout == "Final: the sum is five.\n"
    assert attempts == []
    assert trace(Path("rep")) == trace(Path("rec"))
    assert result(Path("rep"))["tools"] == result(Path("rec"))["tools"]

    # A changed role prompt: the writer's first request differs, and the run says so.
    changed = two_servers(tmp_path, writer_role="You write it up in French.")
    failed = cli("run", str(changed), "--task", "add 2 and 3", "--out", "changed",
                 "--replay", str(cassette))
    assert failed.returncode == 6, failed.stderr
    assert "node 'writer' visit 1 sent a model request that differs from the recording" in (
        failed.stderr
    )
    assert '-        "content": "You write it up.",' in failed.stderr
    assert '+        "content": "You write it up in French.",' in failed.stderr
    assert "never asked for" not in failed.stderr  # the run stopped: nothing to warn about
    # how to record it again
    assert f"devall run {changed} --task 'add 2 and 3' --record {cassette}" in failed.stderr
    assert result(Path("changed"))["exit_code"] == 6


def test_tool_results_and_human_answers_replay_without_a_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "bumped.txt"
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "bumps.py").write_text(
        f"def bump(n: int) -> str:\n"
        f"    \"\"\"Count a call.\"\"\"\n"
        f"    with open({str(marker)!r}, 'a') as f:\n"
        f"        f.write('x')\n"
        f"    return str(n + 1)\n"
    )
    tooling = [
        {"type": "mcp_local", "config": {"command": sys.executable,
                                         "args": [str(RAW), "--fixture"]}},
        {"type": "function", "config": {"tools": [{"name": "bump"}]}},
    ]
    nodes = [
        {"id": "ask", "type": "human", "config": {"description": "How many?"}},
        {"id": "calc", "type": "agent", "config": {
            "provider": "scripted", "tooling": tooling,
            "script": [{"tool_calls": [{"name": "image", "arguments": {}}]},
                       {"tool_calls": [{"name": "bump", "arguments": {"n": 6}}]},
                       {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 41}}]},
                       {"content": "{tool_result} after {input}"}]}},
    ]
    flow = write_flow(tmp_path, nodes, [edge("ask", "calc")], start=["ask"], end=["calc"])
    answers = tmp_path / "answers.yaml"
    answers.write_text("ask: [seven]\n")
    cassette = tmp_path / "c.jsonl"
    recorded = cli("run", str(flow), "--task", "go", "--out", "rec", "--answers", str(answers),
                   "--record", str(cassette))
    assert recorded.returncode == 0, recorded.stderr
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    blobs = [e for e in lines if e["type"] == "blob"]
    assert len(blobs) == 1 and blobs[0]["mime_type"] == "image/png"
    assert [e["reply"] for e in lines if e["type"] == "human"] == ["seven"]

    attempts = forbid_the_outside(monkeypatch)
    replayed = cli("run", str(flow), "--task", "go", "--out", "rep", "--replay", str(cassette))
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout
    assert "42" in replayed.stdout and "seven" in replayed.stdout
    assert attempts == []
    assert marker.read_text() == "x"  # the function tool ran when recorded, not when replayed
    bumped = [e for e in events(Path("rep"), "tool.result") if e["tool"] == "bump"]
    assert [b["text"] for b in bumped[0]["blocks"]] == ["7"]
    saved = result(Path("rep"))["attachments"]
    assert [a["sha256"] for a in saved] == [a["sha256"] for a in result(Path("rec"))["attachments"]]
    assert (Path("rep") / saved[0]["path"]).read_bytes() == (
        Path("rec") / result(Path("rec"))["attachments"][0]["path"]
    ).read_bytes()


def test_parallel_branches_replay_ten_times_in_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLM() as llm:
        nodes = [
            {"id": name, "type": "agent", "config": {
                "provider": "openai", "name": f"model-{name}", "base_url": llm.base_url,
                "api_key": API_KEY, "role": f"You are {name}.", "params": {"retries": 0}}}
            for name in ("north", "south", "east", "join")
        ]
        edges = [edge(name, "join") for name in ("north", "south", "east")]
        flow = write_flow(tmp_path, nodes, edges, start=["north", "south", "east"], end=["join"])
        llm.enqueue("one", "two", "three", "all three heard")
        cassette = tmp_path / "parallel.jsonl"
        recorded = cli("run", str(flow), "--task", "go", "--out", "rec", "--record", str(cassette))
        assert recorded.returncode == 0, recorded.stderr
    attempts = forbid_the_outside(monkeypatch)
    for n in range(10):
        replayed = cli("run", str(flow), "--task", "go", "--out", f"rep{n}", "--replay",
                       str(cassette))
        assert replayed.returncode == 0, replayed.stderr
        assert replayed.stdout == recorded.stdout == "all three heard\n"
        assert _same_outputs(Path(f"rep{n}"), Path("rec"))
    assert attempts == []


def _same_outputs(one: Path, other: Path) -> bool:
    """Every node visit's outputs, in order (result.json's durations differ from run to run)."""

    def outputs(run: Path) -> dict[str, Any]:
        return {n["id"]: [v["outputs"] for v in n["visits"]] for n in result(run)["nodes"]}

    return outputs(one) == outputs(other)


def test_a_cassette_that_is_not_one_is_a_config_error_with_its_line(tmp_path: Path) -> None:
    flow = write_flow(tmp_path, [{"id": "a", "type": "agent", "config": {
        "provider": "scripted", "script": ["hi"]}}], [], start=["a"], end=["a"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "header", "format": "devall-cassette", "version": 1}\n{"type": 3}\n')
    failed = cli("run", str(flow), "--task", "go", "--replay", str(bad))
    assert failed.returncode == 3
    assert f"devall: error: {bad}:2: unknown entry type 3" in failed.stderr
    old = tmp_path / "old.jsonl"
    old.write_text('{"type": "header", "format": "devall-cassette", "version": 99}\n')
    failed = cli("run", str(flow), "--task", "go", "--replay", str(old))
    assert failed.returncode == 3 and "version 99" in failed.stderr
    both = cli("run", str(flow), "--task", "go", "--replay", str(old), "--record", "x.jsonl")
    assert both.returncode == 2 and "give --record or --replay, not both" in both.stderr
    only = cli("run", str(flow), "--task", "go", "--replay-only", "model")
    assert only.returncode == 2 and "--replay-only needs --replay" in only.stderr
    nowhere = cli("run", str(flow), "--task", "go", "--record", str(tmp_path / "no" / "c.jsonl"))
    assert nowhere.returncode == 2 and "does not exist" in nowhere.stderr


def test_a_batch_records_one_cassette_per_task_and_each_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tooling = [{"type": "mcp_local", "config": {"command": sys.executable,
                                                "args": [str(RAW), "--fixture"]}}]
    calc = {"id": "calc", "type": "agent", "config": {
        "provider": "scripted", "tooling": tooling,
        "script": [{"tool_calls": [{"name": "echo", "arguments": {"text": "${WORD}"}}]},
                   {"content": "echoed {tool_result}"}]}}
    flow = write_flow(tmp_path, [calc], [], start=["calc"], end=["calc"])
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        '{"id": "one", "task": "first", "vars": {"WORD": "first"}}\n'
        '{"id": "two", "task": "second", "vars": {"WORD": "second"}}\n'
    )
    ran = cli("batch", str(flow), str(tasks), "--out", "b", "--record", "tapes")
    assert ran.returncode == 0, ran.stderr
    assert sorted(p.name for p in Path("tapes").iterdir()) == ["one.jsonl", "two.jsonl"]
    attempts = forbid_the_outside(monkeypatch)
    for name, task in (("one", "first"), ("two", "second")):
        # WORD is set nowhere now: the cassette holds the task's value.
        replayed = cli("run", str(flow), "--task", task, "--out", f"rep-{name}",
                       "--replay", f"tapes/{name}.jsonl")
        assert replayed.returncode == 0, replayed.stderr
        assert replayed.stdout == f"echoed {task}\n"
    # The other task's cassette does not hold this task's call.
    crossed = cli("run", str(flow), "--task", "second", "--var", "WORD=first",
                  "--replay", "tapes/two.jsonl")
    assert crossed.returncode == 6
    assert "call of tool 'echo' on server 'raw_server'" in crossed.stderr
    assert attempts == []
    ray = cli("batch", str(flow), str(tasks), "--executor", "ray", "--record", "x")
    assert ray.returncode == 2 and "local executor only" in ray.stderr
