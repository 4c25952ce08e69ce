"""Skills served over MCP (the skills extension) by tests/servers/skills_server.py: `skills list`
reads no file, `skills read` prints a verified file and refuses a tampered one; in a run the
model activates a server's skill and gets its SKILL.md, read only then, and a tampered one is
an error result."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cli.flows import invoke, llm_agent, write_flow
from tests.helpers import cli
from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import SERVERS_DIR

SERVER = str(SERVERS_DIR / "skills_server.py")


def _seen(log: Path) -> list[tuple[str, str | None]]:
    """(method, uri) of each request the server got."""
    return [(e["method"], e["uri"]) for e in map(json.loads, log.read_text().splitlines())]


def test_skills_list_reads_nothing_and_read_verifies(tmp_path: Path) -> None:
    log = tmp_path / "server.jsonl"
    command = f"{sys.executable} {SERVER} --log {log}"
    listed = cli("skills", "list", "--command", command, "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (skill,) = json.loads(listed.stdout)
    assert (skill["name"], skill["description"]) == ("pdf-forms", "Fill PDF forms field by field")
    assert [f["path"] for f in skill["files"]] == ["SKILL.md", "references/FIELDS.md"]
    assert "resources/read" not in {method for method, _ in _seen(log)}
    read = cli("skills", "read", "--command", command, "pdf-forms", "references/FIELDS.md",
               cwd=tmp_path)  # fmt: skip
    assert (read.returncode, read.stdout) == (0, "Fields: name, date.\n"), read.stderr
    tampered = cli("skills", "read", "--command", f"{command} --tamper", "pdf-forms",
                   cwd=tmp_path)  # fmt: skip
    assert tampered.returncode == 1 and tampered.stdout == ""
    (line,) = tampered.stderr.strip().splitlines()
    assert "skill 'pdf-forms': SKILL.md failed verification: its digest is sha256:" in line


def test_a_model_activates_a_server_skill(tmp_path: Path, fake_llm: FakeLLM) -> None:
    log = tmp_path / "server.jsonl"
    activate = FakeLLM.tool_call_reply([("activate_skill", {"skill_name": "pdf-forms"})])
    fake_llm.enqueue(activate, "done", activate, "done")

    def run(*flags: str) -> list[str]:
        args = [SERVER, "--log", str(log), *flags]
        tooling = {"type": "mcp_local", "config": {"command": sys.executable, "args": args}}
        agent = llm_agent("a", fake_llm, tooling=[tooling], skills={"enabled": True})
        flow = write_flow(tmp_path, [agent], [], start=["a"])
        code, _, err = invoke("run", str(flow), "--task", "go")
        assert code == 0, err
        second = fake_llm.chat_requests[-1]
        return [m["content"] for m in second.body["messages"] if m["role"] == "tool"]

    (answer,) = run()
    first = fake_llm.chat_requests[0]
    assert "<name>pdf-forms</name>" in first.body["messages"][0]["content"]
    assert {t["function"]["name"] for t in first.body["tools"]} >= {"fill", "activate_skill"}
    assert "call fill once per field" in json.loads(answer)["instructions"]
    seen = _seen(log)
    reads = [n for n, (method, _) in enumerate(seen) if method == "resources/read"]
    assert [seen[n][1] for n in reads] == ["skill://pdf-forms/SKILL.md"]  # on activation only
    assert seen.index(("skills/list", None)) < reads[0]
    (refused,) = run("--tamper")
    assert refused.startswith("Tool activate_skill error: ") and "failed verification" in refused
    assert "ONCE PER" not in refused  # the tampered text never reaches the model


def test_a_batch_task_is_offered_the_servers_skills(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.enqueue("done")
    tooling = {"type": "mcp_local", "config": {"command": sys.executable, "args": [SERVER]}}
    agent = llm_agent("a", fake_llm, tooling=[tooling], skills={"enabled": True})
    flow = write_flow(tmp_path, [agent], [], start=["a"])
    code, _, err = invoke("batch", str(flow), "-", "--out", "b", stdin='{"task": "go"}\n')
    assert code == 0, err
    assert "<name>pdf-forms</name>" in fake_llm.chat_requests[0].body["messages"][0]["content"]
