"""`devall run` within its limits: deadlines, input sizes, a full disk, the run directory.

Each test drives the real command against a hostile peer (a model endpoint that trickles or
floods, a server that hangs or floods) or a hostile file, and checks what the user sees: the
exit code, one clear error line, the answer, and the files of the run.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from devall_cli import limits
from devall_cli.cli.app import app
from devall_cli.run_values import resolve
from tests.cli.test_reliability_cli import (
    API_KEY,
    HOSTILE,
    RAW,
    events,
    invoke,
    local_tooling,
    of_kind,
    remote_tooling,
    workflow,
)
from tests.servers.fake_llm import FakeLLM
from tests.servers.serve import FIXTURE_SERVER, ServerProcess

MB = 1024 * 1024
DEVALL = Path(sys.executable).parent / "devall"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def run(wf: Path, *args: str) -> tuple[int, str, str]:
    """`devall run WF --task t --out run` with the fake LLM's key."""
    key = f"LLM_KEY={API_KEY}"
    return invoke("run", str(wf), "--task", "t", "--out", "run", "--var", key, *args)


def sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no room on disk."""
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


# --- deadlines ---------------------------------------------------------------------------------


def test_a_model_endpoint_that_trickles_is_cut_off_at_the_timeout(
    tmp_path: Path, llm: FakeLLM
) -> None:
    # One byte every 0.3 s never lets a per-read timeout of 1 s expire; the whole body would
    # take over a minute.
    llm.enqueue(FakeLLM.dripping_reply(0.3, "an answer that takes its time"))
    wf = workflow(tmp_path, llm=llm, params={"timeout": 1, "retries": 0})
    code, out, err = run(wf)  # had it waited for the whole body, the run would have succeeded
    assert code == 4, err
    assert out == ""
    assert "devall: error: model endpoint http://127.0.0.1:" in err
    assert "timed out (no complete answer within 1 s)" in err
    assert "Traceback" not in err


def test_a_remote_call_to_a_hung_server_ends_at_its_timeout(tmp_path: Path) -> None:
    # Over SSE a request is a POST of its own: a server that stops answering holds that POST,
    # and every later request waits behind it.
    script = [
        {"tool_calls": [{"name": "stall", "arguments": {"seconds": 3}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"text": "anyone?"}}]},
        {"content": "gave up: {tool_result}"},
    ]
    server = ServerProcess(FIXTURE_SERVER, "sse")
    server.start()
    try:
        wf = workflow(tmp_path, remote_tooling(server.url, timeout=1), script=script)
        code, out, err = run(wf)
    finally:
        server.kill()  # at once: a server stalled in a blocking call would delay a SIGTERM
    assert code == 0, err
    assert out == "gave up: tool 'echo' timed out after 1s\n"
    results = of_kind(Path("run"), "tool.result")
    # Both at their own 1 s timeout: had the echo waited out the 3 s stall, it would have been
    # answered.
    assert [r["error_class"] for r in results] == ["timeout", "timeout"]


# --- input sizes -------------------------------------------------------------------------------


def test_an_env_file_over_the_limit_is_refused_from_its_size(tmp_path: Path) -> None:
    wf = workflow(tmp_path, script=[{"content": "x"}])
    env = sparse(tmp_path / ".env", 2 * 1024 * MB)
    code, _, err = invoke("validate", str(wf))
    assert code == 3
    # The exact size, from the file's metadata: a read up to the limit says "more than".
    assert err.startswith(
        f"devall: error: {env}: the env file is too large: 2147483648 bytes; "
        "env files may hold at most 1 MB (1048576 bytes)"
    )


def test_an_endless_env_file_is_read_only_up_to_the_limit(tmp_path: Path) -> None:
    wf = workflow(tmp_path, script=[{"content": "x"}])
    code, _, err = invoke("validate", str(wf), "--env-file", "/dev/zero")
    assert code == 3
    assert err.startswith(
        "devall: error: /dev/zero: the env file is too large: more than 1048576 bytes"
    )


def test_an_env_file_may_be_a_pipe(tmp_path: Path) -> None:
    wf = workflow(tmp_path, script=[{"content": "${GREETING}"}])
    read_end, write_end = os.pipe()
    os.write(write_end, b"GREETING=hello from a pipe\n")
    os.close(write_end)
    try:
        code, out, err = invoke("run", str(wf), "--out", "run", "--env-file", f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
    assert code == 0, err
    assert out == "hello from a pipe\n"


@pytest.mark.parametrize("source", ["device", "sparse_file", "stdin"])
def test_a_task_over_the_limit_is_a_usage_error(tmp_path: Path, source: str) -> None:
    wf = workflow(tmp_path, script=[{"content": "x"}])
    path, stdin = {
        "device": ("/dev/zero", None),
        "sparse_file": (str(sparse(tmp_path / "task.txt", 1024 * MB)), None),
        "stdin": ("-", b"x" * (limits.TASK_BYTES + 1)),
    }[source]
    started = time.monotonic()
    result = CliRunner().invoke(app, ["run", str(wf), "--task-file", path], input=stdin)
    assert time.monotonic() - started < 30  # a guard only: reading /dev/zero whole never ends
    assert result.exit_code == 2, result.stderr
    size = "1073741824 bytes" if source == "sparse_file" else "more than 10485760 bytes"
    assert result.stderr == (
        f"devall: error: --task-file {path} is too large: {size}; "
        "a task may hold at most 10 MB (10485760 bytes)\n"
        "  hint: try 'devall run --help'\n"
    )
    assert not Path("logs").exists()  # refused before anything started


@pytest.mark.parametrize("declared", [True, False], ids=["declared_size", "chunked"])
def test_a_huge_model_answer_is_refused_without_being_read_whole(
    tmp_path: Path, llm: FakeLLM, declared: bool
) -> None:
    llm.enqueue(FakeLLM.huge_reply(300 * MB, declare_size=declared))
    code, out, err = run(workflow(tmp_path, llm=llm))
    assert code == 5, err
    assert out == ""
    size = "314572800 bytes" if declared else "more than 10485760 bytes"
    assert f"answered with {size}; devall reads at most 10485760 bytes of a model's answer" in err
    assert llm.sent_bytes < 64 * MB  # the rest of the 300 MB was never read
    assert "Traceback" not in err


FLOOD_FUNCTION = '''
def flood(chars: int) -> str:
    """A text of `chars` characters."""
    return "0123456789" * (chars // 10)
'''


@pytest.mark.parametrize("source", ["function", "mcp_remote", "mcp_local"])
def test_a_huge_tool_result_is_kept_cut_with_a_marker(tmp_path: Path, source: str) -> None:
    script = [
        {"tool_calls": [{"name": "flood", "arguments": {"chars": 3_000_000}}]},
        {"content": "done"},
    ]
    server = ServerProcess(FIXTURE_SERVER) if source == "mcp_remote" else None
    if source == "function":
        (tmp_path / "functions").mkdir()
        (tmp_path / "functions" / "flood.py").write_text(FLOOD_FUNCTION)
        tooling = json.dumps({"type": "function", "config": {"tools": [{"name": "flood"}]}})
    elif server is not None:
        tooling = remote_tooling(server.start())
    else:
        tooling = local_tooling(HOSTILE)
    try:
        code, _, err = run(workflow(tmp_path, tooling, script=script))
    finally:
        if server is not None:
            server.stop()
    assert code == 0, err
    (result,) = of_kind(Path("run"), "tool.result")
    (block,) = resolve(result, Path("run"))["blocks"]  # stored once in values/, referred to
    # A FastMCP server over HTTP also sends the value as structured content, `{"result": ...}`,
    # which is kept as a block of its own and counts in the result's characters.
    total = 3_000_000 + (len('{"result":""}') + 3_000_000 if source == "mcp_remote" else 0)
    marker = f"\n…[truncated: 1000000 of {total} characters]"
    assert block["text"].startswith("0123456789") and block["text"].endswith(marker)
    assert len(block["text"]) == limits.TOOL_RESULT_CHARS + len(marker)
    assert (Path("run") / "events.jsonl").stat().st_size < 2 * MB


def test_a_server_log_moves_aside_at_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "SERVER_LOG_BYTES", 10_000)
    texts = [str(n) * 3000 for n in range(1, 7)] + ["L" * 25_000]
    script: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "hs_log", "arguments": {"text": text}}]} for text in texts
    ]
    script.append({"content": "logged"})
    wf = workflow(tmp_path, local_tooling(HOSTILE, prefix="hs"), script=script)
    code, _, err = invoke("run", str(wf), "--out", "run", "--quiet")
    assert code == 0, err
    log, older = Path("run/servers/hs.log"), Path("run/servers/hs.log.1")
    assert log.stat().st_size <= 10_000 and older.stat().st_size <= 10_000
    last = log.read_text(encoding="utf-8").splitlines()[-1]
    # The line longer than the whole limit is kept cut, with a marker.
    assert last.startswith("hostile server log: LLLL")
    assert last.endswith(f" of {len('hostile server log: ') + 25_000} characters]")
    assert "…[truncated: " in last
    assert "6" * 3000 in older.read_text(encoding="utf-8")
    assert older.read_text(encoding="utf-8").startswith("[devall: ")
    # The trace still has every line, whole.
    logged = [e["line"] for e in of_kind(Path("run"), "server.log")]
    assert f"hostile server log: {texts[-1]}" in logged


# --- a full disk -------------------------------------------------------------------------------


def limit_file_size(size: int) -> None:
    """In the child: files may grow to `size` bytes; past that, writes fail (EFBIG)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


