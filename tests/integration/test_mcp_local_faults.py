"""LocalSource when servers misbehave: bad commands, never ready, early exit, death mid-call."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from devall_cli.errors import ExitCode, ServerDiedError, ServerStartError
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.mcp_local import LocalSource
from tests.helpers import direct_local_source, text_of
from tests.servers.serve import pid_gone

SERVERS = Path(__file__).resolve().parents[1] / "servers"
# Seconds. Only a hung test reaches it; a timeout of a minute in a config is one that must not
# be waited for (the failure it stands for comes at once).
HANG_GUARD = 30


def server(script: str, *args: str, **settings: Any) -> McpLocalConfig:
    """A config running one of the test servers with the tests' Python."""
    return McpLocalConfig(command=sys.executable, args=(str(SERVERS / script), *args), **settings)


Factory = Callable[..., LocalSource]


@pytest.fixture(params=[LocalSource, direct_local_source], ids=["fastmcp", "direct"])
async def make_source(request: pytest.FixtureRequest) -> AsyncIterator[Factory]:
    """Builds LocalSources and closes them at the end; every pid they used must be gone.

    Every test runs with both clients: fastmcp's, and devall's own (tools list/call, probe).
    """
    kind: type[LocalSource] = request.param
    made: list[LocalSource] = []

    def make(config: McpLocalConfig, **kwargs: Any) -> LocalSource:
        source = kind(id=kwargs.pop("id", "local"), config=config, **kwargs)
        made.append(source)
        return source

    yield make
    for source in made:
        await source.close()
        assert source.pid is None or pid_gone(source.pid)


async def _start_error(source: LocalSource) -> tuple[ServerStartError, float]:
    started = time.monotonic()
    with pytest.raises(ServerStartError) as info:
        await asyncio.wait_for(source.start(), HANG_GUARD)
    return info.value, time.monotonic() - started


# --- start failures --------------------------------------------------------------------------


async def test_a_missing_command_fails_with_spawn_failed(make_source: Factory) -> None:
    config = McpLocalConfig(command="devall-no-such-server", args=("--stdio",), startup_timeout=60)
    error, _ = await _start_error(make_source(config))  # at once, not after the minute
    assert error.status == "spawn_failed"
    assert error.exit_code == ExitCode.CONNECTION
    assert "devall-no-such-server" in error.message


async def test_never_ready_fails_after_startup_timeout_with_log_tail(make_source: Factory) -> None:
    source = make_source(
        server("never_ready_server.py", wait_for_log="ready to serve", startup_timeout=1.0)
    )
    error, elapsed = await _start_error(source)
    assert elapsed >= 1.0
    assert error.status == "startup_timeout"
    assert error.exit_code == ExitCode.CONNECTION
    assert any(line.startswith("still warming up") for line in error.log_tail)
    assert any("still warming up" in line for line in error.details)
    assert "ready to serve" in error.message and "within 1 s" in error.message


async def test_a_slow_start_beyond_startup_timeout_times_out(make_source: Factory) -> None:
    source = make_source(
        server("slow_start_server.py", "60", wait_for_log="slow server ready", startup_timeout=1.0)
    )
    error, elapsed = await _start_error(source)  # the one-second timeout, not the minute's start
    assert error.status == "startup_timeout"
    assert elapsed >= 1.0
    assert "warming up" in error.log_tail


async def test_exit_before_ready_fails_at_once_with_status_and_stderr(
    make_source: Factory,
) -> None:
    source = make_source(
        server("exit_at_once_server.py", wait_for_log="never printed", startup_timeout=60)
    )
    error, _ = await _start_error(source)  # at once, not at the startup timeout
    assert error.status == "exited"
    assert "exited with status 3" in error.message
    assert "fatal: cannot open database 'tools.db'" in error.log_tail
    assert any("cannot open database" in line for line in error.details)


async def test_exit_during_the_handshake_is_reported_as_exited(make_source: Factory) -> None:
    source = make_source(server("exit_at_once_server.py", startup_timeout=60))
    error, _ = await _start_error(source)  # at once, not at the startup timeout
    assert error.status == "exited"
    assert "exited with status 3" in error.message
    assert "fatal: cannot open database 'tools.db'" in error.log_tail


async def test_a_server_that_never_answers_fails_with_handshake_timeout(
    make_source: Factory,
) -> None:
    source = make_source(server("never_ready_server.py", startup_timeout=1.0))
    error, elapsed = await _start_error(source)
    assert error.status == "handshake_timeout"
    assert elapsed >= 1.0
    assert "still warming up" in " ".join(error.log_tail)


