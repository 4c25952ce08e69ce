"""The fastmcp transport over a supervised process: junk-proof, keep-alive, fails fast."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCRequest
from pydantic import ValidationError

from devall_cli.procs.process_groups import live_child_pids
from devall_cli.tools.stdio_process import StdioProcess
from devall_cli.tools.stdio_transport import (
    SupervisedStdioTransport,
    parse_message,
    serialize_message,
)

SERVERS = Path(__file__).resolve().parents[2] / "servers"


@pytest.fixture(autouse=True)
def _no_child_left() -> Iterator[None]:
    """Every child a test starts is torn down by the end of the test."""
    before = set(live_child_pids())
    yield
    leaked = set(live_child_pids()) - before
    for pid in leaked:
        os.killpg(pid, 9)
    assert not leaked, f"children left running: {leaked}"


async def _started(name: str, ready: str) -> StdioProcess:
    proc = StdioProcess(
        id=name.removesuffix(".py"),
        command=sys.executable,
        args=[str(SERVERS / name)],
        wait_for_log=ready,
    )
    await proc.spawn()
    await proc.wait_ready(15)
    return proc


@pytest.fixture
async def junk_server() -> AsyncIterator[StdioProcess]:
    proc = await _started("junk_stdio_server.py", "junk server ready")
    yield proc
    await proc.close()


def test_parse_message_validates_like_the_sdk() -> None:
    item = parse_message({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
    assert isinstance(item, SessionMessage)
    assert isinstance(item.message, JSONRPCRequest) and item.message.id == 7
    assert isinstance(parse_message({"jsonrpc": "2.0", "note": "nothing"}), ValidationError)


def test_serialize_message_writes_one_line_of_json() -> None:
    message = SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=1, method="ping", params=None))
    line = serialize_message(message)
    assert "\n" not in line
    assert parse_message(json.loads(line)) == message


async def test_calls_through_a_junk_server_succeed_and_junk_becomes_log(
    junk_server: StdioProcess,
) -> None:
    async with Client(SupervisedStdioTransport(junk_server), init_timeout=5, timeout=5) as client:
        assert [tool.name for tool in await client.list_tools()] == ["echo"]
        for text in ("one", "two"):
            result = await client.call_tool("echo", {"text": text})
            assert result.content[0].text == text  # type: ignore[union-attr]
    tail = junk_server.log_tail
    assert "junk: server starting up" in tail
    assert "junk: echoing 3 characters" in tail
    assert "{not json at all}" in tail
    assert tail.count("GLUED-JUNK") == 2  # split off the two response lines
    assert any(line.startswith("[devall: invalid JSON-RPC message") for line in tail)


async def test_the_process_outlives_the_session_and_serves_the_next_one(
    junk_server: StdioProcess,
) -> None:
    transport = SupervisedStdioTransport(junk_server)
    for text in ("first", "second"):
        async with Client(transport, init_timeout=5, timeout=5) as client:
            result = await client.call_tool("echo", {"text": text})
            assert result.content[0].text == text  # type: ignore[union-attr]
        assert junk_server.returncode is None


async def test_a_call_in_flight_fails_fast_when_the_process_dies() -> None:
    proc = await _started("die_mid_call_server.py", "die server ready")
    try:
        async with Client(SupervisedStdioTransport(proc), init_timeout=10, timeout=60) as client:
            answered = await client.call_tool("pid", {})
            assert int(answered.content[0].text) == proc.pid  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="Connection closed"):
                # At the death, not at the minute's request timeout (30 s guards a hang).
                await asyncio.wait_for(client.call_tool("die", {}), 30)
            await asyncio.wait_for(proc.exited.wait(), 30)  # the exit status follows stdout EOF
            assert proc.returncode == 7
            with pytest.raises(MCPError):
                await client.call_tool("echo", {"text": "still there?"})
    finally:
        await proc.close()
    assert "die server: going down with status 7" in proc.log_tail
