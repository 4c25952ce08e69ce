"""`devall run` under faults, end to end: real misbehaving servers on loopback, a fake LLM.

Covers parallel pressure, a long run of 1,000 calls (file descriptors, memory, processes), a
hostile MCP server, odd tool names, oversized results, secrets in every output, symlinks in the
run directory, and a local server dying during a run.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devall_cli.run_values import resolve
from tests.helpers import events, invoke
from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import SERVERS_DIR, ServerProcess, free_port

HOSTILE = SERVERS_DIR / "hostile_server.py"
DIE_SERVER = SERVERS_DIR / "die_mid_call_server.py"
SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
API_KEY = "sk-reliability-5e3c1a9b7d"
TOKEN = "tok-reliability-8f2d6b4e0a"


# --- helpers -----------------------------------------------------------------------------------


# The stdlib server, for what devall does with a local server (not what the server is built on).
RAW = SERVERS_DIR / "raw_server.py"


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    """One HTTP server shared by the tests of this module (none depends on its state).

    The stdlib one, with the fixture tools: what is tested is devall's client under many calls,
    and a FastMCP server would spend more CPU on them than devall does.
    """
    with ServerProcess(RAW, args=["--fixture"]) as server:
        yield server


pytestmark = pytest.mark.usefixtures("no_process_left")


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def local_tooling(script: Path, *args: str, prefix: str = "", **settings: Any) -> str:
    """An `mcp_local` tooling entry running a test server with the tests' Python."""
    config = {
        "command": sys.executable,
        "args": [str(script), *args],
        "wait_for_log": "ready",
        **settings,
    }
    entry = {"type": "mcp_local", "config": config}
    if prefix:
        entry["prefix"] = prefix
    return json.dumps(entry)


def remote_tooling(url: str, prefix: str = "", **settings: Any) -> str:
    entry: dict[str, Any] = {"type": "mcp_remote", "config": {"server": url, **settings}}
    if prefix:
        entry["prefix"] = prefix
    return json.dumps(entry)


