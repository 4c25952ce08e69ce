"""OpenAI-format conversations become Gemini requests, and Gemini answers assistant turns."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from devall_cli.config.model import frozen_mapping
from devall_cli.errors import LLMHTTPError
from devall_cli.providers.base import AssistantMessage, ToolCall
from devall_cli.providers.gemini import request_fields
from devall_cli.providers.gemini_messages import build_request, contents, parse_answer
from devall_cli.tools.base import ToolSpec

URL = "http://127.0.0.1:1/v1beta/models/m:generateContent"
PNG = base64.b64encode(b"\x89PNG fake").decode()


def ids() -> Any:
    counter = iter(range(1, 100))
    return lambda: f"call_{next(counter)}"


def answer(*parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": list(parts)}, **extra}]}


def test_roles_system_instruction_and_merged_turns() -> None:
    messages = [
        {"role": "system", "content": "Be terse."},
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": ""},
    ]
    body = build_request(messages, [], {})
    assert body["systemInstruction"] == {"parts": [{"text": "Be terse.\n\nUse tools."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "first"}, {"text": "second"}]},
        {"role": "model", "parts": [{"text": "ok"}]},
    ]
    assert "tools" not in body and "generationConfig" not in body


def test_an_empty_conversation_is_one_user_turn() -> None:
    assert contents([{"role": "user", "content": ""}]) == [
        {"role": "user", "parts": [{"text": "(no input)"}]}
    ]


def test_images_in_user_messages_become_inline_data() -> None:
    content = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "image_url", "image_url": {"url": "https://example.test/cat.jpg"}},
    ]
    (turn,) = contents([{"role": "user", "content": content}])
    assert turn["parts"] == [
        {"text": "What is this?"},
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"text": "[image: https://example.test/cat.jpg]"},
    ]


def test_tool_calls_round_trip_with_ids_names_and_signatures() -> None:
    reply = parse_answer(
        answer(
            {"text": "Let me look."},
            {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}, "thoughtSignature": "s1"},
            {"functionCall": {"name": "echo", "args": {"text": "x"}, "id": "fc_9"}},
        ),
        URL,
        ids(),
    )
    assert reply.content == "Let me look."
    first, second = reply.tool_calls
    assert (first.id, first.name, dict(first.arguments)) == ("call_1", "add", {"a": 1, "b": 2})
    assert (second.id, second.name) == ("fc_9", "echo")

    messages = [
        {"role": "user", "content": "go"},
        reply.to_message(),
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
        {"role": "tool", "tool_call_id": "fc_9", "content": "x"},
    ]
    model_turn, results = contents(messages)[1:]
    assert model_turn == {
        "role": "model",
        "parts": [
            {"text": "Let me look."},
            {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}, "thoughtSignature": "s1"},
            {"functionCall": {"name": "echo", "args": {"text": "x"}, "id": "fc_9"}},
        ],
    }
    assert results == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "add", "response": {"result": "3"}}},
            {"functionResponse": {"name": "echo", "response": {"result": "x"}, "id": "fc_9"}},
        ],
    }


def test_a_reused_call_id_answers_the_latest_call() -> None:
    turn_one = AssistantMessage(None, (ToolCall("call_1", "add", {}, "{}"),))
    turn_two = AssistantMessage(None, (ToolCall("call_1", "echo", {}, "{}"),))
    messages = [
        {"role": "user", "content": "go"},
        turn_one.to_message(),
        {"role": "tool", "tool_call_id": "call_1", "content": "a"},
        turn_two.to_message(),
        {"role": "tool", "tool_call_id": "call_1", "content": "b"},
    ]
    names = [
        part["functionResponse"]["name"]
        for turn in contents(messages)
        for part in turn["parts"]
        if "functionResponse" in part
    ]
    assert names == ["add", "echo"]


def test_tools_are_declared_with_converted_schemas() -> None:
    tools = [
        ToolSpec(
            "add",
            "add",
            "Add two.",
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            "function",
            "",
            "f",
        ),
        ToolSpec(
            "now", "now", "The time.", {"type": "object", "properties": {}}, "function", "", "f"
        ),
    ]
    body = build_request([{"role": "user", "content": "hi"}], tools, {})
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "add",
                    "description": "Add two.",
                    "parameters": {"type": "OBJECT", "properties": {"a": {"type": "INTEGER"}}},
                },
                {"name": "now", "description": "The time."},
            ]
        }
    ]


def test_params_map_to_generation_config_and_request_fields() -> None:
    params = frozen_mapping(
        {
            "temperature": 0.2,
            "top_p": 0.9,
            "top_k": 20,
            "max_tokens": 100,
            "stop": "END",
            "response_modalities": ["text", "image"],
            "aspect_ratio": "16:9",
            "safety_settings": [
                {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}
            ],
            "function_calling_config": "any",
            "seed": 7,
        }
    )
    assert request_fields(params) == {
        "generationConfig": {
            "temperature": 0.2,
            "topP": 0.9,
            "topK": 20,
            "maxOutputTokens": 100,
            "stopSequences": ["END"],
            "responseModalities": ["TEXT", "IMAGE"],
            "imageConfig": {"aspectRatio": "16:9"},
            "seed": 7,
        },
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
    }


def test_the_gemini_name_wins_over_the_openai_alias() -> None:
    fields = request_fields({"max_tokens": 10, "max_output_tokens": 99, "maxOutputTokens": 99})
    assert fields["generationConfig"] == {"maxOutputTokens": 99}
    fields = request_fields({"max_output_tokens": 99, "max_tokens": 10})
    assert fields["generationConfig"] == {"maxOutputTokens": 99}


def test_images_out_usage_and_thoughts() -> None:
    reply = parse_answer(
        answer(
            {"text": "thinking...", "thought": True},
            {"text": "Here it is."},
            {"inlineData": {"mimeType": "image/png", "data": PNG}},
            {"inlineData": {"mimeType": "image/png", "data": "%%%"}},
        )
        | {
            "usageMetadata": {
                "promptTokenCount": 5,
                "candidatesTokenCount": 7,
                "totalTokenCount": 20,
            }
        },
        URL,
        ids(),
    )
    assert reply.content == "Here it is.\n[image/png content from the model could not be decoded]"
    assert [(m.mime_type, m.data) for m in reply.media] == [("image/png", b"\x89PNG fake")]
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (5, 7)
    assert reply.usage.total_tokens == 20


def test_bad_arguments_become_a_tool_call_error() -> None:
    reply = parse_answer(answer({"functionCall": {"name": "add", "args": [1, 2]}}), URL, ids())
    (call,) = reply.tool_calls
    assert call.error is not None and "JSON object" in call.error
    no_args = parse_answer(answer({"functionCall": {"name": "now"}}), URL, ids())
    assert dict(no_args.tool_calls[0].arguments) == {}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({}, "no candidates"),
        ({"promptFeedback": {"blockReason": "SAFETY"}}, r"prompt was blocked \(SAFETY\)"),
        ({"error": {"message": "quota"}}, "quota"),
        (answer(finishReason="RECITATION"), r"stopped without an answer \(RECITATION\)"),
    ],
)
def test_answers_without_a_usable_candidate_are_errors(data: dict[str, Any], reason: str) -> None:
    with pytest.raises(LLMHTTPError, match=f"invalid response.*{reason}"):
        parse_answer(data, URL, ids())


def test_an_empty_finished_answer_is_empty_text() -> None:
    reply = parse_answer(answer(finishReason="STOP"), URL, ids())
    assert reply.content is None and reply.tool_calls == ()
