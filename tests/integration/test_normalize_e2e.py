"""Every content kind, sent by the real fixture server, normalized and saved byte for byte.

Runs over stdio (a minimal McpSessionSource subclass on fastmcp's own StdioTransport, which also
shows that the session layer works with any transport) and over streamable HTTP (RemoteSource).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp.client.transports import StdioTransport

from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import (
    AttachmentBlock,
    DataBlock,
    ResourceLinkBlock,
    TextBlock,
    ToolResult,
)
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_remote import RemoteSource
from devall_cli.tools.mcp_session import McpSessionSource
from devall_cli.tools.normalize import render_for_model
from tests.servers.fixture_server import (
    PDF_BYTES,
    STRUCTURED,
    TEXT_RESOURCE,
    png_bytes,
    wav_bytes,
)
from tests.servers.serve import FIXTURE_SERVER, ServerProcess


class FixtureStdioSource(McpSessionSource):
    """The fixture server over fastmcp's StdioTransport."""

    kind = "mcp_local"

    def make_transport(self) -> Any:
        return StdioTransport(sys.executable, [str(FIXTURE_SERVER)], keep_alive=False)


pytestmark = pytest.mark.usefixtures("no_process_left")


@pytest.fixture(scope="module")
def http_server() -> Iterator[ServerProcess]:
    """One HTTP fixture server for the module: its tools answer the same every time."""
    with ServerProcess(FIXTURE_SERVER) as server:
        yield server


@pytest.fixture
async def source(tmp_path: Path, http_server: ServerProcess) -> AsyncIterator[McpSessionSource]:
    """The module's HTTP server (each kind once); stdio gets every kind in one session below."""
    store = AttachmentStore(tmp_path / "run")
    src = RemoteSource(id="fx", config=McpRemoteConfig(server=http_server.url), store=store)
    yield src
    await src.close()


def only(result: ToolResult) -> Any:
    """The one content block of a result. FastMCP also sends a plain return value as structured
    content, `{"result": value}`: that block is checked to be the wrapper and set aside."""
    assert not result.is_error, result
    blocks = list(result.blocks)
    if len(blocks) == 2 and isinstance(blocks[1], DataBlock):
        assert set(blocks[1].data) == {"result"}
        blocks.pop()
    assert len(blocks) == 1
    block = blocks[0]
    assert block.source == "mcp_tool"
    return block


def saved_bytes(source: McpSessionSource, block: AttachmentBlock) -> bytes:
    assert source.store is not None
    path = source.store.run_dir / block.path
    assert path.parent == source.store.directory  # nothing escapes the attachments folder
    return path.read_bytes()


async def test_text(source: McpSessionSource) -> None:
    block = only(await source.call_tool("echo", {"text": "héllo"}))
    assert block == TextBlock(text="héllo", tool_name="echo")


@pytest.mark.parametrize(
    ("tool", "payload", "mime", "kind", "suffix"),
    [
        ("image", png_bytes(), "image/png", "image", ".png"),
        ("audio", wav_bytes(), "audio/wav", "audio", ".wav"),
        ("blob_resource", PDF_BYTES, "application/pdf", "file", ".pdf"),
    ],
)
async def test_binary_content_is_saved_byte_for_byte(
    source: McpSessionSource, tool: str, payload: bytes, mime: str, kind: str, suffix: str
) -> None:
    block = only(await source.call_tool(tool, {}))
    assert isinstance(block, AttachmentBlock)
    assert (block.kind, block.mime_type, block.tool_name) == (kind, mime, tool)
    assert block.path == f"attachments/{tool}_{kind}_1{suffix}"
    assert saved_bytes(source, block) == payload
    assert block.size == len(payload)
    assert block.sha256 == hashlib.sha256(payload).hexdigest()
    if tool == "blob_resource":
        assert block.uri == "file:///fixture/report.pdf"
    rendered = render_for_model([block])
    assert rendered == f"[{kind} saved: {block.path} ({mime}, {len(payload)} bytes)]"


async def test_second_image_gets_its_own_file(source: McpSessionSource) -> None:
    first = only(await source.call_tool("image", {}))
    second = only(await source.call_tool("image", {}))
    assert first.path != second.path
    assert saved_bytes(source, first) == saved_bytes(source, second) == png_bytes()


async def test_embedded_text_resource(source: McpSessionSource) -> None:
    block = only(await source.call_tool("text_resource", {}))
    assert block == TextBlock(
        text=TEXT_RESOURCE,
        tool_name="text_resource",
        uri="file:///fixture/notes.txt",
        mime_type="text/plain",
    )


async def test_resource_link(source: McpSessionSource) -> None:
    block = only(await source.call_tool("resource_link", {}))
    assert block == ResourceLinkBlock(
        uri="https://example.invalid/data.csv",
        name="data.csv",
        mime_type="text/csv",
        description="a linked data file",
        tool_name="resource_link",
    )


async def test_structured_content_without_content_blocks(source: McpSessionSource) -> None:
    block = only(await source.call_tool("structured", {}))
    assert isinstance(block, DataBlock)
    assert dict(block.data) == STRUCTURED
    assert '"answer":42' in render_for_model([block])


KINDS = ("echo", "image", "audio", "blob_resource", "text_resource", "resource_link", "structured")


async def test_every_kind_reads_the_same_over_stdio(
    tmp_path: Path, source: McpSessionSource
) -> None:
    """One stdio session (fastmcp's own transport under the session layer) for every kind."""
    store = AttachmentStore(tmp_path / "stdio")
    stdio = FixtureStdioSource(
        id="fx", target="fixture", request_timeout=10, init_timeout=15, store=store
    )
    try:
        for tool in KINDS:
            arguments = {"text": "héllo"} if tool == "echo" else {}
            over_stdio = only(await stdio.call_tool(tool, arguments))
            over_http = only(await source.call_tool(tool, arguments))
            assert over_stdio == over_http, tool
            if isinstance(over_stdio, AttachmentBlock):
                assert saved_bytes(stdio, over_stdio) == saved_bytes(source, over_http)
    finally:
        await stdio.close()


async def test_without_a_store_binary_content_is_named_not_saved(
    tmp_path: Path, http_server: ServerProcess
) -> None:
    src = RemoteSource(id="fx", config=McpRemoteConfig(server=http_server.url))
    try:
        block = only(await src.call_tool("image", {}))
    finally:
        await src.close()
    assert isinstance(block, TextBlock)
    assert block.text == "[binary content omitted: image_image_1.png (image/png)]"
    assert not (tmp_path / "attachments").exists()
