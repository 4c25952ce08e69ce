"""JSON too deep (or with integers too long) for devall, from a local server's stdout.

Each answer must end the call at once with an `invalid_result` naming the limit, or be logged
and dropped when it answers no call; the session then serves the next call, and the server is
neither restarted nor stopped.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from devall_cli.json_limits import MAX_INT_DIGITS, MAX_NESTING
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_local import LocalSource
from devall_cli.tools.mcp_remote import RemoteSource
from tests.helpers import direct_local_source, text_of
from tests.servers.serve import SERVERS_DIR, ServerProcess

TRICKY = SERVERS_DIR / "tricky_server.py"
DEEP_RESULT = SERVERS_DIR / "deep_result_server.py"
CALL_TIMEOUT = 5.0


async def started(
    script: Any, kind: type[LocalSource] = LocalSource
) -> tuple[LocalSource, list[str]]:
    lines: list[str] = []
    config = McpLocalConfig(
        command=sys.executable, args=(str(script),), wait_for_log="ready", call_timeout=CALL_TIMEOUT
    )
    source = kind(id="deep", config=config, on_log=lambda _id, line: lines.append(line))
    await source.start()
    return source, lines


# Both clients: fastmcp's, and devall's own (tools list/call, probe).
@pytest.fixture(params=[LocalSource, direct_local_source], ids=["fastmcp", "direct"])
async def tricky(request: pytest.FixtureRequest) -> AsyncIterator[tuple[LocalSource, list[str]]]:
    source, lines = await started(TRICKY, request.param)
    yield source, lines
    await source.close()


async def assert_session_lives_on(source: LocalSource, pid: int | None) -> None:
    """A normal call on the same session succeeds, from the same process."""
    assert text_of(await source.call_tool("echo", {"text": "still here"})) == "still here"
    assert source.restarts == 0 and source.pid == pid


DEEP = f"nested deeper than {MAX_NESTING} levels"


@pytest.mark.parametrize(
    ("tool", "arguments", "words"),
    [
        ("deep_line", {"levels": 1000}, DEEP),  # beyond Python's own recursion limit
        ("deep_line", {"levels": 5000}, DEEP),
        # The deepest list at level 101: Python parses it, devall refuses it.
        ("deep_line", {"levels": MAX_NESTING - 2}, DEEP),
        ("id_last", {"levels": 1000}, DEEP),  # the id comes after the deep part
        ("big_int", {"digits": 5000}, f"an integer longer than {MAX_INT_DIGITS} digits"),
    ],
    ids=["1000_levels", "5000_levels", "limit_plus_one", "id_last", "5000_digit_integer"],
)
async def test_a_response_devall_cannot_take_fails_the_call_at_once(
    tricky: tuple[LocalSource, list[str]], tool: str, arguments: dict[str, Any], words: str
) -> None:
    source, lines = tricky
    pid = source.pid
    result = await source.call_tool(tool, arguments)
    # answered and refused: a call that timed out would be a "timeout" result
    assert result.is_error and result.error_class == "invalid_result", text_of(result)
    assert words in text_of(result)
    assert any(words in line for line in lines), lines  # and the log says what was dropped
    await assert_session_lives_on(source, pid)


async def test_a_response_at_the_limit_is_used(tricky: tuple[LocalSource, list[str]]) -> None:
    source, _ = tricky
    # The message (1), its result (2), structuredContent (3) and "deep" (4 and on).
    result = await source.call_tool("deep_line", {"levels": MAX_NESTING - 3})
    assert not result.is_error, text_of(result)


@pytest.mark.parametrize("tool", ["deep_request", "deep_junk"])
async def test_deep_lines_that_answer_no_call_are_logged_and_dropped(
    tricky: tuple[LocalSource, list[str]], tool: str
) -> None:
    source, lines = tricky
    pid = source.pid
    result = await source.call_tool(tool, {"levels": 2000})
    assert text_of(result) == "ok" and not result.is_error
    assert any(DEEP in line for line in lines), lines
    await assert_session_lives_on(source, pid)


async def test_deep_structured_content_from_a_fastmcp_server_is_an_error_result() -> None:
    source, _ = await started(DEEP_RESULT)
    try:
        pid = source.pid
        result = await source.call_tool("deep", {"levels": 200})
        assert result.is_error and result.error_class == "invalid_result", text_of(result)
        assert DEEP in text_of(result)
        await assert_session_lives_on(source, pid)
    finally:
        await source.close()


@pytest.mark.parametrize(("levels", "refused"), [(MAX_NESTING - 3, False), (MAX_NESTING - 2, True)])
async def test_remote_structured_content_has_the_same_limit(levels: int, refused: bool) -> None:
    # Over HTTP the SDK parses the response; devall checks the value before using it.
    with ServerProcess(DEEP_RESULT) as server:
        config = McpRemoteConfig(server=server.url, timeout=CALL_TIMEOUT)
        source = RemoteSource(id="deep", config=config)
        try:
            result = await source.call_tool("deep", {"levels": levels})
            assert result.is_error is refused, text_of(result)
            if refused:
                assert result.error_class == "invalid_result" and DEEP in text_of(result)
            assert text_of(await source.call_tool("echo", {"text": "still here"})) == "still here"
        finally:
            await source.close()
