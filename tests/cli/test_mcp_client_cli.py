"""`devall run`, `tools list` and `tools call` with servers that ask back and report: the
example workflow end to end (sampling by the node's scripted model, elicitation by policy,
progress, logs, roots), and the fields `--json` keeps."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.cli.flows import invoke
from tests.conftest import REPO_ROOT
from tests.helpers import events
from tests.servers.serve import SERVERS_DIR, ServerProcess

EXAMPLE = REPO_ROOT / "workflows" / "examples" / "mcp_client_features.yaml"
PYTHON = f"PYTHON={sys.executable}"


def test_the_example_answers_its_server_and_records_every_exchange() -> None:
    code, _, err = invoke("validate", str(EXAMPLE), "--var", PYTHON)
    assert code == 0, err
    code, out, err = invoke(
        "run", str(EXAMPLE), "--task", "release notes", "--out", "run", "--var", PYTHON,
        "--record", "features.jsonl",
    )
    assert code == 0, err
    folder = (EXAMPLE.parent / "mcp_client").as_uri()
    assert out.splitlines() == [
        "Title: Notes on A title about release notes",
        "confirmed at normal priority",
        "crunched 4 steps",
        f"mcp_client: {folder}",
    ]
    seen = events(Path("run"))
    kinds = [event["kind"] for event in seen]
    # the sampling turn: asked, answered by the node's model (a traced model turn), sent back
    asked = next(e for e in seen if e["kind"] == "sampling.requested")
    assert (asked["node_id"], asked["tool"], asked["max_tokens"]) == ("editor", "draft_title", 40)
    assert asked["messages"] == [{"role": "user", "content": "A title about release notes"}]
    answered = next(e for e in seen if e["kind"] == "sampling.answered")
    assert (answered["status"], answered["text"]) == ("ok", "Notes on A title about release notes")
    stages = [e["stage"] for e in seen if e["kind"] == "model.request"]
    assert stages.count("sampling") == 1
    # the form answered by its defaults, without asking anyone
    requested = next(e for e in seen if e["kind"] == "elicitation.requested")
    assert (requested["policy"], requested["tool"]) == ("accept_defaults", "confirm")
    elicited = next(e for e in seen if e["kind"] == "elicitation.answered")
    assert (elicited["action"], elicited["channel"]) == ("accept", "config")
    assert elicited["content"] == {"confirm": True, "priority": "normal"}
    # progress of the crunch call, with the call it belongs to
    crunch_call = next(e for e in seen if e["kind"] == "tool.call" and e["tool"] == "crunch")
    progress = [e for e in seen if e["kind"] == "tool.progress"]
    assert [(e["progress"], e["total"]) for e in progress] == [(i, 4) for i in range(1, 5)]
    assert {e["call_id"] for e in progress} == {crunch_call["call_id"]}
    assert progress[0]["message"] == "step 1 of 4"
    # log messages with their level; the roots the server listed
    logs = [(e["level"], e["line"]) for e in seen if e["kind"] == "server.log" and e["level"]]
    assert ("info", "info: crunching in 4 steps") in logs
    assert ("warning", "warning: crunching done; the numbers are made up") in logs
    roots = next(e for e in seen if e["kind"] == "server.roots")
    assert roots["roots"] == [folder] and roots["reason"] == "listed"
    assert kinds.index("sampling.requested") < kinds.index("sampling.answered")
    result = json.loads((Path("run") / "result.json").read_text())
    assert result["status"] == "ok"
    # Replayed, the server's requests and reports during each call come back as they were.
    code, replayed, err = invoke(
        "run", str(EXAMPLE), "--task", "release notes", "--out", "rep", "--replay",
        "features.jsonl",
    )
    assert code == 0, err
    assert replayed == out
    told = ("sampling.", "elicitation.", "tool.progress", "server.roots")

    def reports(run: str) -> dict[str, list[str]]:
        # By kind: the three calls of one turn run at once, so kinds interleave freely.
        found: dict[str, list[str]] = {}
        for e in events(Path(run)):
            if e["kind"].startswith(told) or (e["kind"] == "server.log" and e.get("level")):
                kept = {k: v for k, v in e.items() if k not in ("ts", "run_id", "duration_ms")}
                found.setdefault(e["kind"], []).append(json.dumps(kept, sort_keys=True))
        return found

    assert reports("rep") == reports("run")
    assert len(reports("rep")) == 7
    assert len(reports("rep")["server.log"]) == 2  # the server's log notifications
    sampled = [e for e in events(Path("rep")) if e["kind"] == "model.request"]
    assert [e["stage"] for e in sampled].count("sampling") == 1  # the model asked again


def features_workflow(folder: Path, url: str | None = None, **client: Any) -> Path:
    """One agent on the features server: started over stdio, or the one serving at `url`."""
    tooling: dict[str, Any] = {
        "type": "mcp_local",
        "config": {
            "command": sys.executable,
            "args": [str(SERVERS_DIR / "features_server.py")],
            "startup_timeout": 30,
            **client,
        },
    }
    if url is not None:
        tooling = {"type": "mcp_remote", "config": {"server": url, **client}}
    config = {"provider": "scripted", "script": ["x"], "tooling": [tooling]}
    document = {
        "graph": {
            "id": "f",
            "start": ["a"],
            "nodes": [{"id": "a", "type": "agent", "config": config}],
        }
    }
    path = folder / "flow.yaml"
    path.write_text(json.dumps(document))
    return path


def test_tools_list_and_call_keep_what_the_server_says(tmp_path: Path) -> None:
    """Four commands on one features server (over HTTP: started once for them all)."""
    with ServerProcess(SERVERS_DIR / "features_server.py") as server:
        flow = features_workflow(tmp_path, server.url, elicitation="accept_defaults")
        features_commands(str(flow))


def features_commands(flow: str) -> None:
    code, out, err = invoke("tools", "list", flow, "--json")
    assert code == 0, err
    tools = {tool["name"]: tool for tool in json.loads(out)}
    assert tools["described"]["annotations"] == {"readOnlyHint": True, "title": "Annotated tool"}
    assert tools["described"]["output_schema"]["properties"] == {"ok": {"type": "boolean"}}
    code, out, err = invoke("tools", "call", flow, "rich_result", "--json")
    assert code == 0, err
    called = json.loads(out)
    assert called["meta"]["trace_id"] == "t-42"
    kinds = [block["type"] for block in called["blocks"]]
    assert kinds == ["text", "attachment", "resource_link", "text", "data"]
    link = called["blocks"][2]
    assert (link["uri"], link["name"], link["size"]) == (
        "file:///data/report.csv",
        "report.csv",
        2048,
    )
    # without --json: the link on a line of its own, structured content as JSON
    code, out, err = invoke("tools", "call", flow, "rich_result")
    assert code == 0, err
    assert (
        "[resource link: report.csv <file:///data/report.csv> (text/csv): a linked report]" in out
    )
    assert '{"temperature": 21.5, "city": "Oslo"}' in out
    # elicitation by the workflow's policy, no terminal needed
    code, out, err = invoke("tools", "call", flow, "ask", "--args", '{"with_defaults": true}')
    assert code == 0, err
    assert json.loads(out.splitlines()[0])["action"] == "accept"


def test_the_operator_fills_in_the_form_on_the_terminal(tmp_path: Path) -> None:
    """`elicitation` unset on a terminal: the form asks each field and checks each answer."""
    from tests.cli.test_human_terminal import Terminal

    flow = features_workflow(tmp_path)
    document = json.loads(flow.read_text())
    config = document["graph"]["nodes"][0]["config"]
    config["script"] = [
        {"tool_calls": [{"name": "ask", "arguments": {}}]},
        {"content": "{tool_result}"},
    ]
    flow.write_text(json.dumps(document))
    tty = Terminal("run", str(flow), "--out", "run", "-q", cwd=tmp_path)
    try:
        tty.expect("Tell the features server about yourself", timeout=60)
        tty.expect("Name *")
        tty.type(b"\n")  # required, no default: asked again
        tty.expect("this field is required")
        tty.type(b"Grace\n")
        tty.expect("age")
        tty.type(b"200\n")  # above the maximum: asked again
        tty.expect("200 is greater than the maximum of 150")
        tty.type(b"85\n")
        tty.expect("subscribe")
        tty.type(b"\n")  # the default
        tty.expect("3. blue")
        tty.type(b"3\n")  # a choice by its number
        tty.expect("2. Large")
        tty.type(b"Large\n")  # a choice by its title
        assert tty.finish(timeout=60) == 0, tty.text()
    finally:
        tty.close()
    # the answer (stdout) is the tool's result: the action and content the server received
    # (typed ahead, the last answer's echo may come before its prompt: the product ends that line)
    text = tty.text()
    lines = [line[line.index('{"action"') :] for line in text.splitlines() if '{"action"' in line]
    answer = json.loads(lines[-1])
    assert answer == {
        "action": "accept",
        "content": {"name": "Grace", "age": 85, "subscribe": True, "color": "blue", "size": "l"},
    }
    seen = events(tmp_path / "run")
    requested = next(e for e in seen if e["kind"] == "elicitation.requested")
    assert requested["policy"] == "prompt"
    answered = next(e for e in seen if e["kind"] == "elicitation.answered")
    assert (answered["action"], answered["channel"]) == ("accept", "terminal")


def asking_flow(folder: Path, method: str, times: int, **client: Any) -> Path:
    """A scripted agent calling `tool_0` of a raw server that asks `method` `times` times."""
    tooling = {
        "type": "mcp_local",
        "config": {
            "command": sys.executable,
            "args": [
                str(SERVERS_DIR / "raw_server.py"), "--asks", method, "--asks-times", str(times)
            ],
            **client,
        },
    }
    script = [{"tool_calls": [{"name": "tool_0", "arguments": {}}]}, "sampled"]
    config = {"provider": "scripted", "script": script, "tooling": [tooling]}
    document = {"graph": {"id": "asks", "start": ["a"], "nodes": [
        {"id": "a", "type": "agent", "config": config}]}}  # fmt: skip
    path = folder / f"asks-{method.replace('/', '-')}.yaml"
    path.write_text(json.dumps(document))
    return path


def test_a_server_cannot_ask_without_bound(tmp_path: Path) -> None:
    """15 sampling requests in one call: 10 are answered by the model, the rest refused."""
    flow = asking_flow(tmp_path, "sampling/createMessage", 15)
    code, _, err = invoke("run", str(flow), "--task", "go", "--out", "s")
    assert code == 0, err
    answered = [e for e in events(Path("s"), "sampling.answered")]
    assert [e["status"] for e in answered] == ["ok"] * 10 + ["failed"] * 5
    assert "already made 10 sampling requests" in answered[-1]["error"]
    assert "sampling_max_requests" in answered[-1]["error"]
    stages = [e["stage"] for e in events(Path("s"), "model.request")]
    assert stages.count("sampling") == 10
    # Over the run, per server: a lower limit, across calls.
    flow = asking_flow(tmp_path, "sampling/createMessage", 2, sampling_max_requests_per_run=1)
    code, _, err = invoke("run", str(flow), "--task", "go", "--out", "r")
    assert code == 0, err
    answered = [e for e in events(Path("r"), "sampling.answered")]
    assert [e["status"] for e in answered] == ["ok", "failed"]
    assert "sampling_max_requests_per_run" in answered[-1]["error"]
    # Elicitation likewise: past the limit, declined without asking anyone.
    flow = asking_flow(
        tmp_path, "elicitation/create", 4, elicitation="accept_defaults", elicitation_max_requests=3
    )
    code, _, err = invoke("run", str(flow), "--task", "go", "--out", "e")
    assert code == 0, err
    answers = [(e["action"], e["channel"]) for e in events(Path("e"), "elicitation.answered")]
    assert answers == [("accept", "config")] * 3 + [("decline", "limit")]
