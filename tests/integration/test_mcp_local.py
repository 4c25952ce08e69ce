"""LocalSource against real stdio servers: readiness, environment, junk, keep-alive, concurrency."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.mcp_local import LocalSource
from tests.helpers import direct_local_source, text_of
from tests.servers.serve import pid_gone

SERVERS = Path(__file__).resolve().parents[1] / "servers"


class Logs:
    """Collects the log lines a source reports."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, source_id: str, line: str) -> None:
        self.lines.append(line)


def server(script: str, *args: str, **settings: Any) -> McpLocalConfig:
    """A config running one of the test servers with the tests' Python."""
    return McpLocalConfig(command=sys.executable, args=(str(SERVERS / script), *args), **settings)


Factory = Callable[..., LocalSource]


@pytest.fixture(params=[LocalSource, direct_local_source], ids=["fastmcp", "direct"])
async def make_source(request: pytest.FixtureRequest) -> AsyncIterator[Factory]:
    """Builds LocalSources and closes them (and checks their processes are gone) at the end.

    Every test runs with both clients: fastmcp's, and devall's own (tools list/call, probe).
    """
    kind: type[LocalSource] = request.param
    made: list[LocalSource] = []
    pids: list[int] = []

    def make(config: McpLocalConfig, **kwargs: Any) -> LocalSource:
        source = kind(id=kwargs.pop("id", "local"), config=config, **kwargs)
        made.append(source)
        return source

    yield make
    for source in made:
        if source.pid is not None:
            pids.append(source.pid)
        await source.close()
    assert [pid for pid in pids if not pid_gone(pid)] == []


# The stdlib server: what is tested here is devall's supervision, not the server's SDK.
FIXTURE = "raw_server.py"
FIXTURE_READY = "raw server ready"
HANG_GUARD = 30  # seconds; only a hung test reaches it


def fixture(*args: str, **settings: Any) -> McpLocalConfig:
    """The raw server with its fixture tools listed."""
    return server(FIXTURE, "--fixture", *args, **settings)


async def test_start_list_and_call_with_log_file(make_source: Factory, tmp_path: Path) -> None:
    logs = Logs()
    log_path = tmp_path / "run" / "servers" / "local.log"
    source = make_source(fixture(wait_for_log=FIXTURE_READY), on_log=logs, log_path=log_path)
    info = await source.start()
    assert info.server_name == "raw server"
    assert info.connect_ms > 0
    names = {tool.name for tool in await source.list_tools()}
    assert {"echo", "add", "slow", "env"} <= names
    assert text_of(await source.call_tool("echo", {"text": "hello"})) == "hello"
    assert text_of(await source.call_tool("add", {"a": 2, "b": 40})) == "42"
    assert FIXTURE_READY in logs.lines
    assert FIXTURE_READY in log_path.read_text().splitlines()
    assert source.kind == "mcp_local" and source.target.endswith("raw_server.py --fixture")


async def test_ready_on_a_stderr_line_after_a_slow_start(make_source: Factory) -> None:
    source = make_source(server("slow_start_server.py", "0.5", wait_for_log="slow server ready$"))
    started = time.monotonic()
    await source.start()
    assert time.monotonic() - started >= 0.5
    assert text_of(await source.call_tool("echo", {"text": "late"})) == "late"
    assert source.log_tail[:2] == ["warming up", "slow server ready"]


async def test_ready_on_a_junk_stdout_line(make_source: Factory) -> None:
    source = make_source(server("junk_stdio_server.py", wait_for_log=r"loading plugins"))
    info = await source.start()
    assert info.server_name == "junk stdio server"
    assert "junk: loading plugins... done" in source.log_tail


async def test_calls_through_a_junk_server_succeed(make_source: Factory) -> None:
    logs = Logs()
    source = make_source(server("junk_stdio_server.py"), on_log=logs)
    assert [tool.name for tool in await source.list_tools()] == ["echo"]
    for text in ("alpha", "beta", "gamma"):
        result = await source.call_tool("echo", {"text": text})
        assert not result.is_error and text_of(result) == text
    assert "junk: server starting up" in logs.lines
    assert "junk: echoing 5 characters" in logs.lines
    assert "{not json at all}" in logs.lines
    assert logs.lines.count("GLUED-JUNK") == 3  # glued junk split off each response line


