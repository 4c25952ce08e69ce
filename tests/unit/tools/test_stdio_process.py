"""The stdio process supervisor: spawn errors, environment, log capture, readiness, teardown."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
import time
from pathlib import Path

import pytest

from devall_cli.errors import ExitCode, ServerStartError
from devall_cli.procs.process_groups import kill_all_children, live_child_pids
from devall_cli.tools.stdio_lines import iter_lines, split_message
from devall_cli.tools.stdio_process import StdioProcess, build_child_env
from tests.servers.serve import pid_gone

SERVERS = Path(__file__).resolve().parents[2] / "servers"
PY = sys.executable


def script(code: str) -> list[str]:
    """Arguments running `code` with the Python interpreter of the tests."""
    return ["-c", code]


# Tiny servers that leave when their stdin closes, as well-behaved servers do.
READY_ON_STDERR = (
    "import sys; print('server is ready', file=sys.stderr, flush=True); sys.stdin.read()"
)


# --- pure helpers ----------------------------------------------------------------------------


def test_split_message_passes_a_plain_message() -> None:
    junk, message = split_message('{"jsonrpc": "2.0", "id": 1, "result": {}}')
    assert junk == ""
    assert message == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize(
    ("line", "expected_junk"),
    [
        ('hello{"jsonrpc":"2.0","id":1,"result":{"a":{"b":1}}}', "hello"),
        ('{junk} {"jsonrpc":"2.0","method":"x"}', "{junk}"),
        ('Loaded 3 plugins {"jsonrpc":"2.0","id":"a","result":{}}\r', "Loaded 3 plugins"),
    ],
)
def test_split_message_recovers_junk_glued_to_the_front(line: str, expected_junk: str) -> None:
    junk, message = split_message(line)
    assert junk == expected_junk
    assert message is not None and message["jsonrpc"] == "2.0"


@pytest.mark.parametrize(
    "line",
    [
        "Starting server on stdio",
        "{not json}",
        '{"level": "info", "msg": "no jsonrpc key"}',
        '{"data": {"jsonrpc": "2.0"}}',  # JSON whose only "jsonrpc" is nested: a log line
        '["jsonrpc"]',
        "",
    ],
)
def test_split_message_leaves_other_lines_as_log_lines(line: str) -> None:
    assert split_message(line) == (line, None)


async def _collect(data: bytes, limit: int) -> list[bytes | None]:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    return [line async for line in iter_lines(reader, limit)]


async def test_iter_lines_drops_an_overlong_line_and_goes_on() -> None:
    data = b"short\n" + b"x" * 5000 + b"\nafter\nlast without newline"
    assert await _collect(data, 1000) == [b"short", None, b"after", b"last without newline"]


async def test_iter_lines_splits_lines_across_chunks() -> None:
    body = b"".join(b"line %d\n" % i for i in range(50_000))  # several read chunks
    lines = await _collect(body, 100)
    assert lines == [b"line %d" % i for i in range(50_000)]


def test_child_env_without_inherit_is_env_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEVALL_PARENT_MARKER", "parent")
    env = build_child_env({"ONLY": "this", "FASTMCP_SHOW_SERVER_BANNER": "true"}, False)
    assert env == {"ONLY": "this", "FASTMCP_SHOW_SERVER_BANNER": "true"}  # nothing added


def test_child_env_with_inherit_merges_env_over_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEVALL_PARENT_MARKER", "parent")
    monkeypatch.setenv("DEVALL_OVERRIDDEN", "parent")
    monkeypatch.delenv("FASTMCP_CHECK_FOR_UPDATES")
    env = build_child_env({"DEVALL_OVERRIDDEN": "child", "FASTMCP_SHOW_SERVER_BANNER": "x"}, True)
    assert env["DEVALL_PARENT_MARKER"] == "parent"
    assert env["DEVALL_OVERRIDDEN"] == "child"
    assert env["FASTMCP_SHOW_SERVER_BANNER"] == "x"  # the user's value wins over the default
    assert env["FASTMCP_CHECK_FOR_UPDATES"] == "off"


# --- spawn failures --------------------------------------------------------------------------


async def test_missing_command_fails_to_spawn_at_once() -> None:
    proc = StdioProcess(id="ghost", command="devall-no-such-command-xyz")
    with pytest.raises(ServerStartError) as info:
        await proc.spawn()
    assert info.value.status == "spawn_failed"
    assert info.value.exit_code == ExitCode.CONNECTION
    assert "command not found: devall-no-such-command-xyz" in info.value.message
    assert proc.pid is None


async def test_a_file_that_is_not_executable_fails_to_spawn(tmp_path: Path) -> None:
    tool = tmp_path / "server.sh"
    tool.write_text("#!/bin/sh\necho hi\n")
    proc = StdioProcess(id="plain", command=str(tool))
    with pytest.raises(ServerStartError) as info:
        await proc.spawn()
    assert info.value.status == "spawn_failed"
    assert "not executable" in info.value.message


async def test_a_missing_working_directory_fails_to_spawn(tmp_path: Path) -> None:
    proc = StdioProcess(id="nowhere", command=PY, cwd=str(tmp_path / "missing"))
    with pytest.raises(ServerStartError) as info:
        await proc.spawn()
    assert info.value.status == "spawn_failed"
    assert "working directory not found" in info.value.message


# --- environment and working directory ------------------------------------------------------


async def _env_names(proc: StdioProcess) -> set[str]:
    await proc.spawn()
    try:
        await proc.wait_ready(10)
        return set(json.loads(proc.log_tail[-1]))
    finally:
        await proc.close()


ENV_DUMP = "import json,os,sys; print(json.dumps(sorted(os.environ)), file=sys.stderr, flush=True)"


async def test_inherit_env_false_gives_the_child_only_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEVALL_PARENT_MARKER", "parent")
    proc = StdioProcess(
        id="bare",
        command=PY,
        args=script(ENV_DUMP),
        env={"ONLY_THIS": "1"},
        inherit_env=False,
        wait_for_log=r"^\[",
    )
    names = await _env_names(proc)
    # Python itself may add LC_CTYPE when it coerces the C locale; nothing else may appear.
    assert names - {"LC_CTYPE"} == {"ONLY_THIS"}


async def test_inherit_env_true_keeps_the_parent_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEVALL_PARENT_MARKER", "parent")
    proc = StdioProcess(id="full", command=PY, args=script(ENV_DUMP), wait_for_log=r"^\[")
    names = await _env_names(proc)
    assert {"DEVALL_PARENT_MARKER", "PATH", "FASTMCP_CHECK_FOR_UPDATES"} <= names


async def test_a_bare_command_name_is_found_on_devall_path_without_env_path() -> None:
    # `env` alone has no PATH, yet a bare command name still starts.
    proc = StdioProcess(
        id="sh",
        command="sh",
        args=["-c", "echo shell ready >&2; read -r _"],
        inherit_env=False,
        wait_for_log="shell ready",
    )
    await proc.spawn()
    try:
        await proc.wait_ready(5)
    finally:
        await proc.close()


async def test_cwd_and_a_command_relative_to_it(tmp_path: Path) -> None:
    workdir = tmp_path / "tools"
    workdir.mkdir()
    runner = workdir / "run.sh"
    runner.write_text('#!/bin/sh\necho "cwd=$(pwd)" >&2\nread -r _\n')
    runner.chmod(runner.stat().st_mode | stat.S_IXUSR)
    proc = StdioProcess(id="rel", command="./run.sh", cwd=str(workdir), wait_for_log="^cwd=")
    await proc.spawn()
    try:
        await proc.wait_ready(5)
        assert proc.log_tail[-1] == f"cwd={workdir}"
    finally:
        await proc.close()


# --- log capture and readiness ---------------------------------------------------------------


async def test_ready_on_a_stderr_line_with_log_file_and_callback(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    log_path = tmp_path / "servers" / "srv.log"
    proc = StdioProcess(
        id="srv",
        command=PY,
        args=script(READY_ON_STDERR),
        wait_for_log=r"is read[y]",
        log_path=log_path,
        on_log=lambda source, line: seen.append((source, line)),
    )
    await proc.spawn()
    try:
        await proc.wait_ready(10)
        assert proc.log_matched.is_set()
    finally:
        await proc.close()
    assert seen == [("srv", "server is ready")]
    assert log_path.read_text() == "server is ready\n"


async def test_ready_on_a_junk_stdout_line() -> None:
    code = "import sys; print('Listening on stdio', flush=True); sys.stdin.read()"
    proc = StdioProcess(id="out", command=PY, args=script(code), wait_for_log="Listening")
    await proc.spawn()
    try:
        await proc.wait_ready(10)
        assert proc.log_tail == ["Listening on stdio"]
    finally:
        await proc.close()


async def test_json_rpc_lines_go_to_the_session_and_the_rest_to_the_log() -> None:
    code = (
        "import sys\n"
        "print('banner', flush=True)\n"
        'print(\'junk{"jsonrpc": "2.0", "method": "hello"}\', flush=True)\n'
        "print('ready', file=sys.stderr, flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = StdioProcess(id="mix", command=PY, args=script(code), wait_for_log="^ready$")
    await proc.spawn()
    try:
        await proc.wait_ready(10)
        message = await asyncio.wait_for(proc.receive_message(), 5)
        assert message == {"jsonrpc": "2.0", "method": "hello"}
        assert proc.log_tail == ["banner", "junk", "ready"]
    finally:
        await proc.close()
    assert await proc.receive_message() is None


async def test_an_overlong_line_does_not_stop_the_reader() -> None:
    code = (
        "import sys; print('x' * 5000); print('after', file=sys.stderr, flush=True); "
        "print('ready', flush=True); sys.stdin.read()"
    )
    proc = StdioProcess(
        id="long", command=PY, args=script(code), wait_for_log="^ready$", line_limit=1000
    )
    await proc.spawn()
    try:
        await proc.wait_ready(10)
        assert "[devall: dropped a stdout line longer than 1000 bytes]" in proc.log_tail
        assert "after" in proc.log_tail
    finally:
        await proc.close()


async def test_never_ready_fails_after_startup_timeout_with_the_log_tail() -> None:
    proc = StdioProcess(
        id="lazy",
        command=PY,
        args=[str(SERVERS / "never_ready_server.py")],
        wait_for_log="ready to serve",
    )
    await proc.spawn()
    started = time.monotonic()
    try:
        with pytest.raises(ServerStartError) as info:
            await proc.wait_ready(1.0)
        elapsed = time.monotonic() - started
    finally:
        await proc.close()
    assert elapsed >= 1.0
    assert info.value.status == "startup_timeout"
    assert "ready to serve" in info.value.message
    assert any(line.startswith("still warming up") for line in info.value.log_tail)
    assert any("still warming up" in line for line in info.value.details)


async def test_exit_before_ready_fails_at_once_with_status_and_stderr() -> None:
    proc = StdioProcess(
        id="crash",
        command=PY,
        args=[str(SERVERS / "exit_at_once_server.py")],
        wait_for_log="never printed",
    )
    await proc.spawn()
    try:
        with pytest.raises(ServerStartError) as info:
            # At the exit, not at the minute's timeout (30 s guards a hang).
            await asyncio.wait_for(proc.wait_ready(60.0), 30)
    finally:
        await proc.close()
    assert info.value.status == "exited"
    assert "exited with status 3" in info.value.message
    assert "fatal: cannot open database 'tools.db'" in info.value.log_tail
    assert proc.exit_status_text() == "status 3"


# --- teardown --------------------------------------------------------------------------------


async def test_close_reaps_the_child_and_its_grandchild() -> None:
    proc = StdioProcess(
        id="spawner",
        command=PY,
        args=[str(SERVERS / "spawner_server.py")],
        wait_for_log="spawner server ready",
    )
    await proc.spawn()
    await proc.wait_ready(15)
    grandchild = int(next(x for x in proc.log_tail if x.startswith("grandchild pid")).split()[-1])
    child = proc.pid
    assert child is not None and not pid_gone(child) and not pid_gone(grandchild)
    await proc.close()
    assert pid_gone(child)
    assert pid_gone(grandchild)
    assert proc.exited.is_set()
    assert child not in live_child_pids()


async def test_a_server_ignoring_sigterm_is_killed_within_the_bound() -> None:
    proc = StdioProcess(
        id="stubborn",
        command=PY,
        args=[str(SERVERS / "stubborn_server.py")],
        wait_for_log="stubborn server ready",
    )
    await proc.spawn()
    await proc.wait_ready(10)
    await asyncio.wait_for(proc.close(), 30)  # a hang guard: the graces add up to seconds
    assert "ignored SIGTERM" in proc.log_tail  # stdin closed, then SIGTERM, then SIGKILL
    assert proc.returncode == -9
    assert proc.exit_status_text() == "signal SIGKILL"
    assert proc.pid is not None and pid_gone(proc.pid)


async def test_close_is_idempotent_and_safe_to_call_concurrently() -> None:
    proc = StdioProcess(id="twice", command=PY, args=script(READY_ON_STDERR), wait_for_log="ready")
    await proc.spawn()
    await proc.wait_ready(10)
    await asyncio.gather(proc.close(), proc.close())
    await proc.close()
    assert proc.pid is not None and pid_gone(proc.pid)
    await StdioProcess(id="never-spawned", command=PY).close()


async def test_a_cancelled_close_kills_the_group_at_once() -> None:
    proc = StdioProcess(
        id="cancelled",
        command=PY,
        args=[str(SERVERS / "stubborn_server.py")],
        wait_for_log="stubborn server ready",
    )
    await proc.spawn()
    await proc.wait_ready(10)
    closing = asyncio.create_task(proc.close())
    await asyncio.sleep(0.05)  # within the stdin grace, before any SIGTERM
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    await proc.close()  # the teardown goes on; waiting for it again is quick
    assert proc.returncode == -9
    assert "ignored SIGTERM" not in proc.log_tail  # SIGKILL at once, not the graceful steps


async def test_kill_all_children_leaves_no_child_running() -> None:
    proc = StdioProcess(id="orphan", command=PY, args=script(READY_ON_STDERR), wait_for_log="ready")
    await proc.spawn()
    await proc.wait_ready(10)
    kill_all_children()
    await asyncio.wait_for(proc.exited.wait(), 5)
    assert proc.exit_status_text() == "signal SIGKILL"
    await proc.close()
    assert proc.pid not in live_child_pids()


async def test_send_line_after_the_child_exited_raises_oserror() -> None:
    proc = StdioProcess(id="gone", command=PY, args=script("pass"))
    await proc.spawn()
    await asyncio.wait_for(proc.exited.wait(), 5)
    with pytest.raises(OSError):
        for _ in range(50):  # the first writes may still land in the pipe buffer
            await proc.send_line('{"jsonrpc": "2.0", "method": "ping", "id": 1}')
            await asyncio.sleep(0.01)
    assert await proc.receive_message() is None
    await proc.close()


async def test_discard_pending_drops_unread_messages_but_keeps_the_end() -> None:
    code = (
        "import sys\n"
        'for n in range(2): print(\'{"jsonrpc": "2.0", "method": "m%d"}\' % n, flush=True)\n'
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = StdioProcess(id="stale", command=PY, args=script(code), wait_for_log="^ready$")
    await proc.spawn()
    try:
        await proc.wait_ready(10)
        assert proc.discard_pending() == 2
        assert proc.discard_pending() == 0
    finally:
        await proc.close()
    assert proc.discard_pending() == 0
    assert await proc.receive_message() is None


async def test_a_process_spawned_ahead_hands_its_held_log_over(tmp_path: Path) -> None:
    # Spawned before its source knew its log file and trace: the lines written meanwhile reach
    # both once the source takes it over, and the later ones too.
    code = (
        "import sys; print('early line', file=sys.stderr, flush=True); sys.stdin.readline();"
        " print('server is ready', file=sys.stderr, flush=True); sys.stdin.read()"
    )
    process = StdioProcess(id="s", command=PY, args=script(code), wait_for_log="ready")
    process.hold_log()
    seen: list[str] = []
    try:
        await process.spawn()
        for _ in range(500):
            if process.log_tail:
                break
            await asyncio.sleep(0.01)
        log = tmp_path / "servers" / "s.log"
        process.hand_over(log_path=log, on_log=lambda _id, line: seen.append(line))
        assert seen == ["early line"]
        await process.send_line("{}")
        await process.wait_ready(10)
        assert seen == ["early line", "server is ready"]
        assert log.read_text().splitlines() == seen
    finally:
        await process.close(graceful=False)