def workflow(tmp_path: Path, *tooling: str, llm: FakeLLM | None = None, **config: Any) -> Path:
    """One agent node `a` with the tooling: on the fake LLM, or scripted (pass `script=`)."""
    node: dict[str, Any] = {"name": "m", "tooling": [json.loads(t) for t in tooling], **config}
    if llm is not None:
        node.update(provider="openai", base_url=llm.base_url, api_key="${LLM_KEY}")
        node.setdefault("params", {}).setdefault("retries", 0)
    else:
        node["provider"] = "scripted"
    document = {
        "graph": {
            "id": "rel",
            "start": ["a"],
            "nodes": [{"id": "a", "type": "agent", "config": node}],
        }
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "wf.yaml"
    path.write_text(json.dumps(document, indent=1))  # JSON is YAML
    return path


def of_kind(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in events(run_dir) if e["kind"] == kind]


def tool_messages(body: dict[str, Any]) -> dict[str, str]:
    """`tool_call_id -> content` of the tool messages in a request body the fake LLM got."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def children() -> dict[int, str]:
    """This process's children and their state letter (Z for a zombie)."""
    me, found = os.getpid(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found[int(entry.name)] = fields[0]
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_kib() -> int:
    found = re.search(r"^VmRSS:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE)
    assert found is not None
    return int(found.group(1))


# --- long runs ---------------------------------------------------------------------------------


def long_run_workflow(tmp_path: Path, url: str, turns: int, per_turn: int) -> Path:
    """Scripted turns of `per_turn` calls each, half to a local and half to a remote server."""
    script: list[dict[str, Any]] = []
    for turn in range(turns):
        calls = [
            {"name": "loc_echo" if n % 2 else "web_echo", "arguments": {"text": f"t{turn}c{n}"}}
            for n in range(per_turn)
        ]
        script.append({"tool_calls": calls})
    script.append({"content": "last: {tool_result}"})
    return workflow(
        tmp_path,
        local_tooling(RAW, "--fixture", prefix="loc", max_concurrency=4),
        remote_tooling(url, prefix="web"),
        script=script,
        params={"tool_loop_limit": turns + 1},
    )


@pytest.mark.slow  # a soak test: `make test` runs it, `make test-fast` does not
def test_a_thousand_calls_leave_fds_memory_and_processes_flat(
    tmp_path: Path, remote: ServerProcess
) -> None:
    before_children = children()
    warm = long_run_workflow(tmp_path / "warm", remote.url, turns=1, per_turn=50)
    code, _, err = invoke("run", str(warm), "--out", "warm", "--quiet")
    assert code == 0, err
    gc.collect()
    fds, rss = open_fds(), rss_kib()
    long = long_run_workflow(tmp_path, remote.url, turns=10, per_turn=100)
    started = time.monotonic()
    code, out, err = invoke("run", str(long), "--out", "long", "--json", "--quiet")
    elapsed = time.monotonic() - started
    assert code == 0, err
    gc.collect()
    fds_after, rss_after = open_fds(), rss_kib()
    result = json.loads(out)
    assert result["totals"]["tool_calls"] == 1000
    assert result["output"] == "last: t9c99"
    assert sum(t["errors"] for t in result["tools"]) == 0
    # One process and one session per server carried all the calls.
    assert len(of_kind(Path("long"), "server.starting")) == 2
    assert of_kind(Path("long"), "server.restarted") == []
    print(
        f"\n1000 calls in {elapsed:.1f}s; fds {fds} -> {fds_after}; "
        f"RSS {rss / 1024:.1f} -> {rss_after / 1024:.1f} MiB"
    )
    assert fds_after - fds <= 5
    assert rss_after - rss <= 30 * 1024
    after = children()
    assert set(after) == set(before_children)  # no server left running
    assert "Z" not in after.values()  # and none left unreaped


# --- parallel pressure -------------------------------------------------------------------------


def test_forty_calls_of_one_turn_each_come_back_to_their_own_call(
    tmp_path: Path, llm: FakeLLM, remote: ServerProcess
) -> None:
    wf = workflow(
        tmp_path,
        local_tooling(RAW, "--fixture", prefix="loc", max_concurrency=4),
        remote_tooling(remote.url, prefix="web"),
        llm=llm,
    )
    calls = [
        (f"{side}_track", {"seconds": 0.2, "tag": f"{side}{n}"})
        for n in range(20)
        for side in ("loc", "web")
    ]
    llm.enqueue(FakeLLM.tool_call_reply(calls), "all done")
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}")
    assert code == 0, err
    assert out == "all done\n"
    sent = tool_messages(llm.requests[1].body)
    assert len(sent) == 40
    local_peaks = []
    for n, (_name, args) in enumerate(calls, start=1):
        tag, _, peak = sent[f"call_fake_{n}"].partition(" peak=")
        assert tag == args["tag"]  # the result of call n went back as the answer to call n
        if tag.startswith("loc"):
            local_peaks.append(int(peak))
    assert max(local_peaks) == 4  # max_concurrency held (and was used) on the local server
    results = {e["call_id"]: e for e in of_kind(Path("run"), "tool.result")}
    assert results["call_fake_3"]["blocks"][0]["text"].startswith("loc1 peak=")
    assert results["call_fake_4"]["original_name"] == "track"


# --- a hostile MCP server ----------------------------------------------------------------------


HOSTILE_TOOLS = ("no_id", "not_json", "bad_result", "wrong_version", "wrong_types", "unknown_block")


def test_garbage_from_a_server_goes_back_to_the_model_as_error_results(
    tmp_path: Path, llm: FakeLLM
) -> None:
    tooling = local_tooling(HOSTILE, call_timeout=1, max_concurrency=8)
    wf = workflow(tmp_path, tooling, llm=llm)
    llm.enqueue(
        FakeLLM.tool_call_reply([(name, {}) for name in HOSTILE_TOOLS]),
        FakeLLM.tool_call_reply([("echo", {"text": "still fine"})]),
        "survived",
    )
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}")
    assert code == 0, err
    assert out == "survived\n" and "Traceback" not in err
    sent = tool_messages(llm.requests[1].body)
    assert len(sent) == len(HOSTILE_TOOLS)
    assert all("timed out" in text or "invalid" in text for text in sent.values()), sent
    results = of_kind(Path("run"), "tool.result")
    classes = {e["original_name"]: e["error_class"] for e in results if e["is_error"]}
    assert classes == {
        "no_id": "timeout",
        "not_json": "timeout",
        "bad_result": "invalid_result",
        "wrong_version": "invalid_result",
        "wrong_types": "invalid_result",
        "unknown_block": "invalid_result",
    }
    assert tool_messages(llm.requests[2].body)["call_fake_1"] == "still fine"
    logged = "\n".join(e["line"] for e in of_kind(Path("run"), "server.log"))
    assert "[devall: invalid JSON-RPC message" in logged


def test_a_server_listing_one_name_twice_fails_the_run_with_exit_5(tmp_path: Path) -> None:
    wf = workflow(tmp_path, local_tooling(HOSTILE, "--duplicates"), script=[{"content": "x"}])
    code, _, err = invoke("run", str(wf), "--out", "run")
    assert code == 5, err
    assert "devall: error: MCP server 'hostile_server'" in err
    assert "listed more than one tool named 'echo'" in err and "Traceback" not in err
    assert json.loads(Path("run/result.json").read_text())["status"] == "failed"


# --- odd tool names ----------------------------------------------------------------------------


def test_odd_tool_names_are_offered_safely_and_reach_the_original_tool(
    tmp_path: Path, llm: FakeLLM
) -> None:
    from tests.servers.hostile_server import ODD_NAMES

    wf = workflow(tmp_path, local_tooling(HOSTILE, "--odd-names"), llm=llm)
    code, out, err = invoke("tools", "list", str(wf), "--json", "--var", f"LLM_KEY={API_KEY}")
    assert code == 0, err
    listed = {row["original_name"]: row["name"] for row in json.loads(out)}
    assert sorted(listed) == sorted(ODD_NAMES)
    assert all(SAFE_NAME.match(name) for name in listed.values())
    assert len(set(listed.values())) == len(ODD_NAMES)
    assert listed["my.tool/v2"] == "my_tool_v2" and listed["ok_name"] == "ok_name"

    originals = sorted(listed)
    llm.enqueue(FakeLLM.tool_call_reply([(listed[o], {}) for o in originals]), "done")
    code, _, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}")
    assert code == 0, err
    offered = [tool["function"]["name"] for tool in llm.requests[0].body["tools"]]
    assert sorted(offered) == sorted(listed.values())
    sent = tool_messages(llm.requests[1].body)
    for n, original in enumerate(originals, start=1):
        assert sent[f"call_fake_{n}"] == f"called {original}"  # the server got the original name
    traced = {e["tool"]: e["original_name"] for e in of_kind(Path("run"), "tool.call")}
    assert traced == {listed[o]: o for o in originals}


