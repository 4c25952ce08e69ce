"""What a server asks of devall and reports during calls, against the features fixture server
over stdio and HTTP, on the 2026 protocol and on the older one (requests on the session):
sampling, elicitation, roots, progress and log messages."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import (
    AttachmentBlock,
    CallContext,
    DataBlock,
    ElicitationAnswer,
    ElicitationRequest,
    ResourceLinkBlock,
    SamplingReply,
    SamplingRequest,
    TextBlock,
)
from devall_cli.tools.kinds.client_settings import DEFAULT_CLIENT, McpClientConfig, RootConfig
from devall_cli.tools.kinds.mcp_local import McpLocalConfig
from devall_cli.tools.kinds.mcp_remote import McpRemoteConfig
from devall_cli.tools.mcp_local import LocalSource
from devall_cli.tools.mcp_remote import RemoteSource
from devall_cli.tools.mcp_session import McpSessionSource
from devall_cli.tools.normalize import blocks_to_json
from tests.helpers import direct_local_source, text_of
from tests.servers.serve import SERVERS_DIR, ServerProcess

FEATURES = SERVERS_DIR / "features_server.py"


@dataclass
class Recorder:
    """A ToolEvents that keeps every report as `(name, args)`."""

    seen: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any) -> None:
            self.seen.append((name, args))

        return record

    def named(self, name: str) -> list[tuple[Any, ...]]:
        """The arguments of every report called `name`."""
        return [args for seen, args in self.seen if seen == name]


class FakeModel:
    """A Sampler that answers with a fixed text and keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[SamplingRequest] = []

    async def sample(self, request: SamplingRequest) -> SamplingReply:
        self.requests.append(request)
        return SamplingReply(text="forty-two", model="fake-model")


class FakeOperator:
    """An Elicitor that answers every form with fixed content."""

    channel = "terminal"

    def __init__(self, content: dict[str, Any]) -> None:
        self.content = content
        self.requests: list[ElicitationRequest] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.requests.append(request)
        return ElicitationAnswer("accept", self.content)


# stdio-direct: devall's own client (tools list/call, probe), which speaks the handshake era.
MODES = ["stdio", "stdio-legacy", "stdio-direct", "http", "http-legacy"]


@pytest.fixture(scope="module")
def http_urls() -> Iterator[dict[bool, str]]:
    """The features server over HTTP, by whether it refuses the 2026 protocol."""
    with (
        ServerProcess(FEATURES) as modern,
        ServerProcess(FEATURES, args=["--legacy-only"]) as legacy,
    ):
        yield {False: modern.url, True: legacy.url}


@dataclass
class Maker:
    """Builds a source for one mode, with the given client settings; closes them all."""

    mode: str
    url: str | None
    made: list[McpSessionSource] = field(default_factory=list)

    def __call__(self, client: McpClientConfig = DEFAULT_CLIENT, **kwargs: Any) -> McpSessionSource:
        source: McpSessionSource
        if self.mode.startswith("stdio"):
            args: Sequence[str] = [str(FEATURES)]
            if self.mode.endswith("legacy"):
                args = [*args, "--legacy-only"]
            config = McpLocalConfig(
                command=sys.executable, args=tuple(args), client=client, startup_timeout=30.0
            )
            kind = direct_local_source if self.mode == "stdio-direct" else LocalSource
            source = kind(id="feat", config=config, **kwargs)
        else:
            assert self.url is not None
            remote = McpRemoteConfig(server=self.url, timeout=10.0, client=client)
            source = RemoteSource(id="feat", config=remote, **kwargs)
        self.made.append(source)
        return source


@pytest.fixture(params=MODES)
async def make(request: pytest.FixtureRequest, http_urls: dict[bool, str]) -> AsyncIterator[Maker]:
    mode: str = request.param
    url = http_urls[mode.endswith("legacy")] if mode.startswith("http") else None
    maker = Maker(mode, url)
    yield maker
    for source in maker.made:
        await source.close()