async def test_inherit_env_false_gives_the_server_only_env(
    make_source: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEVALL_PARENT_MARKER", "from the parent")
    source = make_source(
        fixture(env={"ONLY_VAR": "given"}, inherit_env=False, wait_for_log=FIXTURE_READY)
    )
    assert text_of(await source.call_tool("env", {"name": "ONLY_VAR"})) == "given"
    result = await source.call_tool("env", {"name": "DEVALL_PARENT_MARKER"})
    assert "from the parent" not in text_of(result)
    assert text_of(await source.call_tool("env", {"name": "PATH"})) in ("", "null")


async def test_inherit_env_true_merges_env_over_the_parent(
    make_source: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEVALL_PARENT_MARKER", "from the parent")
    source = make_source(fixture(env={"ONLY_VAR": "given"}))
    marker = await source.call_tool("env", {"name": "DEVALL_PARENT_MARKER"})
    assert text_of(marker) == "from the parent"
    assert text_of(await source.call_tool("env", {"name": "ONLY_VAR"})) == "given"


async def test_cwd_is_where_the_server_runs(make_source: Factory) -> None:
    # The loader makes `cwd` absolute; a script path relative to it must then resolve.
    config = McpLocalConfig(
        command=sys.executable,
        args=(FIXTURE, "--fixture"),
        cwd=str(SERVERS),
        wait_for_log=FIXTURE_READY,
    )
    source = make_source(config)
    assert text_of(await source.call_tool("echo", {"text": "here"})) == "here"


async def test_many_calls_reuse_one_process_and_one_session(make_source: Factory) -> None:
    source = make_source(fixture(wait_for_log=FIXTURE_READY))
    await source.start()
    pid = source.pid
    for n in range(25):
        assert text_of(await source.call_tool("add", {"a": n, "b": 1})) == str(n + 1)
    await source.list_tools()
    assert source.pid == pid and pid is not None and not pid_gone(pid)
    counter = await source.call_tool("counter", {})
    assert '"handshakes":1' in text_of(counter).replace(" ", "")


async def _peak_of_four_concurrent_sleeps(source: LocalSource) -> int:
    """Four calls at once; the most the server saw in flight together."""
    await source.start()
    results = await asyncio.gather(
        *(source.call_tool("sleep", {"seconds": 0.4, "tag": f"t{n}"}) for n in range(4))
    )
    tags = sorted(text_of(r).split()[0] for r in results)
    assert tags == ["t0", "t1", "t2", "t3"]
    return int(text_of(await source.call_tool("peak", {})))


async def test_max_concurrency_two_runs_four_calls_in_two_rounds(
    make_source: Factory, tmp_path: Path
) -> None:
    record = tmp_path / "calls.jsonl"  # the server's start and end stamp of each call
    source = make_source(fixture("--record", str(record), max_concurrency=2))
    assert await _peak_of_four_concurrent_sleeps(source) == 2
    calls = sorted(
        (json.loads(line) for line in record.read_text().splitlines()),
        key=lambda call: call["start"],
    )
    assert [call["in_flight"] for call in calls[:2]] == [1, 2]
    # the second round began only as a call of the first ended
    assert calls[2]["start"] >= min(call["end"] for call in calls[:2])


async def test_max_concurrency_four_runs_four_calls_at_once(make_source: Factory) -> None:
    source = make_source(fixture(max_concurrency=4, wait_for_log=FIXTURE_READY))
    assert await _peak_of_four_concurrent_sleeps(source) == 4


async def test_call_timeout_gives_a_timeout_result_and_the_session_lives_on(
    make_source: Factory,
) -> None:
    source = make_source(fixture(call_timeout=0.5, wait_for_log=FIXTURE_READY))
    await source.start()
    # The server would answer after a minute; the call ends at its own 0.5 s timeout.
    result = await asyncio.wait_for(source.call_tool("slow", {"seconds": 60}), HANG_GUARD)
    assert result.is_error and result.error_class == "timeout"
    assert "0.5" in text_of(result)
    pid = source.pid
    assert text_of(await source.call_tool("echo", {"text": "after"})) == "after"
    assert source.pid == pid and source.restarts == 0


async def test_a_tool_error_is_a_result(make_source: Factory) -> None:
    source = make_source(fixture())
    result = await source.call_tool("fail", {"message": "broken on purpose"})
    assert result.is_error and result.error_class == "tool_error"
    assert "broken on purpose" in text_of(result)


async def test_close_takes_down_the_server_and_its_grandchild(make_source: Factory) -> None:
    source = make_source(server("spawner_server.py", wait_for_log="spawner server ready"))
    await source.start()
    assert text_of(await source.call_tool("echo", {"text": "x"})) == "x"
    line = next(x for x in source.log_tail if x.startswith("grandchild pid "))
    grandchild, child = int(line.split()[-1]), source.pid
    assert child is not None and not pid_gone(child) and not pid_gone(grandchild)
    await source.close()
    await source.close()  # idempotent
    assert pid_gone(child)
    assert pid_gone(grandchild)
