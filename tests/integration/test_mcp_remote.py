"""RemoteSource against the fixture server on loopback: one session, headers, results, errors.

The tests on a `source` or an `own_source` run with both clients (fastmcp's and the light one).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import pytest

from devall_cli.errors import ServerDiedError
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_remote import RemoteSource, uses_sse
from tests.helpers import text_of
from tests.servers.serve import (
    FIXTURE_SERVER,
    ServerProcess,
    group_alive,
    serve_http,
)

TOKEN = "t0ken-for-tests"
HANG_GUARD = 30  # seconds; only a hung test reaches it


pytestmark = pytest.mark.usefixtures("no_process_left")


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    """A server of the test's own, for tests that count what the server saw."""
    with ServerProcess(FIXTURE_SERVER) as process:
        yield process
    assert process.last_pid is not None and not group_alive(process.last_pid)


@pytest.fixture(scope="module")
def shared() -> Iterator[ServerProcess]:
    """One server for the tests of this module that only call tools (it keeps no state of note)."""
    with ServerProcess(FIXTURE_SERVER) as process:
        yield process
    assert process.last_pid is not None and not group_alive(process.last_pid)


def remote(url: str, *, timeout: float = 5.0, **kwargs: object) -> RemoteSource:
    config = McpRemoteConfig(server=url, headers={"x-test-token": TOKEN}, timeout=timeout)
    return RemoteSource(id="web", config=config, **kwargs)  # type: ignore[arg-type]


# fastmcp's client, and devall's own (the light one of `tools list`, `tools call` and `probe`).
CLIENTS = ["fastmcp", "direct"]


@pytest.fixture(params=CLIENTS)
async def source(
    shared: ServerProcess, request: pytest.FixtureRequest
) -> AsyncIterator[RemoteSource]:
    src = remote(shared.url, client=request.param)
    yield src
    await src.close()
    assert src.client == request.param  # the light client was never handed over


@pytest.fixture(params=CLIENTS)
async def own_source(
    server: ServerProcess, request: pytest.FixtureRequest
) -> AsyncIterator[RemoteSource]:
    """A source on a server of the test's own: its handshake count starts at zero."""
    src = remote(server.url, client=request.param)
    yield src
    await src.close()
    assert src.client == request.param


async def test_one_session_serves_a_list_and_five_calls(own_source: RemoteSource) -> None:
    source = own_source
    info = await source.start()
    assert info.server_name == "devall fixture server"
    assert info.protocol_version
    tools = await source.list_tools()
    assert {"echo", "add", "counter", "slow"} <= {t.name for t in tools}
    seen = [json.loads(text_of(await source.call_tool("counter", {}))) for _ in range(5)]
    # every request carried the header, and the server saw exactly one handshake
    assert [s["token"] for s in seen] == [TOKEN] * 5
    assert seen[-1]["handshakes"] == 1


async def test_list_connects_on_demand_without_start(source: RemoteSource) -> None:
    tools = await source.list_tools()
    add = next(t for t in tools if t.name == "add")
    assert add.description == "Add two integers."
    assert set(add.input_schema["required"]) == {"a", "b"}
    result = await source.call_tool("add", {"a": 2, "b": 40})
    assert not result.is_error and text_of(result) == "42"
    assert result.duration_ms > 0


async def test_tool_meta_carries_its_source(source: RemoteSource) -> None:
    tools = {t.name: t for t in await source.list_tools()}
    assert tools["other_source_tool"].meta["source"] == "other_source"
    assert "source" not in tools["echo"].meta


async def test_call_timeout_is_an_error_result_and_the_session_survives(
    own_source: RemoteSource,
) -> None:
    source = own_source
    # The server would answer after a minute; the call ends at its 0.5 s timeout.
    result = await asyncio.wait_for(
        source.call_tool("slow", {"seconds": 60}, timeout=0.5), HANG_GUARD
    )
    assert result.is_error and result.error_class == "timeout"
    assert text_of(result) == "tool 'slow' timed out after 0.5s"
    after = await source.call_tool("echo", {"text": "still here"})
    assert not after.is_error and text_of(after) == "still here"
    counted = json.loads(text_of(await source.call_tool("counter", {})))
    assert counted["handshakes"] == 1


async def test_request_timeout_from_config_applies_to_calls(shared: ServerProcess) -> None:
    src = remote(shared.url, timeout=0.5)
    try:
        result = await src.call_tool("slow", {"seconds": 5})
        assert result.error_class == "timeout" and "after 0.5s" in text_of(result)
    finally:
        await src.close()


async def test_failing_tool_is_an_error_result(source: RemoteSource) -> None:
    result = await source.call_tool("fail", {"message": "disk on fire"})
    assert result.is_error and result.error_class == "tool_error"
    assert "disk on fire" in text_of(result)
    assert all(b.source == "mcp_tool" and b.tool_name == "fail" for b in result.blocks)


async def test_unknown_tool_is_an_error_result(source: RemoteSource) -> None:
    result = await source.call_tool("no_such_tool", {})
    assert result.is_error and result.error_class == "unknown_tool"
    assert "no_such_tool" in text_of(result)
    assert not (await source.call_tool("echo", {"text": "ok"})).is_error


async def test_bad_arguments_are_an_error_result(source: RemoteSource) -> None:
    result = await source.call_tool("add", {"a": "not a number", "b": 1})
    assert result.is_error and result.error_class == "tool_error"


async def test_concurrent_calls_share_the_session(own_source: RemoteSource) -> None:
    source = own_source
    await source.start()
    tags = [f"t{i}" for i in range(6)]
    results = await asyncio.gather(
        *(source.call_tool("track", {"seconds": 0.6, "tag": tag}) for tag in tags)
    )
    assert [text_of(r).split()[0] for r in results] == tags
    # the server had all six calls in flight at once
    assert json.loads(text_of(await source.call_tool("peak", {}))) == 6
    assert json.loads(text_of(await source.call_tool("counter", {})))["handshakes"] == 1


async def test_sse_transport() -> None:
    with serve_http(FIXTURE_SERVER, "sse") as url:
        assert uses_sse(url)
        src = remote(url)
        try:
            info = await src.start()
            assert info.protocol_version and info.protocol_version < "2026"  # SSE is pre-2026
            assert "echo" in {t.name for t in await src.list_tools()}
            assert text_of(await src.call_tool("echo", {"text": "over sse"})) == "over sse"
            timed_out = await src.call_tool("slow", {"seconds": 5}, timeout=0.5)
            assert timed_out.error_class == "timeout"
            for _ in range(3):
                counted = json.loads(text_of(await src.call_tool("counter", {})))
            assert counted == {"handshakes": 1, "token": TOKEN}
        finally:
            await src.close()


async def test_close_is_idempotent_and_final(source: RemoteSource) -> None:
    await source.start()
    await source.close()
    await source.close()
    with pytest.raises(ServerDiedError):
        await source.call_tool("echo", {"text": "too late"})


def test_sse_is_chosen_by_url_path() -> None:
    assert uses_sse("http://h:1/sse")
    assert uses_sse("http://h:1/api/sse/?x=1")
    assert not uses_sse("http://h:1/mcp")
    assert not uses_sse("http://h:1/mcp?transport=sse")
