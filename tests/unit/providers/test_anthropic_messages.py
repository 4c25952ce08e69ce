"""OpenAI-format conversations become Messages API requests, and its answers assistant turns."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from devall_cli.config.model import frozen_mapping
from devall_cli.errors import LLMHTTPError
from devall_cli.providers.anthropic_messages import build_request, parse_answer, turns
from devall_cli.tools.base import ToolSpec

URL = "http://127.0.0.1:1/v1/messages"
PNG = base64.b64encode(b"\x89PNG fake").decode()


def ids() -> Any:
    counter = iter(range(1, 100))
    return lambda: f"toolu_{next(counter)}"


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def test_system_max_tokens_and_merged_turns() -> None:
    messages = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "ok"},
        {"role": "assistant", "content": "more"},
        {"role": "user", "content": "  "},
    ]
    body = build_request("claude-x", messages, [], {})
    assert body["model"] == "claude-x"
    assert body["system"] == "Be terse."
    assert body["max_tokens"] == 4096
    assert body["messages"] == [
        {"role": "user", "content": [text("first"), text("second")]},
        {"role": "assistant", "content": [text("ok"), text("more")]},
    ]
    assert "tools" not in body


def test_the_conversation_starts_with_a_user_turn() -> None:
    assert turns([{"role": "user", "content": ""}]) == [
        {"role": "user", "content": [text("(no input)")]}
    ]
    assert turns([{"role": "assistant", "content": "earlier answer"}]) == [
        {"role": "user", "content": [text("(no input)")]},
        {"role": "assistant", "content": [text("earlier answer")]},
    ]


def test_params_are_sent_with_stop_renamed_and_owned_keys_kept() -> None:
    params = frozen_mapping(
        {"max_tokens": 64, "temperature": 0.1, "stop": "END", "model": "x", "stream": True}
    )
    body = build_request("claude-x", [{"role": "user", "content": "hi"}], [], params)
    assert body["max_tokens"] == 64 and body["temperature"] == 0.1
    assert body["stop_sequences"] == ["END"] and "stop" not in body
    assert body["model"] == "claude-x" and "stream" not in body


def test_images_become_image_blocks() -> None:
    content = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "image_url", "image_url": {"url": "https://example.test/cat.jpg"}},
    ]
    (turn,) = turns([{"role": "user", "content": content}])
    assert turn["content"] == [
        text("What is this?"),
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.test/cat.jpg"}},
    ]


def test_tool_use_round_trips_with_results_first_in_their_turn() -> None:
    reply = parse_answer(
        {
            "type": "message",
            "content": [
                text("Let me add."),
                {"type": "tool_use", "id": "toolu_a", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "toolu_b", "name": "now", "input": {}},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2},
        },
        URL,
        ids(),
    )
    assert reply.content == "Let me add."
    assert [(c.id, c.name, dict(c.arguments)) for c in reply.tool_calls] == [
        ("toolu_a", "add", {"a": 1, "b": 2}),
        ("toolu_b", "now", {}),
    ]
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 5)
    assert reply.usage.total_tokens == 17

    messages = [
        {"role": "user", "content": "go"},
        reply.to_message(),
        {"role": "tool", "tool_call_id": "toolu_a", "content": "3"},
        {"role": "tool", "tool_call_id": "toolu_b", "content": ""},
        {"role": "user", "content": "and then?"},
    ]
    assistant, results = turns(messages)[1:]
    assert assistant == {
        "role": "assistant",
        "content": [
            text("Let me add."),
            {"type": "tool_use", "id": "toolu_a", "name": "add", "input": {"a": 1, "b": 2}},
            {"type": "tool_use", "id": "toolu_b", "name": "now", "input": {}},
        ],
    }
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "3"},
            {"type": "tool_result", "tool_use_id": "toolu_b"},
            text("and then?"),
        ],
    }


def test_thinking_blocks_go_back_before_the_tool_use() -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    reply = parse_answer(
        {
            "type": "message",
            "content": [thinking, {"type": "tool_use", "id": "t1", "name": "now", "input": {}}],
        },
        URL,
        ids(),
    )
    (assistant,) = turns([{"role": "user", "content": "go"}, reply.to_message()])[1:]
    assert assistant["content"] == [
        thinking,
        {"type": "tool_use", "id": "t1", "name": "now", "input": {}},
    ]


def test_tools_are_declared_with_an_object_schema() -> None:
    tools = [
        ToolSpec(
            "add",
            "add",
            "Add.",
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            "function",
            "",
            "f",
        ),
        ToolSpec("now", "now", "Time.", {}, "function", "", "f"),
    ]
    body = build_request("m", [{"role": "user", "content": "hi"}], tools, {})
    assert body["tools"] == [
        {
            "name": "add",
            "description": "Add.",
            "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
        },
        {"name": "now", "description": "Time.", "input_schema": {"type": "object"}},
    ]


def test_bad_input_becomes_a_tool_call_error() -> None:
    reply = parse_answer(
        {"content": [{"type": "tool_use", "id": "t", "name": "add", "input": "1,2"}]}, URL, ids()
    )
    (call,) = reply.tool_calls
    assert call.error is not None and "JSON object" in call.error


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "Overloaded",
        ),
        ({"id": "x"}, "no content"),
    ],
)
def test_answers_without_content_are_errors(data: dict[str, Any], reason: str) -> None:
    with pytest.raises(LLMHTTPError, match=f"invalid response.*{reason}"):
        parse_answer(data, URL, ids())
