"""The tool policy and sandboxes in the records: the console trace, events.jsonl, result.json and
the HTML report show which tools were hidden, which calls were approved or refused and by whom,
and how local servers and scripts ran confined."""

from __future__ import annotations

import json
from pathlib import Path

from devall_cli.events import (
    CodeFinishedEvent,
    CodeStartedEvent,
    Event,
    NodeFinishedEvent,
    NodeStartedEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ServerReadyEvent,
    ServerStartingEvent,
    ToolApprovalEvent,
    ToolCallEvent,
    ToolResultEvent,
    ToolsDeniedEvent,
)
from devall_cli.redaction import Redactor
from devall_cli.report import write_report
from devall_cli.trace.console import ConsoleSink
from devall_cli.trace.jsonl import JsonlSink
from devall_cli.trace.result import ResultSink
from tests.unit.trace.test_console import make_console

SECRET = "tok-policy-91c2"
SANDBOX = {
    "active": True,
    "tool": "bwrap",
    "mode": "require",
    "network": False,
    "writable": ["/srv/fs"],
    "readable": ["/data/ref"],
    "env": ["PATH"],
}
PREFER = {"active": False, "mode": "prefer", "reason": "bwrap not found on PATH"}
REFUSAL = "refused by policy: approve: ask (cli); no terminal to ask and no answer in --answers"
HOSTILE = "<script>alert(1)</script>"


def call_events(call_id: str, tool: str, approved: bool, by: str, reason: str) -> list[Event]:
    refused = [] if approved else [REFUSAL]
    return [
        ToolCallEvent(node_id="worker", call_id=call_id, tool=tool, source="mcp_local",
                      server="fs", arguments={"path": f"/x?key={SECRET}"}),
        ToolApprovalEvent(node_id="worker", call_id=call_id, tool=tool, server_id="fs",
                          approved=approved, by=by, reason=reason),
        ToolResultEvent(node_id="worker", call_id=call_id, tool=tool, source="mcp_local",
                        server="fs", blocks=[{"type": "text", "text": (refused or ["done"])[0]}],
                        is_error=not approved,
                        error_class=None if approved else "refused_by_policy"),
    ]  # fmt: skip


def policy_run() -> list[Event]:
    """A run in which the policy hid two tools, let the operator approve one call and refused
    another for want of anyone to ask; the server and the script ran sandboxed."""
    denied = [
        {"tool": "delete_file", "original_name": "delete", "server_id": "fs",
         "rule": "destructiveHint", "layer": "graph"},
        {"tool": "move_file", "original_name": "move", "server_id": "fs",
         "rule": "destructiveHint", "layer": "graph"},
        {"tool": HOSTILE, "original_name": HOSTILE, "server_id": "fs", "rule": "x*",
         "layer": "cli"},
    ]  # fmt: skip
    return [
        RunStartedEvent(run_id="run-1", workflow="flow", task="t"),
        ServerStartingEvent(server_id="fs", source="mcp_local", target="python fs.py"),
        ServerReadyEvent(server_id="fs", protocol_version="2025-11-25", tools=4, sandbox=SANDBOX),
        ServerStartingEvent(server_id="web", source="mcp_local", target="python web.py"),
        ServerReadyEvent(server_id="web", protocol_version="2025-11-25", tools=1, sandbox=PREFER),
        NodeStartedEvent(node_id="worker"),
        ToolsDeniedEvent(node_id="worker", tools=denied),
        *call_events("c1", "write_file", True, "terminal", "approve: ask (cli)"),
        *call_events("c2", "write_file", False, "no_terminal",
                     f"approve: ask (cli); no terminal to ask ({HOSTILE})"),
        NodeFinishedEvent(node_id="worker", status="ok", output="done"),
        NodeStartedEvent(node_id="run_code"),
        CodeStartedEvent(node_id="run_code", script="code_workspace/run_code.py",
                         command=["python3", "run_code.py"], sandbox=SANDBOX),
        CodeFinishedEvent(node_id="run_code", script="code_workspace/run_code.py", exit_code=0),
        NodeFinishedEvent(node_id="run_code", status="ok", output="ran"),
        RunFinishedEvent(status="ok", output="done"),
    ]  # fmt: skip


