"""The example server users run (mcp_example/mcp_server.py), reached as a remote MCP server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import AttachmentBlock, ResourceLinkBlock, TextBlock
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_remote import RemoteSource
from tests.servers.serve import EXAMPLE_SERVER, ServerProcess, server_env

REPO_ROOT = EXAMPLE_SERVER.parent.parent


pytestmark = pytest.mark.usefixtures("no_process_left")


@pytest.fixture
async def example(tmp_path: Path) -> AsyncIterator[RemoteSource]:
    with ServerProcess(EXAMPLE_SERVER) as server:
        assert any(line.startswith("MCP server ready") for line in server.log)
        store = AttachmentStore(tmp_path)
        src = RemoteSource(id="example", config=McpRemoteConfig(server=server.url), store=store)
        yield src
        await src.close()


async def test_example_server_offers_every_result_kind(example: RemoteSource) -> None:
    info = await example.start()
    assert info.server_name == "devall example server"
    names = {t.name for t in await example.list_tools()}
    expected = {"rand_num", "sample_image", "sample_audio", "sample_resource", "sample_link"}
    assert names == expected
    image = (await example.call_tool("sample_image", {})).blocks[0]
    assert isinstance(image, AttachmentBlock) and image.mime_type == "image/png"
    audio = (await example.call_tool("sample_audio", {})).blocks[0]
    assert isinstance(audio, AttachmentBlock) and audio.kind == "audio"
    resource = (await example.call_tool("sample_resource", {})).blocks[0]
    assert isinstance(resource, TextBlock) and resource.uri == "example://notes/readme.txt"
    link = (await example.call_tool("sample_link", {})).blocks[0]
    assert isinstance(link, ResourceLinkBlock) and link.name == "MCP specification"


async def test_rand_num_stays_in_range_and_rejects_reversed_bounds(example: RemoteSource) -> None:
    draws = set()
    for _ in range(30):
        block = (await example.call_tool("rand_num", {"a": 3, "b": 5})).blocks[0]
        assert isinstance(block, TextBlock)
        draws.add(int(block.text))
    assert draws <= {3, 4, 5} and len(draws) > 1
    same = (await example.call_tool("rand_num", {"a": 7, "b": 7})).blocks[0]
    assert isinstance(same, TextBlock) and same.text == "7"
    reversed_bounds = await example.call_tool("rand_num", {"a": 9, "b": 1})
    assert reversed_bounds.is_error and reversed_bounds.error_class == "tool_error"
    first = reversed_bounds.blocks[0]
    assert isinstance(first, TextBlock) and "a must not be greater than b" in first.text


def test_example_server_runs_from_the_repo_root_over_stdio() -> None:
    """Started as `python mcp_example/mcp_server.py`, it announces readiness and answers."""
    env = server_env()
    env.pop("FASTMCP_SHOW_SERVER_BANNER", None)  # the script switches the banner off itself
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    proc = subprocess.run(
        [sys.executable, "mcp_example/mcp_server.py"],
        cwd=REPO_ROOT,
        input=json.dumps(initialize) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert proc.stderr.splitlines()[0] == "MCP server ready"
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "devall example server"
