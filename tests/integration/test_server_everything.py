"""The MCP client features against the reference server, @modelcontextprotocol/server-everything,
over stdio and Streamable HTTP: sampling, elicitation, roots, progress, log messages, and result
blocks (resource links, structured content, annotations).

`make test` installs the server with npm into `.npm-servers/` (pinned in the Makefile); without
it (or without Node) these tests are skipped, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from devall_cli.tools.base import DataBlock, ResourceLinkBlock, TextBlock
from devall_cli.tools.kinds.client_settings import McpClientConfig, RootConfig
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_local import LocalSource
from devall_cli.tools.mcp_remote import RemoteSource
from devall_cli.tools.mcp_session import McpSessionSource
from tests.cli.flows import invoke
from tests.conftest import REPO_ROOT
from tests.helpers import direct_local_source
from tests.integration.test_mcp_features import (
    FakeModel,
    FakeOperator,
    Recorder,
    call,
    text_of,
)
from tests.servers.serve import free_port, group_alive

PACKAGE = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
INDEX = Path(os.environ.get("DEVALL_NPM_SERVERS", REPO_ROOT / ".npm-servers")) / PACKAGE
NODE = shutil.which("node")
_LISTENING = re.compile(r"listening on port (\d+)")

pytestmark = pytest.mark.skipif(
    NODE is None or not INDEX.is_file(),
    reason="server-everything is not installed (`make test` installs it with npm)",
)


@contextlib.contextmanager
def http_server() -> Iterator[str]:
    """server-everything over Streamable HTTP on a free loopback port; its URL."""
    assert NODE is not None
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    proc = subprocess.Popen(
        [NODE, str(INDEX), "streamableHttp"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    ready = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if _LISTENING.search(line):
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert ready.wait(30) and proc.poll() is None, "server-everything did not start"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)


# stdio-direct: devall's own client (tools list/call, probe) against the reference server.
@pytest.fixture(params=["stdio", "stdio-direct", "http"])
async def everything(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[McpSessionSource, Recorder]]:
    events = Recorder()
    roots = (RootConfig(str(tmp_path)),)
    client = McpClientConfig(log_level="debug", sampling_max_tokens=64, roots=roots)
    source: McpSessionSource
    with contextlib.ExitStack() as stack:
        if request.param.startswith("stdio"):
            assert NODE is not None
            config = McpLocalConfig(
                command=NODE, args=(str(INDEX), "stdio"), startup_timeout=30, client=client
            )
            kind = direct_local_source if request.param == "stdio-direct" else LocalSource
            source = kind(id="everything", config=config, events=events)
        else:
            url = stack.enter_context(http_server())
            remote = McpRemoteConfig(server=url, timeout=20.0, client=client)
            source = RemoteSource(id="everything", config=remote, events=events)
        try:
            yield source, events
        finally:
            await source.close()


async def test_what_the_reference_server_asks_and_reports(
    everything: tuple[McpSessionSource, Recorder], tmp_path: Path
) -> None:
    source, events = everything
    tools = {tool.name: tool for tool in await source.list_tools()}
    assert tools["simulate-research-query"].task_support == "required"
    sampling_tool = tools["trigger-sampling-request"]
    assert sampling_tool.title == "Trigger Sampling Request Tool"
    assert sampling_tool.annotations is not None and sampling_tool.annotations["openWorldHint"]

    # sampling: the calling node's model answers, within sampling_max_tokens
    model = FakeModel()
    sampled = await source.call_tool(
        "trigger-sampling-request", {"prompt": "hi", "maxTokens": 500}, context=call(sampler=model)
    )
    assert not sampled.is_error and "forty-two" in text_of(sampled)
    [request] = model.requests
    assert request.max_tokens == 64 and request.system_prompt == "You are a helpful test server."

    # elicitation: the operator's answer goes back to the server
    operator = FakeOperator({"name": "Ada Lovelace"})
    elicited = await source.call_tool(
        "trigger-elicitation-request", {}, context=call(elicitor=operator)
    )
    assert "Ada Lovelace" in text_of(elicited)
    assert operator.requests[0].schema["required"] == ["name"]

    # roots: the configured folder; the server logs that it got them
    roots = text_of(await source.call_tool("get-roots-list", {}, context=call()))
    assert tmp_path.as_uri() in roots

    def roots_logged() -> bool:
        logged = [(args[1], args[3]) for args in events.named("server_message")]
        return any(level == "info" and "Roots updated" in text for level, text in logged)

    # The server logs it after it got the roots: over HTTP that may come after the call's answer.
    deadline = time.monotonic() + 30
    while not roots_logged() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert roots_logged()

    # progress of a long-running operation, with its call
    done = await source.call_tool(
        "trigger-long-running-operation", {"duration": 1, "steps": 2}, context=call()
    )
    assert "completed" in text_of(done)
    progress = [(args[1].call_id, args[2], args[3]) for args in events.named("tool_progress")]
    assert progress == [("c1", 1.0, 2.0), ("c1", 2.0, 2.0)]

    # result blocks: resource links, structured content next to its text, annotations
    links = await source.call_tool("get-resource-links", {"count": 2}, context=call())
    typed = [block for block in links.blocks if isinstance(block, ResourceLinkBlock)]
    assert [link.uri for link in typed] == [
        "demo://resource/dynamic/blob/1",
        "demo://resource/dynamic/text/2",
    ]
    structured = await source.call_tool(
        "get-structured-content", {"location": "New York"}, context=call()
    )
    text, data = structured.blocks
    assert isinstance(text, TextBlock) and isinstance(data, DataBlock)
    assert set(data.data) == {"temperature", "conditions", "humidity"}
    annotated = await source.call_tool(
        "get-annotated-message", {"messageType": "error"}, context=call()
    )
    first: Any = annotated.blocks[0]
    assert first.annotations == {"priority": 1.0, "audience": ["user", "assistant"]}


def test_tools_list_lists_task_only_tools(tmp_path: Path) -> None:
    assert NODE is not None
    tooling = {
        "type": "mcp_local",
        "config": {"command": NODE, "args": [str(INDEX), "stdio"], "startup_timeout": 30},
    }
    node = {
        "id": "a",
        "type": "agent",
        "config": {"provider": "scripted", "script": ["x"], "tooling": [tooling]},
    }
    flow = tmp_path / "flow.yaml"
    flow.write_text(json.dumps({"graph": {"id": "f", "start": ["a"], "nodes": [node]}}))
    code, out, err = invoke("tools", "list", str(flow), "--json")
    assert code == 0, err
    names = {tool["name"] for tool in json.loads(out)}
    assert "trigger-sampling-request" in names
    assert "get-roots-list" not in names  # offered only to clients that offer roots: none here
    assert "simulate-research-query" in names  # offered: called as an MCP task