async def test_readiness_and_handshake_share_one_startup_timeout(make_source: Factory) -> None:
    # Ready at once on a log line, but the MCP handshake never completes.
    source = make_source(
        server("never_ready_server.py", wait_for_log="starting", startup_timeout=1.0)
    )
    error, elapsed = await _start_error(source)
    assert error.status == "handshake_timeout"
    assert elapsed >= 1.0


async def test_a_failed_start_leaves_no_process_even_if_it_ignores_sigterm(
    make_source: Factory,
) -> None:
    source = make_source(server("stubborn_server.py", startup_timeout=0.5))
    error, _ = await _start_error(source)
    assert error.status == "handshake_timeout"
    assert source.pid is not None and pid_gone(source.pid)
    assert source.process is not None and source.process.exit_status_text() == "signal SIGKILL"


async def test_a_cancelled_start_leaves_no_process(make_source: Factory) -> None:
    source = make_source(server("never_ready_server.py", wait_for_log="nope"))
    task = asyncio.create_task(source.start())
    await asyncio.sleep(0.5)
    assert source.pid is not None and not pid_gone(source.pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pid_gone(source.pid)


# --- death during a run ----------------------------------------------------------------------


DIE_READY = "die server ready"


async def test_death_mid_call_is_an_error_result_and_the_next_call_restarts(
    make_source: Factory, tmp_path: Path
) -> None:
    restarts: list[tuple[str, int]] = []
    lines: list[str] = []
    log_path = tmp_path / "servers" / "dier.log"
    source = make_source(
        server("die_mid_call_server.py", wait_for_log=DIE_READY, call_timeout=60),
        id="dier",
        on_restart=lambda source_id, n: restarts.append((source_id, n)),
        on_log=lambda _source, line: lines.append(line),
        log_path=log_path,
    )
    await source.start()
    first_pid = source.pid
    # At the death, not at the minute's call timeout.
    result = await asyncio.wait_for(source.call_tool("die", {}), HANG_GUARD)
    assert result.is_error and result.error_class == "server_exited"
    text = text_of(result)
    assert text.startswith("server 'dier' exited with status 7 during the call; last log lines:")
    assert "die server: going down with status 7" in text
    assert first_pid is not None and pid_gone(first_pid)

    again = await source.call_tool("echo", {"text": "back"})
    assert text_of(again) == "back"
    assert source.pid not in (None, first_pid)
    assert restarts == [("dier", 1)]
    assert any("restarting it (1/1)" in line for line in lines)
    logged = log_path.read_text().splitlines()
    note = next(n for n, line in enumerate(logged) if "restarting it (1/1)" in line)
    assert logged.count(DIE_READY) == 2 and logged.index(DIE_READY) < note
    assert "die server: going down with status 7" in logged[:note]


async def test_exhausted_restarts_raise_server_died(make_source: Factory) -> None:
    source = make_source(server("die_mid_call_server.py", wait_for_log=DIE_READY, max_restarts=1))
    await source.start()
    assert (await source.call_tool("die", {})).error_class == "server_exited"
    assert text_of(await source.call_tool("echo", {"text": "1"})) == "1"  # restart 1 of 1
    assert (await source.call_tool("die", {})).error_class == "server_exited"
    with pytest.raises(ServerDiedError) as info:
        await source.call_tool("echo", {"text": "2"})
    assert info.value.exit_code == ExitCode.CONNECTION
    assert "exited with status 7" in info.value.message
    assert "max_restarts: 1" in info.value.message
    with pytest.raises(ServerDiedError):
        await source.list_tools()


async def test_no_restart_allowed_fails_the_next_request(make_source: Factory) -> None:
    source = make_source(server("die_mid_call_server.py", wait_for_log=DIE_READY, max_restarts=0))
    await source.start()
    assert (await source.call_tool("die", {})).error_class == "server_exited"
    with pytest.raises(ServerDiedError):
        await source.list_tools()
    assert source.restarts == 0


async def test_concurrent_calls_in_flight_all_get_error_results(make_source: Factory) -> None:
    source = make_source(
        server("raw_server.py", "--fixture", wait_for_log="raw server ready", max_concurrency=3)
    )
    await source.start()
    calls = [asyncio.create_task(source.call_tool("slow", {"seconds": 10})) for _ in range(3)]
    await asyncio.sleep(0.5)
    assert source.process is not None
    source.process.kill()  # the server dies under three calls in flight
    results = await asyncio.wait_for(asyncio.gather(*calls), 5)
    assert [r.error_class for r in results] == ["server_exited"] * 3
    assert "signal SIGKILL" in text_of(results[0])
    assert text_of(await source.call_tool("echo", {"text": "ok"})) == "ok"
    assert source.restarts == 1