# --- oversized results -------------------------------------------------------------------------


def test_an_oversized_result_is_capped_for_the_model_and_kept_whole_in_the_log(
    tmp_path: Path, llm: FakeLLM
) -> None:
    wf = workflow(tmp_path, local_tooling(HOSTILE), llm=llm)
    llm.enqueue(FakeLLM.tool_call_reply([("flood", {"chars": 300_000})]), "read it")
    code, _, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}")
    assert code == 0, err
    sent = tool_messages(llm.requests[1].body)["call_fake_1"]
    assert sent.startswith("0123456789")
    assert sent.endswith("\n…[truncated: 100000 of 300000 characters shown]")
    assert len(sent) < 100_100 and "<END>" not in sent
    (result,) = of_kind(Path("run"), "tool.result")
    # Over 64 KiB, the text is stored once in values/ and the event refers to it.
    kept = resolve(result, Path("run"))["blocks"][0]["text"]
    assert len(kept) == 300_000 and kept.endswith("<END>")
    assert len(err) < 20_000  # the console shows a preview, not the whole text


# --- secrets -----------------------------------------------------------------------------------


def written_texts(*run_dirs: Path) -> list[str]:
    """Every file devall wrote in the run directories."""
    return [p.read_text() for d in run_dirs for p in d.rglob("*") if p.is_file()]