@pytest.mark.parametrize("json_output", [False, True], ids=["answer", "json"])
def test_files_that_cannot_be_written_are_named_and_the_answer_still_printed(
    tmp_path: Path, json_output: bool
) -> None:
    task = "t" * 3000
    wf = workflow(tmp_path, script=[{"content": "The answer is 42. ({input})"}])
    command = [str(DEVALL), "run", str(wf), "--task", task, "--out", "run"]
    proc = subprocess.run(
        [*command, *(["--json"] if json_output else [])],
        preexec_fn=lambda: limit_file_size(4096),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.returncode == 1
    if json_output:
        assert json.loads(proc.stdout)["output"] == f"The answer is 42. ({task})"
    else:
        assert proc.stdout == f"The answer is 42. ({task})\n"
    assert "devall: error: could not write run/events.jsonl: File too large\n" in proc.stderr
    assert "  could not write run/result.json: File too large\n" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_full_disk_is_named_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from devall_cli import run_files
    from devall_cli.trace import jsonl

    def open_full_disk(path: Path, **_: Any) -> Any:
        run_files.open_run_file(path)  # the real file, so that the name is taken as usual
        return open("/dev/full", "w", encoding="utf-8", buffering=1)  # writes: ENOSPC

    monkeypatch.setattr(jsonl, "open_run_file", open_full_disk)
    wf = workflow(tmp_path, script=[{"content": "the answer"}])
    code, out, err = invoke("run", str(wf), "--out", "run", "--quiet")
    assert code == 1
    assert out == "the answer\n"
    assert err.endswith(
        "devall: error: could not write run/events.jsonl: No space left on device\n"
    )
    assert json.loads(Path("run/result.json").read_text())["status"] == "ok"


# --- the run directory -------------------------------------------------------------------------


def test_a_second_run_into_the_same_directory_is_refused(tmp_path: Path, llm: FakeLLM) -> None:
    llm.enqueue(FakeLLM.slow_reply(3, "first"))
    wf = workflow(tmp_path, llm=llm)
    first = subprocess.Popen(
        [str(DEVALL), "run", str(wf), "--task", "t", "--out", "run", "--var", f"LLM_KEY={API_KEY}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        deadline = time.monotonic() + 30
        while not llm.requests and time.monotonic() < deadline:  # the first run is under way
            time.sleep(0.05)
        code, out, err = run(wf)
        out_first, err_first = first.communicate(timeout=30)
    finally:
        first.kill()
        first.wait()
    assert code == 1 and out == ""
    assert err == (
        "devall: error: the run directory run is in use by another devall run; give another --out\n"
    )
    assert first.returncode == 0, err_first
    assert out_first == "first\n"
    logged = events(Path("run"))
    assert logged[0]["kind"] == "run.started"
    assert logged[-1]["kind"] == "run.finished" and logged[-1]["status"] == "ok"
    assert len({e["run_id"] for e in logged}) == 1


def test_planted_hard_links_are_never_written_through(tmp_path: Path) -> None:
    victims = {}
    run_dir = tmp_path / "run"
    (run_dir / "servers").mkdir(parents=True)
    for name in ("events.jsonl", "servers/fx.log", "result.json"):
        victim = tmp_path / f"victim-{Path(name).name}"
        victim.write_text("not yours\n")
        os.link(victim, run_dir / name)
        victims[name] = victim
    script = [{"tool_calls": [{"name": "fx_image", "arguments": {}}]}, {"content": "done"}]
    wf = workflow(tmp_path, local_tooling(RAW, "--fixture", prefix="fx"), script=script)
    code, _, err = invoke("run", str(wf), "--out", str(run_dir))
    assert code == 0, err
    for name, victim in victims.items():
        assert victim.read_text() == "not yours\n", name
        assert (run_dir / name).stat().st_ino != victim.stat().st_ino, name
    assert "raw server ready" in (run_dir / "servers" / "fx.log").read_text()


def test_run_files_are_private_to_their_owner(tmp_path: Path) -> None:
    script = [{"tool_calls": [{"name": "fx_image", "arguments": {}}]}, {"content": "done"}]
    wf = workflow(tmp_path, local_tooling(RAW, "--fixture", prefix="fx"), script=script)
    code, _, err = invoke("run", str(wf), "--out", "run")
    assert code == 0, err
    files = [p for p in Path("run").rglob("*") if p.is_file()]
    names = {str(p.relative_to("run")) for p in files}
    assert {"events.jsonl", "result.json", "servers/fx.log", "attachments/image_image_1.png"} <= (
        names
    )
    modes = {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert set(modes.values()) == {"0o600"}, modes


def test_a_run_directory_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    Path("blocker").write_text("a file, not a folder\n")
    wf = workflow(tmp_path, script=[{"content": "x"}])
    code, out, err = invoke("run", str(wf), "--task", "t", "--out", "blocker/run")
    assert code == 1 and out == ""
    assert err.startswith("devall: error: cannot use the run directory blocker/run: ")
    assert "internal error" not in err
