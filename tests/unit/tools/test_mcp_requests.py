"""What devall answers a server by itself: elicitation policies, sampling conversion, log text,
roots, and the config keys that set them."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mcp_types
import pytest

from devall_cli.tools.base import ElicitationRequest
from devall_cli.tools.kinds.client_settings import McpClientConfig, RootConfig
from devall_cli.tools.mcp_requests import (
    CallClock,
    ServerRequests,
    answer_by_policy,
    log_text,
    schema_defaults,
)
from devall_cli.tools.mcp_sampling import SamplingRefused, sampling_request
from devall_cli.workflow.loader import load_workflow, validate_workflow

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "default": 30},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "default": ["a"]},
    },
    "required": ["name"],
}


def form(schema: dict[str, Any] = FORM, mode: str = "form") -> ElicitationRequest:
    return ElicitationRequest(server_id="s", message="tell me", mode=mode, schema=schema)


def test_accept_defaults_needs_a_default_for_every_required_field() -> None:
    assert answer_by_policy(form(), "accept_defaults").action == "decline"
    complete = {**FORM, "required": ["age"]}
    answer = answer_by_policy(form(complete), "accept_defaults")
    assert (answer.action, answer.content) == ("accept", {"age": 30, "tags": ["a"]})


def test_other_policies_and_url_requests() -> None:
    assert answer_by_policy(form(), "cancel").action == "cancel"
    assert answer_by_policy(form(), "decline").action == "decline"
    assert answer_by_policy(form(mode="url"), "accept_defaults").action == "decline"
    assert schema_defaults({"properties": "junk"}) == {}


def test_log_text_of_strings_fastmcp_messages_and_data() -> None:
    assert log_text("plain") == "plain"
    assert log_text({"msg": "hello", "extra": None}) == "hello"
    assert log_text({"msg": "hello", "extra": {"k": 1}}) == 'hello {"k": 1}'
    assert log_text({"other": 1}) == '{"other": 1}'


def sampling_params(**overrides: Any) -> mcp_types.CreateMessageRequestParams:
    fields: dict[str, Any] = {
        "messages": [
            mcp_types.SamplingMessage(
                role="user", content=mcp_types.TextContent(type="text", text="hi")
            )
        ],
        "max_tokens": 1000,
        **overrides,
    }
    return mcp_types.CreateMessageRequestParams(**fields)


def test_sampling_request_caps_tokens_and_converts_images() -> None:
    image = mcp_types.ImageContent(type="image", data="aGk=", mime_type="image/png")
    text = mcp_types.TextContent(type="text", text="look")
    params = sampling_params(
        messages=[mcp_types.SamplingMessage(role="user", content=[text, image])],
        model_preferences=mcp_types.ModelPreferences(hints=[mcp_types.ModelHint(name="small")]),
        stop_sequences=["END"],
    )
    request = sampling_request(params, 64)
    assert request.max_tokens == 64
    assert request.model_hints == ("small",) and request.stop_sequences == ("END",)
    [message] = request.messages
    assert message["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
    ]
    assert sampling_request(sampling_params(max_tokens=10), 64).max_tokens == 10


def test_sampling_request_refuses_what_no_provider_takes() -> None:
    audio = mcp_types.AudioContent(type="audio", data="aGk=", mime_type="audio/wav")
    with pytest.raises(SamplingRefused, match="audio"):
        sampling_request(
            sampling_params(messages=[mcp_types.SamplingMessage(role="user", content=audio)]),
            64,
        )
    with pytest.raises(SamplingRefused, match="no messages"):
        sampling_request(sampling_params(messages=[]), 64)


async def test_roots_skip_missing_folders_and_say_when_they_change(tmp_path: Path) -> None:
    present = tmp_path / "here"
    present.mkdir()
    later = tmp_path / "later"
    settings = McpClientConfig(roots=(RootConfig(str(present)), RootConfig(str(later), "L")))
    requests = ServerRequests(server_id="s", settings=settings)
    listed = await requests.list_roots(None)
    assert [(str(root.uri), root.name) for root in listed] == [(present.as_uri(), "here")]
    sent: list[str] = []

    async def send() -> None:
        sent.append("changed")

    client = SimpleNamespace(send_roots_list_changed=send)
    await requests.check_roots(client)  # type: ignore[arg-type]
    assert sent == []
    later.mkdir()
    await requests.check_roots(client)  # type: ignore[arg-type]
    assert sent == ["changed"]


def test_a_paused_clock_counts_its_pause() -> None:
    clock = CallClock()
    with clock.pausing():
        assert clock.active
    assert not clock.active and clock.extra() >= 0.0


WORKFLOW = """
graph:
  start: [a]
  nodes:
    - id: a
      type: agent
      config:
        provider: scripted
        script: [hi]
        tooling:
          - type: mcp_local
            config:
              command: python3
{keys}
"""


def write(folder: Path, keys: str) -> Path:
    path = folder / "flow.yaml"
    path.write_text(WORKFLOW.format(keys=textwrap.indent(textwrap.dedent(keys), " " * 14)))
    return path


def test_client_keys_are_read(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    path = write(
        tmp_path,
        """
        elicitation: accept_defaults
        sampling: deny
        sampling_max_tokens: 200
        log_level: Warning
        roots: [data, {path: /, name: everything}]
        """,
    )
    workflow = load_workflow(path, environ={})
    tooling = workflow.graph.nodes[0].config.tooling[0]  # type: ignore[attr-defined]
    client = tooling.config.client
    assert client == McpClientConfig(
        elicitation="accept_defaults",
        sampling="deny",
        sampling_max_tokens=200,
        log_level="warning",
        roots=(RootConfig(str(tmp_path / "data")), RootConfig("/", "everything")),
    )


def test_bad_client_keys_are_located_errors_all_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        elicitation: promt
        sampling: maybe
        sampling_max_tokens: 0
        log_level: loud
        roots: [https://example.com/x, {name: n}]
        """,
    )
    issues = [i for i in validate_workflow(path, environ={})[1] if i.severity == "error"]
    text = "\n".join(f"{i.path}: {i.message}" for i in issues)
    assert "elicitation must be one of" in text and "did you mean 'prompt'" in text
    assert "sampling must be one of allow, deny" in text
    assert "sampling_max_tokens" in text
    assert "log_level must be one of" in text
    assert "a root must be a local directory or a file:// URI" in text
    assert "roots[1]" in text or "roots.1" in text
    assert len(issues) >= 6