def test_secrets_are_masked_in_every_output(tmp_path: Path, llm: FakeLLM) -> None:
    tooling = local_tooling(HOSTILE, env={"API_TOKEN": "${API_TOKEN}"})
    wf = workflow(tmp_path, tooling, llm=llm)
    secrets = ["--var", f"LLM_KEY={API_KEY}", "--var", f"API_TOKEN={TOKEN}"]

    def script() -> None:
        llm.enqueue(
            FakeLLM.tool_call_reply([("env", {"name": "API_TOKEN"})]),
            FakeLLM.tool_call_reply([("log", {"text": f"the token is {TOKEN}"})]),
            f"The token is {TOKEN}.",
        )

    script()
    code, out, err = invoke("run", str(wf), "--out", "run1", "--verbose", *secrets)
    assert code == 0, err
    # The secret did travel: the server read it and the model saw it.
    assert tool_messages(llm.requests[1].body)["call_fake_1"] == TOKEN
    assert llm.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    script()
    code, json_out, err2 = invoke("run", str(wf), "--out", "run2", "--json", *secrets)
    assert code == 0, err2
    outputs = {"stdout": out, "stderr": err, "--json": json_out, "stderr (json)": err2}
    for path in Path("run1").rglob("*"):
        if path.is_file():
            outputs[str(path)] = path.read_text()
    assert {"run1/events.jsonl", "run1/result.json", "run1/servers/hostile_server.log"} <= set(
        outputs
    )
    for name, text in outputs.items():
        assert TOKEN not in text and API_KEY not in text, name
    assert out == "The token is ***.\n"
    assert "hostile server log: the token is ***" in outputs["run1/servers/hostile_server.log"]
    assert "the token is ***" in err  # --verbose shows server logs, masked
    assert json.loads(json_out)["output"] == "The token is ***."


@pytest.mark.parametrize("name", ["MCP_TOKEN", "QS"])
def test_a_token_in_an_unreachable_server_url_is_masked(tmp_path: Path, name: str) -> None:
    # QS does not look secret: only the `token=` query parameter marks the value.
    url = f"http://127.0.0.1:{free_port()}/mcp?token=${{{name}}}"
    wf = workflow(tmp_path, remote_tooling(url), script=[{"content": "x"}])
    code, out, err = invoke("run", str(wf), "--out", "run", "--json", "--var", f"{name}={TOKEN}")
    assert code == 4
    assert "devall: error:" in err and "127.0.0.1" in err and "token=***" in err
    for text in (out, err, *written_texts(Path("run"))):
        assert TOKEN not in text


def test_a_key_in_an_unreachable_model_url_is_masked(tmp_path: Path) -> None:
    port = free_port()
    node = {"base_url": f"http://127.0.0.1:{port}/v1?api-key=${{QS}}", "params": {"retries": 0}}
    path = workflow(tmp_path)
    document = json.loads(path.read_text())
    document["graph"]["nodes"][0]["config"].update(provider="openai", **node)
    path.write_text(json.dumps(document))
    code, out, err = invoke("run", str(path), "--out", "run", "--json", "--var", f"QS={API_KEY}")
    assert code == 4, err
    assert "devall: error:" in err and f"127.0.0.1:{port}" in err
    for text in (out, err, *written_texts(Path("run"))):
        assert API_KEY not in text


def test_a_secret_in_the_log_of_a_server_that_fails_to_start_is_masked(tmp_path: Path) -> None:
    tooling = local_tooling(HOSTILE, "--fail-with-env", "API_TOKEN", env={"API_TOKEN": "${T}"})
    wf = workflow(tmp_path, tooling, script=[{"content": "x"}])
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"T={TOKEN}")
    assert code == 4, err
    assert "exited with status 3 before it was ready" in err
    assert "cannot start with API_TOKEN=***" in err  # the log tail, masked
    for text in (out, err, *written_texts(Path("run"))):
        assert TOKEN not in text


# --- the run directory -------------------------------------------------------------------------


