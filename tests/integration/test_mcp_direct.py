"""devall's own stdio client (mcp_direct.py) and fastmcp's meet the same protocol edges alike.

The server is written by hand (tests/servers/raw_server.py), so that it can page its listing,
refuse the handshake, list a tool without a schema, break its output schema, and ask the client
what it likes. Every test runs with both clients and expects the same outcome.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from devall_cli.errors import ExitCode, ProtocolError
from devall_cli.tools.base import CallContext, DataBlock
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.mcp_direct import HANDSHAKE_VERSIONS, MODERN_VERSIONS
from devall_cli.tools.mcp_local import LocalSource
from tests.helpers import direct_local_source, text_of
from tests.integration.conftest import RAW, Factory


async def test_every_page_of_the_listing_is_read(raw: Factory) -> None:
    source = raw("--pages", "3")
    info = await source.start()
    assert info.server_name == "raw server" and info.protocol_version == "2025-06-18"
    names = [tool.name for tool in await source.list_tools()]
    assert names == ["tool_0", "shaped", "tool_1", "tool_2"]
    assert text_of(await source.call_tool("tool_2", {})) == "called tool_2"


async def test_a_server_that_refuses_the_handshake_is_a_protocol_error(raw: Factory) -> None:
    source = raw("--modern-only")
    with pytest.raises(ProtocolError) as info:
        await source.start()
    assert info.value.exit_code == ExitCode.REMOTE
    assert "'raw'" in info.value.message and "-32022" in info.value.message


async def test_under_run_a_refused_handshake_is_handed_to_fastmcps_client() -> None:
    # `run` (client "auto") tries fastmcp's client on the same process, which probes the newer
    # protocol first; this server answers neither, so the start fails as fastmcp's would.
    args = (str(RAW), "--modern-only")
    config = McpLocalConfig(command=sys.executable, args=args, startup_timeout=60)
    source = LocalSource(id="raw", config=config, client="auto")
    try:
        with pytest.raises(ProtocolError) as info:
            await source.start()
    finally:
        await source.close()
    assert source.client == "fastmcp" and "-32022" in info.value.message
    assert any("speaking to it with fastmcp's client" in line for line in source.log_tail)


async def test_a_tool_listed_without_an_input_schema_is_a_protocol_error(raw: Factory) -> None:
    source = raw("--no-schema")
    await source.start()
    with pytest.raises(ProtocolError) as info:
        await source.list_tools()
    assert info.value.exit_code == ExitCode.REMOTE
    assert "'raw'" in info.value.message and "inputSchema" in info.value.message


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("none", "has an output schema but did not return structured content"),
        ("wrong", "Invalid structured content returned by tool shaped"),
    ],
)
async def test_structured_content_is_checked_against_the_output_schema(
    raw: Factory, mode: str, words: str
) -> None:
    source = raw()
    await source.list_tools()
    result = await source.call_tool("shaped", {"mode": mode})
    assert result.is_error and result.error_class == "invalid_result", text_of(result)
    assert "tool 'shaped' returned an invalid result" in text_of(result)
    assert words in text_of(result)


async def test_structured_content_that_fits_its_schema_is_kept(raw: Factory) -> None:
    source = raw()
    await source.list_tools()
    result = await source.call_tool("shaped", {"mode": "right"})
    assert not result.is_error, text_of(result)
    assert [b.data for b in result.blocks if isinstance(b, DataBlock)] == [{"n": 3}]


@pytest.mark.parametrize(
    ("method", "expect"),
    [
        ("ping", {}),
        ("no/such/method", {"code": -32601}),
    ],
)
async def test_what_the_server_asks_during_a_call_is_answered(
    raw: Factory, method: str, expect: dict[str, Any]
) -> None:
    source = raw("--asks", method)
    text = text_of(await source.call_tool("tool_0", {}))
    asked = json.loads(text.split("asked: ", 1)[1])
    assert {key: asked[key] for key in expect} == expect


async def test_no_roots_are_offered_unless_configured(raw: Factory) -> None:
    source = raw("--asks", "roots/list")
    text = text_of(await source.call_tool("tool_0", {}))
    assert json.loads(text.split("asked: ", 1)[1]) == {
        "code": -32600,
        "message": "List roots not supported",
    }


def test_the_offered_version_is_the_newest_the_sdk_reaches_by_handshake() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    assert set(HANDSHAKE_VERSIONS) == set(HANDSHAKE_PROTOCOL_VERSIONS)
    assert HANDSHAKE_VERSIONS[0] == HANDSHAKE_PROTOCOL_VERSIONS[-1]
    # and the probe's, the newest of the per-request `_meta` era
    assert set(MODERN_VERSIONS) == set(MODERN_PROTOCOL_VERSIONS)
    assert MODERN_VERSIONS[0] == MODERN_PROTOCOL_VERSIONS[-1]


@pytest.mark.parametrize("kind", [LocalSource, direct_local_source], ids=["fastmcp", "direct"])
async def test_progress_of_a_call_reaches_the_events_with_the_call(kind: type[LocalSource]) -> None:
    seen: list[tuple[str, tuple[Any, ...]]] = []

    class Recorder:
        """A ToolEvents that keeps every report as `(name, args)`."""

        def __getattr__(self, name: str) -> Any:
            return lambda *args: seen.append((name, args))

    config = McpLocalConfig(
        command=sys.executable, args=(str(RAW), "--fixture"), wait_for_log="raw server ready"
    )
    source = kind(id="raw", config=config, events=Recorder())
    try:
        context = CallContext(node_id="writer", call_id="c1", tool="sleep")
        result = await source.call_tool("sleep", {"seconds": 0.1, "tag": "p"}, context=context)
        assert text_of(result) == "p peak=1"
    finally:
        await source.close()
    progress = [args for name, args in seen if name == "tool_progress"]
    assert [(args[1].call_id, args[2], args[3]) for args in progress] == [
        ("c1", 1.0, 2.0),
        ("c1", 2.0, 2.0),
    ]
