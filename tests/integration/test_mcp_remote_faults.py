"""RemoteSource when things go wrong: nobody listening, a hung server, HTTP errors, restarts."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from devall_cli.errors import ExitCode, ServerDiedError, ServerUnreachableError
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_remote import RemoteSource
from tests.helpers import text_of
from tests.servers.serve import (
    FIXTURE_SERVER,
    HANG_SERVER,
    SERVERS_DIR,
    ServerProcess,
    free_port,
)

SECRET = "Bearer do-not-print-me"


pytestmark = pytest.mark.usefixtures("no_process_left")


class Logs:
    """Collects the log lines a source reports."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, source_id: str, line: str) -> None:
        self.lines.append(line)

    def count(self, fragment: str) -> int:
        return sum(fragment in line for line in self.lines)


def remote(
    url: str, logs: Logs | None = None, *, timeout: float = 5.0, client: str = "fastmcp"
) -> RemoteSource:
    config = McpRemoteConfig(server=url, headers={"Authorization": SECRET}, timeout=timeout)
    return RemoteSource(id="web", config=config, on_log=logs, client=client)  # type: ignore[arg-type]


# fastmcp's client, and devall's own (the light one of `tools list`, `tools call` and `probe`,
# which the SSE transport never gets): the same failures, worded alike.
CLIENTS = ["fastmcp", "direct"]
TRANSPORTS_AND_CLIENTS = [("http", "fastmcp"), ("http", "direct"), ("sse", "fastmcp")]


@pytest.mark.parametrize("client", CLIENTS)
async def test_unreachable_url_fails_after_three_list_attempts(client: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    logs = Logs()
    src = remote(url, logs, client=client)
    started = time.monotonic()
    with pytest.raises(ServerUnreachableError) as info:
        await src.list_tools()
    elapsed = time.monotonic() - started
    await src.close()
    assert info.value.status == "unreachable"
    assert info.value.exit_code == ExitCode.CONNECTION
    assert elapsed >= 1.5  # waits of 0.5 s and 1 s between three quick refusals
    assert logs.count("attempt 1/3 failed") == 1 and logs.count("attempt 2/3 failed") == 1
    assert logs.count("attempt 3/3") == 0
    assert url in info.value.message and "connection refused" in info.value.message
    assert "do-not-print-me" not in info.value.message + "".join(logs.lines)


async def test_start_against_unreachable_url_is_retried_too() -> None:
    logs = Logs()
    src = remote(f"http://127.0.0.1:{free_port()}/mcp", logs)
    with pytest.raises(ServerUnreachableError):
        await src.start()
    assert logs.count("failed") == 2


@pytest.mark.parametrize(("transport", "client"), TRANSPORTS_AND_CLIENTS)
async def test_server_that_never_answers_fails_within_the_timeout(
    transport: str, client: str
) -> None:
    timeout = 1.0
    with ServerProcess(HANG_SERVER, transport) as server:
        src = remote(server.url, timeout=timeout, client=client)
        with pytest.raises(ServerUnreachableError) as info:
            # The server never answers: only devall's timeout ends the start (30 s guards a hang).
            await asyncio.wait_for(src.start(), 30)
        await src.close()
    assert info.value.status in ("handshake_timeout", "unreachable")
    assert server.url in info.value.message


@pytest.mark.parametrize(
    ("status", "expected"), [(401, "http_401"), (403, "http_403"), (502, "http_error")]
)
@pytest.mark.parametrize(("transport", "client"), TRANSPORTS_AND_CLIENTS)
async def test_http_errors_are_classified(
    status: int, expected: str, transport: str, client: str
) -> None:
    script = SERVERS_DIR / "status_server.py"
    with ServerProcess(script, transport, args=["--status", str(status)]) as server:
        logs = Logs()
        src = remote(server.url, logs, client=client)
        with pytest.raises(ServerUnreachableError) as info:
            await src.list_tools()
        await src.close()
    assert info.value.status == expected
    # The status, and what the body said ({"error": "status 401"}).
    assert f"HTTP {status}: status {status}" in info.value.message
    assert logs.count("retrying") == 0  # an HTTP refusal is an answer: no retries
    assert "do-not-print-me" not in info.value.message


@pytest.mark.parametrize(
    ("transport", "args", "reconnects", "client"),
    [
        ("http", ["--legacy-only"], 1, "fastmcp"),  # stateful session: the new server answers 404
        ("sse", [], 1, "fastmcp"),  # the event stream breaks
        ("http", [], 0, "fastmcp"),  # the modern protocol keeps no session: nothing to replace
        ("http", ["--legacy-only"], 1, "direct"),  # the light client's `initialize` session too
    ],
)
async def test_server_restart_between_calls_is_survived(
    transport: str, args: list[str], reconnects: int, client: str
) -> None:
    logs = Logs()
    with ServerProcess(FIXTURE_SERVER, transport, args=args) as server:
        src = remote(server.url, logs, client=client)
        try:
            await src.list_tools()
            assert json.loads(text_of(await src.call_tool("counter", {})))["handshakes"] == 1
            server.restart()
            after = await src.call_tool("counter", {})
            assert not after.is_error
            assert json.loads(text_of(after))["handshakes"] == reconnects
            again = await src.call_tool("echo", {"text": "same session"})
            assert text_of(again) == "same session"
        finally:
            await src.close()
    assert logs.count("[devall] reconnected") == reconnects


@pytest.mark.parametrize(("transport", "client"), TRANSPORTS_AND_CLIENTS)
async def test_server_gone_for_good_raises_server_died(transport: str, client: str) -> None:
    logs = Logs()
    with ServerProcess(FIXTURE_SERVER, transport) as server:
        src = remote(server.url, logs, client=client)
        await src.start()
        server.kill()
        with pytest.raises(ServerDiedError) as info:
            await asyncio.wait_for(src.call_tool("echo", {"text": "anyone?"}), 30)  # hang guard
        await src.close()
    assert info.value.exit_code == ExitCode.CONNECTION
    assert "could not reconnect" in info.value.message and server.url in info.value.message
    assert logs.count("reconnect failed") == 1