def test_symlinks_in_the_run_directory_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "attachments").mkdir(parents=True)
    (outside / "servers").mkdir()
    originals = {}
    for name in ("events.jsonl", "result.json", "fx.log"):
        (outside / name).write_text(f"not yours: {name}\n")
        originals[name] = f"not yours: {name}\n"
    run = tmp_path / "run"
    (run / "servers").mkdir(parents=True)
    (run / "events.jsonl").symlink_to(outside / "events.jsonl")
    (run / "result.json").symlink_to(outside / "result.json")
    (run / "servers" / "fx.log").symlink_to(outside / "fx.log")
    (run / "attachments").symlink_to(outside / "attachments")
    script = [{"tool_calls": [{"name": "fx_image", "arguments": {}}]}, {"content": "{tool_result}"}]
    wf = workflow(tmp_path, local_tooling(RAW, "--fixture", prefix="fx"), script=script)
    code, out, err = invoke("run", str(wf), "--out", str(run))
    assert code == 0, err
    for name, text in originals.items():
        assert (outside / name).read_text() == text, name
    assert list((outside / "attachments").iterdir()) == []
    # devall's own files replaced the links; the attachment was refused, visibly.
    for name in ("events.jsonl", "result.json", "servers/fx.log"):
        assert not (run / name).is_symlink() and (run / name).stat().st_size > 0, name
    assert "raw server ready" in (run / "servers" / "fx.log").read_text()
    assert out.startswith("[failed to save image content from image:")
    assert "not a plain folder" in out

    # A symlinked `servers/` folder is refused: the lines still reach the event log.
    run2 = tmp_path / "run2"
    run2.mkdir()
    (run2 / "servers").symlink_to(outside / "servers")
    wf = workflow(tmp_path, local_tooling(HOSTILE, prefix="hs"), script=[{"content": "ok"}])
    code, _, err = invoke("run", str(wf), "--out", str(run2))
    assert code == 0, err
    assert list((outside / "servers").iterdir()) == []
    logged = [e["line"] for e in of_kind(run2, "server.log")]
    assert any(line.startswith("[devall: cannot write") for line in logged), logged
    assert "hostile server ready" in logged


def test_an_event_log_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "run" / "events.jsonl").mkdir(parents=True)
    wf = workflow(tmp_path, script=[{"content": "x"}])
    code, out, err = invoke("run", str(wf), "--task", "t", "--out", "run")
    assert code == 1 and out == ""
    assert err.startswith("devall: error: cannot write the event log run/events.jsonl:")
    assert "Traceback" not in err


# --- a local server dying during a run -----------------------------------------------------------


def test_a_dying_local_server_is_an_error_result_then_restarted_then_exit_4(
    tmp_path: Path, llm: FakeLLM
) -> None:
    wf = workflow(tmp_path, local_tooling(DIE_SERVER, max_restarts=1), llm=llm)
    llm.enqueue(
        FakeLLM.tool_call_reply([("die", {})]),
        FakeLLM.tool_call_reply([("echo", {"text": "back"})]),
        FakeLLM.tool_call_reply([("die", {})]),
        FakeLLM.tool_call_reply([("echo", {"text": "again"})]),
        "never reached",
    )
    code, out, err = invoke("run", str(wf), "--out", "run", "--var", f"LLM_KEY={API_KEY}")
    assert code == 4, err
    assert out == ""
    # The first death went back to the model as the tool's result, and the run went on.
    died = tool_messages(llm.requests[1].body)["call_fake_1"]
    assert "exited with status 7 during the call" in died
    assert "die server: going down with status 7" in died
    assert tool_messages(llm.requests[2].body)["call_fake_1"] == "back"
    assert len(llm.requests) == 4  # the second death used up max_restarts: no fifth request
    restarted = of_kind(Path("run"), "server.restarted")
    assert [(e["server_id"], e["attempt"]) for e in restarted] == [("die_mid_call_server", 1)]
    classes = [e["error_class"] for e in of_kind(Path("run"), "tool.result") if e["is_error"]]
    assert classes == ["server_exited", "server_exited"]
    assert "devall: error:" in err and "max_restarts: 1" in err
    result = json.loads(Path("run/result.json").read_text())
    assert result["status"] == "failed" and result["exit_code"] == 4