def test_the_console_says_what_was_hidden_approved_refused_and_sandboxed() -> None:
    console, buffer = make_console()
    sink = ConsoleSink(console, Redactor([SECRET]), "normal")
    for event in policy_run():
        sink(event)
    out = buffer.getvalue()
    assert (
        "· worker: 3 tools hidden by the tool policy: delete_file, move_file "
        "(rule 'destructiveHint', graph); <script>alert(1)</script> (rule 'x*', cli)"
    ) in out
    approved = "approved by the operator: approve: ask (cli)"
    assert f"✓ tool write_file (server fs) · worker · {approved}" in out
    assert (
        "✗ tool write_file (server fs) · worker · refused with nobody to ask: approve: ask (cli); "
        "no terminal to ask"
    ) in out
    assert "refused by the tool policy" in out and "error (refused_by_policy)" not in out
    assert (
        "server 'fs' ready · protocol 2025-11-25 · 4 tools · 0 ms · sandboxed: network off, "
        "writes /srv/fs, also reads /data/ref"
    ) in out
    assert (
        "! server 'web' runs without its sandbox: not sandboxed: bwrap not found on PATH "
        "(sandbox: prefer)"
    ) in out
    assert "… run_code runs code_workspace/run_code.py · sandboxed: network off" in out
    assert "tool calls" in out and "2 (1 refused)" in out
    assert "✓ run ok in 0 ms, but 1 tool call refused by the tool policy" in out
    assert "1 tool call failed" not in out and SECRET not in out


def test_result_json_and_events_jsonl_record_the_policy_and_the_sandboxes(tmp_path: Path) -> None:
    redactor = Redactor([SECRET])
    result = ResultSink(tmp_path / "result.json", redactor, node_ids=["worker", "run_code"])
    with JsonlSink(tmp_path / "events.jsonl", redactor) as jsonl:
        for event in policy_run():
            jsonl(event)
            result(event)
    document = json.loads((tmp_path / "result.json").read_text())
    policy = document["policy"]
    assert policy["refused_calls"] == 1
    assert policy["denied"]["worker"][0] == {
        "tool": "delete_file",
        "server_id": "fs",
        "rule": "destructiveHint",
        "layer": "graph",
    }
    assert [(a["call_id"], a["approved"], a["by"]) for a in policy["approvals"]] == [
        ("c1", True, "terminal"),
        ("c2", False, "no_terminal"),
    ]
    assert set(policy["approvals"][0]) == {
        "node", "call_id", "tool", "server_id", "approved", "by", "reason",
    }  # fmt: skip
    servers = {s["server_id"]: s["sandbox"] for s in document["servers"]}
    assert servers == {"fs": SANDBOX, "web": PREFER}
    assert document["code_runs"][0]["sandbox"] == SANDBOX
    assert document["totals"]["tool_errors"] == 1  # a refused call is an error result, as before
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    kinds = {line["kind"]: line for line in lines}
    assert kinds["tool.denied"]["tools"][2]["tool"] == HOSTILE
    assert kinds["tool.approval"]["by"] == "no_terminal"  # the last one of the kind
    assert kinds["server.ready"]["sandbox"] == PREFER  # the last server's
    assert kinds["code.started"]["sandbox"] == SANDBOX
    assert SECRET not in (tmp_path / "events.jsonl").read_text()


def test_result_json_has_no_policy_section_when_the_policy_did_nothing(tmp_path: Path) -> None:
    sink = ResultSink(tmp_path / "result.json", Redactor())
    for event in (
        RunStartedEvent(run_id="run-1", workflow="flow", task="t"),
        ServerReadyEvent(server_id="fs", tools=1),
        RunFinishedEvent(status="ok"),
    ):
        sink(event)
    document = json.loads((tmp_path / "result.json").read_text())
    assert "policy" not in document
    assert document["servers"][0]["sandbox"] is None


def test_the_report_shows_a_policy_panel_refused_calls_and_the_sandboxes(tmp_path: Path) -> None:
    redactor = Redactor([SECRET])
    result = ResultSink(tmp_path / "result.json", redactor, node_ids=["worker", "run_code"])
    with JsonlSink(tmp_path / "events.jsonl", redactor) as jsonl:
        for event in policy_run():
            jsonl(event)
            result(event)
    page = write_report(tmp_path).read_text()
    assert '<section id="policy">' in page and 'href="#policy"' in page
    assert "Tools hidden from the model" in page and "delete_file" in page
    assert "<td>destructiveHint</td>" not in page and "<code>destructiveHint</code>" in page
    assert "approved by the operator: approve: ask (cli)" in page
    assert page.count('st-interrupted">refused by policy</span>') == 1  # the refused call's box
    assert 'class="bar tool-refused"' in page
    assert "sandboxed: network off, writes /srv/fs, also reads /data/ref" in page
    assert "not sandboxed: bwrap not found on PATH (sandbox: prefer)" in page
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_report_takes_the_policy_from_result_json_without_events(tmp_path: Path) -> None:
    sink = ResultSink(tmp_path / "result.json", Redactor())
    for event in policy_run():
        sink(event)
    page = write_report(tmp_path).read_text()
    assert '<section id="policy">' in page and "1 call refused" in page
    assert "delete_file" in page and "with nobody to ask" in page
