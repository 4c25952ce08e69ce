"""`devall run` end to end: the fake LLM, real MCP fixture servers over stdio and HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from devall_cli.cli.app import app
from tests.conftest import REPO_ROOT
from tests.helpers import invoke
from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import FIXTURE_SERVER, SERVERS_DIR, ServerProcess, free_port

TOKEN = "tok-9f8e7d6c5b4a"
API_KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    """One HTTP fixture server for the module: its tests only list and call tools."""
    with ServerProcess(FIXTURE_SERVER) as server:
        yield server


def local(extra: str = "") -> str:
    return f"""
          - type: mcp_local
            config:
              command: "{sys.executable}"
              args: ["{FIXTURE_SERVER}"]
              wait_for_log: fixture server ready{extra}"""


def remote_entry(url: str) -> str:
    return f"""
          - type: mcp_remote
            config:
              server: "{url}"
              headers: {{x-test-token: "${{MCP_TOKEN}}"}}"""


def agent(node_id: str, base_url: str, tooling: str = "") -> str:
    block = f"\n        tooling:{tooling}" if tooling else ""
    return f"""
    - id: {node_id}
      type: agent
      config:
        provider: openai
        name: fake-model
        base_url: "{base_url}"
        api_key: "${{LLM_KEY}}"
        role: You are node {node_id}.
        params: {{temperature: 0, retries: 1}}{block}"""


def write(tmp_path: Path, nodes: str, start: str, edges: str = "[]", end: str = "") -> Path:
    text = (
        f"graph:\n  id: e2e\n  start: {start}\n"
        + (f"  end: {end}\n" if end else "")
        + f"  edges: {edges}\n  nodes:"
        + textwrap.indent(textwrap.dedent(nodes), "  ")
    )
    path = tmp_path / "wf.yaml"
    path.write_text(text)
    return path


def env_args() -> list[str]:
    return ["--var", f"LLM_KEY={API_KEY}", "--var", f"MCP_TOKEN={TOKEN}"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_two_nodes_tool_call_and_handoff(
    tmp_path: Path, llm: FakeLLM, remote: ServerProcess, transport: str
) -> None:
    tooling = local() if transport == "stdio" else remote_entry(remote.url)
    kind = "local" if transport == "stdio" else "remote"
    wf = write(
        tmp_path,
        agent("a", llm.base_url, tooling) + agent("b", llm.base_url),
        "[a]",
        "[{from: a, to: b}]",
    )
    llm.enqueue(FakeLLM.tool_call_reply([("add", {"a": 2, "b": 3})]))
    llm.enqueue("A computed 5")
    llm.enqueue("B agrees: 5")
    code, out, err = invoke("run", str(wf), "--task", "add 2 and 3", "--out", "run", *env_args())
    assert code == 0, err
    assert out == "B agrees: 5\n"
    first, second, third = (r.body for r in llm.requests)
    assert "add" in [t["function"]["name"] for t in first["tools"]]
    assert first["messages"][0] == {"role": "system", "content": "You are node a."}
    assert first["messages"][1] == {"role": "user", "content": "add 2 and 3"}
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_messages and tool_messages[0]["content"] == "5"
    assert {"role": "user", "content": "A computed 5"} in third["messages"]
    assert "tools" not in third
    events = [json.loads(line) for line in Path("run/events.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "run.started" and kinds[-1] == "run.finished"
    assert "tool.call" in kinds and "tool.result" in kinds
    result = json.loads(Path("run/result.json").read_text())
    assert result["status"] == "ok" and result["output"] == "B agrees: 5"
    assert [s["source"] for s in result["servers"]] == [f"mcp_{kind}"]
    assert result["servers"][0]["protocol_version"]
    assert "add" in err and "5" in err  # the trace shows the call and its result


def test_image_tool_writes_attachment_and_traces_it(tmp_path: Path, llm: FakeLLM) -> None:
    wf = write(tmp_path, agent("a", llm.base_url, local()), "[a]")
    llm.enqueue(FakeLLM.tool_call_reply([("image", {})]))
    llm.enqueue("here is your image")
    code, _out, err = invoke("run", str(wf), "--out", "run", *env_args())
    assert code == 0, err
    pngs = list(Path("run/attachments").glob("*.png"))
    assert len(pngs) == 1
    from tests.servers.fixture_server import png_bytes

    assert pngs[0].read_bytes() == png_bytes()
    events = [json.loads(line) for line in Path("run/events.jsonl").read_text().splitlines()]
    saved = [e for e in events if e["kind"] == "attachment.saved"]
    assert saved and saved[0]["mime_type"] == "image/png"
    assert "attachments/" in err
    sent = next(m for m in llm.requests[1].body["messages"] if m["role"] == "tool")["content"]
    assert sent.startswith("[image saved: attachments/") and "image/png" in sent
    result = json.loads(Path("run/result.json").read_text())
    assert result["attachments"][0]["sha256"]


def test_independent_branches_run_concurrently(tmp_path: Path) -> None:
    def scripted(node_id: str, tag: str) -> str:
        return f"""
    - id: {node_id}
      type: agent
      config:
        provider: scripted
        name: s
        tooling:{local(chr(10) + "              max_concurrency: 2")}
        script:
          - tool_calls: [{{name: sleep_and_tag, arguments: {{seconds: 1.0, tag: {tag}}}}}]
          - content: "{{tool_result}}"
