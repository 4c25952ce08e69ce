"""devall's own client over streamable HTTP (mcp_direct.py on http_lines.py), for remote servers.

`tools list`, `tools call` and `probe` speak to a remote server with it; what it does not speak
goes to fastmcp's client. The server is the hand-written one (tests/servers/raw_server.py served
over HTTP), which can answer in event streams, ask the client during a call, resume a stream,
refuse with a status and a reason, or refuse the `initialize` handshake.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devall_cli.errors import ServerUnreachableError
from devall_cli.tools.base import CallContext
from devall_cli.tools.http_reasons import error_reason
from devall_cli.tools.kinds.client_settings import McpClientConfig
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_remote import RemoteSource
from tests.cli.test_head_start_cli import spied
from tests.helpers import text_of
from tests.servers.serve import SERVERS_DIR, ServerProcess

RAW = SERVERS_DIR / "raw_server.py"
TOKEN = "header-value-1"

pytestmark = pytest.mark.usefixtures("no_process_left")


class Recorder:
    """A ToolEvents that keeps every report as `(name, args)`, and log lines."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[Any, ...]]] = []
        self.lines: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args: self.seen.append((name, args))

    def log(self, source_id: str, line: str) -> None:
        self.lines.append(line)


@pytest.fixture
def raw() -> Iterator[Any]:
    """Starts raw servers over HTTP with the given flags; each stopped at the end."""
    started: list[ServerProcess] = []

    def serve(*flags: str) -> str:
        server = ServerProcess(RAW, args=["--fixture", *flags])
        server.start()
        started.append(server)
        return server.url

    yield serve
    for server in started:
        server.stop()


def light(url: str, recorder: Recorder | None = None, **settings: Any) -> RemoteSource:
    config = McpRemoteConfig(
        server=url,
        headers={"x-test": TOKEN},
        timeout=5.0,
        client=McpClientConfig(**settings),
    )
    recorder = recorder or Recorder()
    return RemoteSource(
        id="web", config=config, client="direct", events=recorder, on_log=recorder.log
    )


async def test_list_and_call_over_http_with_the_light_client(raw: Any) -> None:
    source = light(raw("--pages", "2"))
    try:
        info = await source.start()
        assert (info.server_name, info.protocol_version) == ("raw server", "2025-06-18")
        names = [tool.name for tool in await source.list_tools()]
        assert names[:3] == ["tool_0", "shaped", "echo"] and names[-1] == "tool_1"
        assert text_of(await source.call_tool("echo", {"text": "over http"})) == "over http"
        sent = await source.call_tool("request_header", {"name": "x-test"})
        assert text_of(sent) == TOKEN
        session = await source.call_tool("request_header", {"name": "mcp-session-id"})
        assert text_of(session) == "raw-session"
        version = await source.call_tool("request_header", {"name": "mcp-protocol-version"})
        assert text_of(version) == "2025-06-18"
    finally:
        await source.close()
    assert source.client == "direct"  # never handed to fastmcp's client


@pytest.mark.parametrize(
    ("method", "settings", "expect"),
    [
        ("ping", {}, {}),
        ("elicitation/create", {"elicitation": "accept_defaults"}, {"action": "accept"}),
    ],
)
async def test_an_event_stream_carries_progress_and_a_request_that_is_answered(
    raw: Any, method: str, settings: dict[str, Any], expect: dict[str, Any]
) -> None:
    recorder = Recorder()
    source = light(raw("--sse", "--asks", method), recorder, **settings)
    try:
        context = CallContext(node_id="writer", call_id="c1", tool="tool_0")
        result = await source.call_tool("tool_0", {}, context=context)
    finally:
        await source.close()
    asked = json.loads(text_of(result).split("asked: ", 1)[1])
    assert {key: asked[key] for key in expect} == expect
    progress = [args for name, args in recorder.seen if name == "tool_progress"]
    assert [(args[1].call_id, args[2], args[3]) for args in progress] == [
        ("c1", 1.0, 2.0),
        ("c1", 2.0, 2.0),
    ]


async def test_a_stream_that_ends_before_its_answer_is_resumed(raw: Any) -> None:
    source = light(raw("--sse-resume"))
    try:
        result = await source.call_tool("echo", {"text": "resumed"})
    finally:
        await source.close()
    assert not result.is_error and text_of(result) == "resumed"


REASON = "Access is only allowed at localhost:8773 / Start the server with --allowed-hosts."


@pytest.mark.parametrize("client", ["direct", "fastmcp"])
async def test_a_refusal_names_the_reason_in_its_body(raw: Any, client: str) -> None:
    url = raw("--refuse", "403")
    source = light(url)
    source.client = client  # type: ignore[assignment]
    with pytest.raises(ServerUnreachableError) as info:
        await source.list_tools()
    await source.close()
    assert info.value.status == "http_403"
    assert info.value.message == f"MCP server 'web' ({url}) answered HTTP 403: {REASON}"


@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        (b"<html><title>502 Bad\n Gateway</title></html>", "text/html", "502 Bad Gateway"),
        (b'{"error": {"code": 7, "message": "quota spent"}}', "application/json", "quota spent"),
        (b'{"error": "bad_token", "error_description": "expired"}', "application/json", "expired"),
        (b"\n  first\nsecond\nthird\n", "text/plain", "first / second"),
        (b"", "text/plain", None),
    ],
)
def test_an_error_answer_is_named_by_its_first_words(
    body: bytes, content_type: str, reason: str | None
) -> None:
    assert error_reason(body, content_type) == reason


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (("--refuse", "401"), "the server asks for authorization (HTTP 401)"),
        (("--modern-only",), "the server refused the initialize handshake"),
    ],
)
async def test_what_the_light_client_cannot_speak_goes_to_fastmcp_once(
    raw: Any, flags: tuple[str, ...], why: str
) -> None:
    recorder = Recorder()
    source = light(raw(*flags), recorder)
    with pytest.raises(ServerUnreachableError) as info:
        await source.list_tools()
    await source.close()
    handed = [line for line in recorder.lines if "speaking to it with fastmcp's client" in line]
    assert len(handed) == 1 and handed[0].startswith(f"[devall] {why}"), recorder.lines
    assert source.client == "fastmcp"
    assert info.value.status in ("http_401", "http_error")  # as fastmcp's client words it


@pytest.mark.parametrize(("env", "loaded"), [({}, False), ({"DEVALL_MCP_CLIENT": "fastmcp"}, True)])
def test_remote_tools_list_imports_no_client_stack(
    raw: Any, tmp_path: Path, env: dict[str, str], loaded: bool
) -> None:
    watch = ("fastmcp", "mcp", "mcp_types")
    report = spied(tmp_path, "tools", "list", "--url", raw(), "--json", env=env, watch=watch)
    assert report["code"] == 0, report["stderr"]
    assert "request_header" in {row["name"] for row in json.loads(report["stdout"])}
    assert ("fastmcp" in report["after"]) is loaded, report["after"]
