"""Protocol edges both local-server clients meet alike (tests/servers/raw_server.py options).

String ids and progress tokens echoed back, a server cancelling its own elicitation, a server
exiting while it lists: each runs with fastmcp's client and devall's own, and expects the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sys
from collections.abc import Callable
from typing import Any

import pytest

from devall_cli.errors import DevallError, ServerDiedError
from devall_cli.tools.base import CallContext, ElicitationAnswer
from devall_cli.tools.kinds.client_settings import DEFAULT_CLIENT
from devall_cli.tools.mcp_direct import DirectSession
from devall_cli.tools.mcp_requests import ServerRequests
from devall_cli.tools.stdio_process import StdioProcess
from tests.helpers import text_of
from tests.integration.conftest import RAW, Factory


class Events:
    """Records `tool_progress`; every other report is ignored."""

    def __init__(self) -> None:
        self.progress: list[tuple[float, float | None, str | None]] = []

    def tool_progress(self, server_id: str, call: Any, progress: float, total: Any, message: Any):
        self.progress.append((progress, total, message))

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


async def test_answers_with_string_ids_are_matched_to_their_requests(raw: Factory) -> None:
    source = raw("--string-ids")
    info = await source.start()
    assert info.server_name == "raw server"
    assert [tool.name for tool in await source.list_tools()] == ["tool_0", "shaped"]
    result = await source.call_tool("tool_0", {})
    assert not result.is_error and text_of(result) == "called tool_0"


async def test_progress_with_a_string_token_is_delivered(raw: Factory) -> None:
    events = Events()
    source = raw("--string-progress-tokens", events=events)
    result = await source.call_tool("tool_0", {}, context=CallContext("n", "c1", "tool_0"))
    assert text_of(result) == "called tool_0"
    for _ in range(200):  # the notification may be handled just after the result
        if events.progress:
            break
        await asyncio.sleep(0.01)
    assert events.progress == [(1.0, 2.0, "half")]


class Waiting:
    """An operator who never answers; records that devall stopped asking."""

    channel = "terminal"

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.stopped = asyncio.Event()

    async def elicit(self, request: Any) -> ElicitationAnswer:
        self.asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.stopped.set()
            raise
        raise AssertionError("unreachable")


async def test_a_server_cancelling_its_own_elicitation_stops_devall_asking(raw: Factory) -> None:
    operator = Waiting()
    source = raw("--asks", "elicitation/create", "--cancel-asked")
    context = CallContext("n", "c1", "tool_0", elicitor=operator)
    result = await source.call_tool("tool_0", {}, context=context)
    assert text_of(result) == 'called tool_0; asked: "cancelled"'
    # The session still serves calls after the cancelled request (and has read the cancel).
    again = await source.call_tool("tool_0", {}, context=CallContext("n", "c2", "tool_0"))
    assert text_of(again) == 'called tool_0; asked: "cancelled"'
    # The cancel may arrive before the operator is asked (then nobody is asked) or after
    # (then the question is withdrawn); either way nobody is left waiting on the operator.
    if operator.asked.is_set():
        await asyncio.wait_for(operator.stopped.wait(), 30)
    assert operator.asked.is_set() == operator.stopped.is_set()


async def test_a_server_exiting_while_it_lists_is_a_lost_server(raw: Factory) -> None:
    source = raw("--exit-on-list")
    await source.start()
    with pytest.raises(ServerDiedError) as info:
        await source.list_tools()
    assert info.value.status == "exited"
    assert "'raw'" in info.value.message


async def test_a_handshake_given_up_is_never_cancelled(raw: Factory) -> None:
    source = raw("--silent-handshake")
    source.config = dataclasses.replace(source.config, startup_timeout=4.0)
    with pytest.raises(DevallError) as info:
        await source.start()
    assert getattr(info.value, "status", "") == "handshake_timeout"
    got = [line.partition("raw server got ")[2] for line in source.log_tail if "got " in line]
    if source.client == "direct":  # fastmcp's messages do not show in this log
        assert "initialize" in got, source.log_tail
    # the spec forbids cancelling initialize
    assert not any(line.startswith("notifications/cancelled") for line in got)


async def test_the_direct_client_cancels_a_request_given_up_but_never_initialize() -> None:
    # The session stays open after each timeout, so a cancel the client sent would reach the
    # server, which logs every message it gets (a cancellation with the id it cancels). A
    # cancel of the probe (id 1) or of initialize (id 2) would come before that of tools/list.
    process = StdioProcess(
        id="raw",
        command=sys.executable,
        args=(str(RAW), "--silent-handshake"),
        wait_for_log=re.compile("raw server ready"),
    )
    await process.spawn()
    requests = ServerRequests(server_id="raw", settings=DEFAULT_CLIENT)
    session = DirectSession(
        process, requests, server="raw", note=lambda line: None, output_schemas={}
    )

    def got() -> list[str]:
        return [
            line.partition("raw server got ")[2]
            for line in process.log_tail
            if "raw server got " in line
        ]

    try:
        await process.wait_ready(20, startup_timeout=20)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await session.open(sampling=False, probe_timeout=0.1)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await session.rpc("tools/list")
        async with asyncio.timeout(20):  # a hang guard: the cancel is sent by a task of its own
            while "notifications/cancelled 3" not in got():
                await asyncio.sleep(0.05)
        expected = ["server/discover", "initialize", "tools/list", "notifications/cancelled 3"]
        assert got() == expected, process.log_tail
    finally:
        await session.close()
        await process.close(graceful=False)