"""

    wf = write(tmp_path, scripted("left", "L") + scripted("right", "R"), "[left, right]")
    code, _, err = invoke("run", str(wf), "--out", "run")
    assert code == 0, err
    events = [json.loads(line) for line in Path("run/events.jsonl").read_text().splitlines()]
    calls = [e["ts"] for e in events if e["kind"] == "tool.call"]
    results = [e["ts"] for e in events if e["kind"] == "tool.result"]
    assert len(calls) == 2 and len(results) == 2
    assert max(calls) < min(results)  # both calls went out before either answer came back


def test_secrets_never_appear_in_any_output(
    tmp_path: Path, llm: FakeLLM, remote: ServerProcess
) -> None:
    wf = write(tmp_path, agent("a", llm.base_url, remote_entry(remote.url)), "[a]")
    llm.enqueue(FakeLLM.tool_call_reply([("counter", {})]))  # echoes the header it received
    llm.enqueue(f"the server saw {TOKEN}")
    code, out, err = invoke("run", str(wf), "--out", "run", "--verbose", *env_args())
    assert code == 0, err
    assert llm.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    tool_message = next(m for m in llm.requests[1].body["messages"] if m["role"] == "tool")
    assert TOKEN in tool_message["content"]  # the model may see it; our outputs may not
    code2, json_out, _ = invoke("run", str(wf), "--out", "run2", "--json", *env_args())
    assert code2 == 0
    for text in (out, err, json_out, *(p.read_text() for p in Path(".").glob("run*/*.json*"))):
        assert TOKEN not in text and API_KEY not in text
    assert "***" in out


def test_literal_passthrough_conditions_and_final_output(tmp_path: Path) -> None:
    nodes = """
    - id: say
      type: literal
      config: {content: "status: green"}
    - id: on_green
      type: passthrough
      config: {}
    - id: on_red
      type: literal
      config: {content: "alarm"}
    """
    edges = (
        "[{from: say, to: on_green, condition: {type: keyword, config: {any: [green]}}},"
        " {from: say, to: on_red, condition: {type: keyword, config: {any: [red]}}}]"
    )
    wf = write(tmp_path, nodes, "[say]", edges)
    code, out, err = invoke("run", str(wf), "--out", "run", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["output"] == "status: green"
    statuses = {n["id"]: n["status"] for n in result["nodes"]}
    assert statuses["on_green"] == "ok" and statuses["on_red"] != "ok"
    # Run without a task: it runs, and says the task is empty.
    assert "devall: warning: no task given: the start nodes get an empty task" in err
    code, _, err = invoke("run", str(wf), "--out", "run2", "--task", "")
    assert code == 0 and "no task given" not in err


def test_exit_codes_for_llm_failures(tmp_path: Path, llm: FakeLLM) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    wf = write(tmp_path, agent("a", dead), "[a]")
    code, out, err = invoke("run", str(wf), "--out", "run", *env_args())
    assert code == 4 and out == ""
    assert "devall: error:" in err and API_KEY not in err and "Traceback" not in err
    result = json.loads(Path("run/result.json").read_text())
    assert result["status"] == "failed"
    wf = write(tmp_path, agent("a", llm.base_url), "[a]")
    llm.enqueue(FakeLLM.error_reply(400, {"error": {"message": "bad model"}}))
    code, _, err = invoke("run", str(wf), "--out", "run3", *env_args())
    assert code == 5 and "400" in err


def test_a_name_that_does_not_resolve_is_told_from_a_server_that_is_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unresolvable: one attempt and a DNS hint; refused: two attempts, not the whole backoff."""
    import socket

    real = socket.getaddrinfo
    looked_up: list[str] = []

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host  # anyio passes IDNA bytes
        if name == "models.example.invalid":  # answered here: no lookup leaves the machine
            looked_up.append(name)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    wf = tmp_path / "wf.yaml"
    for base_url in ("http://models.example.invalid/v1", f"http://127.0.0.1:{free_port()}/v1"):
        config = {"provider": "openai", "name": "m", "base_url": base_url, "api_key": "k"}
        wf.write_text(json.dumps({"graph": {"id": "g", "start": ["a"], "nodes": [
            {"id": "a", "type": "agent", "config": config}]}}))  # fmt: skip
        code, _, err = invoke("run", str(wf), "--task", "t", "--out", f"run-{len(looked_up)}")
        assert code == 4, err
        if "invalid" in base_url:
            assert "the host name models.example.invalid does not resolve" in err
            assert "check the host name in the node's `base_url:`" in err
            assert "start the model server" not in err and looked_up == [
                "models.example.invalid"
            ]
        else:
            assert "connection refused, nothing listens there (after 2 attempts)" in err
            assert "start the model server at" in err