def call(**kwargs: Any) -> CallContext:
    return CallContext(node_id="writer", call_id="c1", tool="t", **kwargs)


async def test_with_the_defaults(make: Maker) -> None:
    """One session: sampling, elicitation (operator and none), no roots, progress, every log."""
    events = Recorder()
    source = make(McpClientConfig(sampling_max_tokens=50), events=events)
    await _sampling_goes_to_the_calling_nodes_model(source, events)
    await _elicitation_by_the_operator_or_declined(source, events)
    await _no_roots_unless_configured(source, events)
    await _progress_reaches_the_events_with_the_call(source, events)
    await _every_log_level_without_log_level(source, events)
    await _tool_listing_keeps_title_annotations_and_output_schema(source)


async def test_with_settings(make: Maker, tmp_path: Path) -> None:
    """One session: sampling denied, defaults accepted, roots configured, logs from warning."""
    data = tmp_path / "data"
    data.mkdir()
    events = Recorder()
    client = McpClientConfig(
        sampling="deny",
        elicitation="accept_defaults",
        roots=(RootConfig(str(data), name="the data"),),
        log_level="warning",
    )
    source = make(client, events=events)
    model = FakeModel()
    denied = await source.call_tool("sample", {"prompt": "hi"}, context=call(sampler=model))
    assert denied.is_error and model.requests == []

    operator = FakeOperator({"name": "never asked"})
    result = await source.call_tool("ask", {"with_defaults": True}, context=call(elicitor=operator))
    assert json.loads(text_of(result)) == {
        "action": "accept",
        "content": {"name": "Ada", "age": 30, "subscribe": True, "color": "green", "size": "s"},
    }
    assert operator.requests == []
    # a required field without a default: declined
    missing = await source.call_tool("ask", {}, context=call())
    assert json.loads(text_of(missing))["action"] == "decline"

    listed = await source.call_tool("roots", {}, context=call())
    assert text_of(listed) == f"the data={data.as_uri()}"
    assert events.named("roots_sent")[-1][1:] == ((data.as_uri(),), "listed")

    assert text_of(await source.call_tool("chatter", {}, context=call())) == "logged"
    messages = [(args[1], args[3]) for args in events.named("server_message")]
    assert messages == [("warning", "warning note"), ("error", "error note")]


async def _sampling_goes_to_the_calling_nodes_model(
    source: McpSessionSource, events: Recorder
) -> None:
    model = FakeModel()
    result = await source.call_tool(
        "sample",
        {"prompt": "what is six times seven?", "max_tokens": 500},
        context=call(sampler=model),
    )
    assert not result.is_error, text_of(result)
    assert text_of(result) == "sampled (fake-model): forty-two"
    [request] = model.requests
    assert request.messages == ({"role": "user", "content": "what is six times seven?"},)
    assert request.system_prompt == "You answer for the features server."
    assert request.max_tokens == 50  # capped by sampling_max_tokens
    assert request.temperature == 0.25
    [(server, ctx, asked)] = events.named("sampling_requested")
    assert (server, ctx.node_id, asked.max_tokens) == ("feat", "writer", 50)
    [answered] = events.named("sampling_answered")
    assert answered[2] == "ok" and answered[3].text == "forty-two"
    # no node's model to answer (a call without a sampler): refused, the tool fails
    unanswered = await source.call_tool("sample", {"prompt": "hi"}, context=call())
    assert unanswered.is_error
    assert events.named("sampling_answered")[-1][2] == "failed"


async def _elicitation_by_the_operator_or_declined(
    source: McpSessionSource, events: Recorder
) -> None:
    operator = FakeOperator({"name": "Grace", "age": 40})
    typed = await source.call_tool("ask", {}, context=call(elicitor=operator))
    assert json.loads(text_of(typed)) == {
        "action": "accept",
        "content": {"name": "Grace", "age": 40},
    }
    [request] = operator.requests
    assert request.schema["required"] == ["name"] and request.node_id == "writer"
    # no operator: declined
    declined = await source.call_tool("ask", {}, context=call())
    assert json.loads(text_of(declined))["action"] == "decline"
    requested = events.named("elicitation_requested")
    assert [args[3] for args in requested] == ["prompt", "decline"]
    answered = events.named("elicitation_answered")
    assert [(args[2].action, args[3]) for args in answered] == [
        ("accept", "terminal"),
        ("decline", "config"),
    ]