def test_local_server_that_cannot_start_is_exit_4(tmp_path: Path) -> None:
    nodes = """
    - id: a
      type: agent
      config:
        provider: scripted
        name: s
        script: [{content: x}]
        tooling:
          - type: mcp_local
            config: {command: definitely-not-a-command-xyz}
    """
    wf = write(tmp_path, nodes, "[a]")
    code, _, err = invoke("run", str(wf), "--out", "run")
    assert code == 4 and "definitely-not-a-command-xyz" in err


def test_task_file_from_stdin_and_usage_errors(tmp_path: Path) -> None:
    nodes = """
    - id: a
      type: passthrough
      config: {}
    """
    wf = write(tmp_path, nodes, "[a]")
    result = CliRunner().invoke(app, ["run", str(wf), "--task-file", "-", "-q"], input="hello\n")
    assert result.exit_code == 0 and result.stdout == "hello\n" and result.stderr == ""
    code, _, err = invoke("run", str(wf), "--task", "x", "--task-file", "y")
    assert code == 2 and "not both" in err


def test_make_demo_command_runs_offline(tmp_path: Path) -> None:
    """The exact command `make demo` runs, from the repository, with a fresh run directory."""
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.run(
        [
            str(bin_dir / "devall"),
            "run",
            "workflows/demo_offline.yaml",
            "--task",
            "Tell me my fortune",
            "--out",
            str(tmp_path / "demo"),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Fortune cookie says: Your lucky number is ")
    assert "rand_num" in proc.stderr
    assert (tmp_path / "demo" / "result.json").exists()


def test_chatdev_remote_demo_runs_against_an_openai_compatible_endpoint(
    tmp_path: Path, llm: FakeLLM
) -> None:
    """workflows/demo_mcp.yaml as shipped, with only the server's port moved to a free one."""
    from tests.servers.serve import EXAMPLE_SERVER

    with ServerProcess(EXAMPLE_SERVER) as example:
        text = (REPO_ROOT / "workflows" / "demo_mcp.yaml").read_text()
        wf = tmp_path / "demo_mcp.yaml"
        wf.write_text(text.replace("http://127.0.0.1:8001/mcp", example.url))
        llm.enqueue(FakeLLM.tool_call_reply([("rand_num", {"a": 1, "b": 100})]))
        llm.enqueue("Forty-two lines of verse")
        llm.enqueue("A fine poem: 8/10")
        code, out, err = invoke(
            "run",
            str(wf),
            "--task",
            "a poem",
            "--out",
            "run",
            "--var",
            f"BASE_URL={llm.base_url}",
            "--var",
            f"API_KEY={API_KEY}",
        )
    assert code == 0, err
    assert out == "A fine poem: 8/10\n"
    poet_second = llm.requests[1].body["messages"]
    drawn = next(m for m in poet_second if m["role"] == "tool")["content"]
    assert 1 <= int(drawn) <= 100
    critic = llm.requests[2].body["messages"]
    assert {"role": "user", "content": "Forty-two lines of verse"} in critic


def test_a_result_file_that_cannot_be_written_fails_the_run(tmp_path: Path) -> None:
    nodes = """
    - id: a
      type: literal
      config: {content: "the answer"}
    """
    wf = write(tmp_path, nodes, "[a]")
    (Path("run") / "result.json").mkdir(parents=True)  # in the way of the atomic rename
    code, out, err = invoke("run", str(wf), "--out", "run")
    assert out == "the answer\n"  # the answer is not lost
    assert code == 1
    assert "devall: warning: could not write run/result.json: Is a directory\n" in err
    assert err.endswith("devall: error: could not write run/result.json: Is a directory\n")
    assert "Traceback" not in err


def test_a_failed_tool_call_shows_in_the_summary_the_last_line_and_the_report(
    tmp_path: Path,
) -> None:
    """Tool failures are data (the run goes on, exit 0), but the user is told."""
    tooling = [{"type": "mcp_local", "config": {
        "command": sys.executable, "args": [str(SERVERS_DIR / "raw_server.py"), "--fixture"]}}]
    script = [{"tool_calls": [{"name": "fail", "arguments": {"message": "broke"}}]},
              {"tool_calls": [{"name": "echo", "arguments": {"text": "fine"}}]}, "done"]
    document = {"graph": {"id": "g", "start": ["a"], "nodes": [{"id": "a", "type": "agent",
                "config": {"provider": "scripted", "script": script, "tooling": tooling}}]}}
    wf = tmp_path / "flow.yaml"
    wf.write_text(json.dumps(document))  # fmt: skip
    code, out, err = invoke("run", str(wf), "--out", "run", "--report")
    assert code == 0 and out == "done\n", err
    assert "2 (1 failed)" in err
    assert "✓ run ok in" in err and ", but 1 tool call failed" in err
    result = json.loads((Path("run") / "result.json").read_text())
    assert result["totals"]["tool_errors"] == 1 and result["totals"]["tool_calls"] == 2
    assert "2 (1 failed)" in (Path("run") / "report.html").read_text()