async def _no_roots_unless_configured(source: McpSessionSource, events: Recorder) -> None:
    # A filesystem server takes roots in place of its own folders: none are chosen for it.
    listed = await source.call_tool("roots", {}, context=call())
    assert text_of(listed) == "(no roots offered)"
    assert events.named("roots_sent") == []


async def _progress_reaches_the_events_with_the_call(
    source: McpSessionSource, events: Recorder
) -> None:
    result = await source.call_tool("work", {"steps": 3, "delay": 0.01}, context=call())
    assert text_of(result) == "worked 3 steps"
    progress = events.named("tool_progress")
    assert [(args[1].call_id, args[2], args[3], args[4]) for args in progress] == [
        ("c1", 1.0, 3.0, "step 1"),
        ("c1", 2.0, 3.0, "step 2"),
        ("c1", 3.0, 3.0, "step 3"),
    ]


async def _every_log_level_without_log_level(source: McpSessionSource, events: Recorder) -> None:
    await source.call_tool("chatter", {}, context=call())
    levels = [args[1] for args in events.named("server_message")]
    assert levels == ["debug", "info", "warning", "error"]


async def _tool_listing_keeps_title_annotations_and_output_schema(
    source: McpSessionSource,
) -> None:
    tools = {tool.name: tool for tool in await source.list_tools()}
    described = tools["described"]
    assert described.annotations == {"readOnlyHint": True, "title": "Annotated tool"}
    assert described.output_schema == {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
    }


async def test_every_block_kind_round_trips_with_nothing_lost(
    http_urls: dict[bool, str], tmp_path: Path
) -> None:
    """`rich_result` as the MCP client receives it, against the blocks devall keeps."""
    from fastmcp import Client

    async with Client(http_urls[False]) as client:
        raw = (await client.call_tool_mcp("rich_result", {})).model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
    store = AttachmentStore(tmp_path)
    source = RemoteSource(
        id="feat", config=McpRemoteConfig(server=http_urls[False], timeout=10.0), store=store
    )
    try:
        result = await source.call_tool("rich_result", {}, context=call())
    finally:
        await source.close()
    text, image, link, embedded, data = result.blocks
    content = raw["content"]
    assert isinstance(text, TextBlock) and text.text == content[0]["text"]
    assert (text.annotations, text.meta) == (content[0]["annotations"], content[0]["_meta"])
    assert isinstance(image, AttachmentBlock) and image.annotations == content[1]["annotations"]
    saved = (tmp_path / image.path).read_bytes()
    assert saved == base64.b64decode(content[1]["data"]) and image.mime_type == "image/png"
    assert isinstance(link, ResourceLinkBlock)
    wire_link = {
        "type": "resource_link",
        "uri": link.uri,
        "name": link.name,
        "title": link.title,
        "description": link.description,
        "mimeType": link.mime_type,
        "size": link.size,
        "_meta": link.meta,
    }
    assert wire_link == content[2]
    assert isinstance(embedded, TextBlock)
    resource = content[3]["resource"]
    assert (embedded.text, embedded.uri, embedded.mime_type) == (
        resource["text"],
        resource["uri"],
        resource["mimeType"],
    )
    assert embedded.resource_meta == resource["_meta"]
    assert embedded.annotations == content[3]["annotations"]
    assert isinstance(data, DataBlock) and dict(data.data) == raw["structuredContent"]
    assert result.meta == raw["_meta"]
    # what a run records (events.jsonl, `tools call --json`) keeps the same fields
    recorded = blocks_to_json(result.blocks)
    assert recorded[2]["type"] == "resource_link" and recorded[2]["size"] == 2048
    assert recorded[0]["annotations"] == {"audience": ["user"], "priority": 0.7}
