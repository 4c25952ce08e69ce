"""The openai provider against the fake Chat Completions server, over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import time

import pytest

from devall_cli.config.model import frozen_mapping
from devall_cli.errors import ExitCode, LLMHTTPError, LLMUnreachableError
from devall_cli.tools.base import ToolSpec
from tests.helpers import free_port
from tests.servers.fake_llm import FakeLLM, FakeReply
from tests.unit.providers.conftest import SECRET_KEY, MakeProvider, agent_config

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Pick a number."},
]


def rand_tool() -> ToolSpec:
    return ToolSpec(
        name="mcp_rand_num",
        original_name="rand_num",
        description="Random integer in [a, b].",
        input_schema=frozen_mapping(
            {
                "type": "object",
                "properties": frozen_mapping({"a": {"type": "integer"}, "b": {"type": "integer"}}),
                "required": ("a", "b"),
            }
        ),
        source="mcp_local",
        server="python server.py",
        source_id="local-1",
    )


# --- request shape ------------------------------------------------------------------------------


async def test_request_has_url_auth_model_messages_tools_and_params(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    params = {"temperature": 0.2, "max_tokens": 64, "stop": ["END"], "timeout": 9, "retries": 1}
    provider = make_openai(agent_config(fake_llm.base_url, params=params))

    await provider.complete(MESSAGES, [rand_tool()])

    (request,) = fake_llm.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET_KEY}"
    assert request.headers["content-type"] == "application/json"
    body = request.body
    assert body["model"] == "gpt-test"
    assert body["messages"] == MESSAGES
    assert body["tool_choice"] == "auto"
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "mcp_rand_num",
                "description": "Random integer in [a, b].",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            },
        }
    ]
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.2, 64, ["END"])
    for reserved in ("tool_loop_limit", "timeout", "retries", "max_result_chars"):
        assert reserved not in body


async def test_without_tools_or_key_the_body_and_headers_stay_minimal(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    provider = make_openai(agent_config(fake_llm.base_url + "/", api_key=None))

    await provider.complete(MESSAGES, [])

    (request,) = fake_llm.requests
    assert request.path == "/v1/chat/completions"  # trailing slash of base_url stripped
    assert "authorization" not in request.headers
    assert "tools" not in request.body
    assert "tool_choice" not in request.body


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, {"temperature": 0.7}),  # ChatDev's default (its openai_provider.py)
        ({"temperature": 0}, {"temperature": 0}),
        ({"temperature": None}, {}),  # null: no temperature at all, for models that refuse one
        ({"max_output_tokens": 99}, {"temperature": 0.7, "max_tokens": 99}),
        ({"max_output_tokens": 99, "max_tokens": 5}, {"temperature": 0.7, "max_tokens": 5}),
    ],
)
async def test_temperature_and_token_limit_are_sent_as_chatdev_sends_them(
    fake_llm: FakeLLM, make_openai: MakeProvider, params: dict[str, object], expected: dict
) -> None:
    provider = make_openai(agent_config(fake_llm.base_url, params=params))

    await provider.complete(MESSAGES, [])

    body = fake_llm.requests[0].body
    sent = {
        key: body[key] for key in ("temperature", "max_tokens", "max_output_tokens") if key in body
    }
    assert sent == expected


async def test_params_cannot_replace_model_messages_or_streaming(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    params = {"model": "other", "messages": [], "stream": True, "seed": 7}
    provider = make_openai(agent_config(fake_llm.base_url, params=params))

    await provider.complete(MESSAGES, [])

    body = fake_llm.requests[0].body
    assert (body["model"], body["messages"], body["seed"]) == ("gpt-test", MESSAGES, 7)
    assert "stream" not in body


async def test_base_url_and_key_default_to_the_environment(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    environ = {"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-from-env"}
    provider = make_openai(agent_config(None, api_key=None), environ=environ)

    reply = await provider.complete(MESSAGES, [])

    assert reply.content == "ok"
    assert fake_llm.requests[0].headers["authorization"] == "Bearer sk-from-env"


async def test_config_values_win_over_the_environment(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-from-env"}
    provider = make_openai(agent_config(fake_llm.base_url), environ=environ)

    await provider.complete(MESSAGES, [])

    assert fake_llm.requests[0].headers["authorization"] == f"Bearer {SECRET_KEY}"


# --- parsing ------------------------------------------------------------------------------------


async def test_text_answer_and_usage_are_parsed(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    usage = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    fake_llm.enqueue(FakeReply(message={"role": "assistant", "content": "Forty-two."}, usage=usage))
    provider = make_openai(agent_config(fake_llm.base_url))

    reply = await provider.complete(MESSAGES, [])

    assert reply.content == "Forty-two."
    assert reply.tool_calls == ()
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (11, 3)
    assert reply.usage.total_tokens == 14


async def test_tool_calls_are_parsed_and_round_trip_as_a_message(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    fake_llm.enqueue(
        FakeLLM.tool_call_reply([("mcp_rand_num", {"a": 1, "b": 6}), ("clock", "")], "Let me see.")
    )
    provider = make_openai(agent_config(fake_llm.base_url))

    reply = await provider.complete(MESSAGES, [rand_tool()])

    first, second = reply.tool_calls
    assert (first.id, first.name, dict(first.arguments)) == (
        "call_fake_1",
        "mcp_rand_num",
        {"a": 1, "b": 6},
    )
    assert first.error is None
    assert (second.name, dict(second.arguments), second.error) == ("clock", {}, None)
    message = reply.to_message()
    assert message["role"] == "assistant"
    assert message["content"] == "Let me see."
    assert message["tool_calls"][0] == {
        "id": "call_fake_1",
        "type": "function",
        "function": {"name": "mcp_rand_num", "arguments": '{"a": 1, "b": 6}'},
    }


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1,', "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ("3", "got int"),
    ],
)
async def test_bad_tool_arguments_become_a_tool_call_error(
    fake_llm: FakeLLM, make_openai: MakeProvider, raw: str, expected: str
) -> None:
    fake_llm.enqueue(FakeLLM.tool_call_reply([("mcp_rand_num", raw)]))
    provider = make_openai(agent_config(fake_llm.base_url))

    (call,) = (await provider.complete(MESSAGES, [rand_tool()])).tool_calls

    assert call.error is not None and expected in call.error
    assert dict(call.arguments) == {}
    assert call.raw_arguments == raw
    assert call.name == "mcp_rand_num"


async def test_malformed_json_body_is_an_invalid_response_without_retry(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    fake_llm.enqueue(FakeLLM.malformed_reply())
    provider = make_openai(agent_config(fake_llm.base_url))

    with pytest.raises(LLMHTTPError, match="invalid response") as caught:
        await provider.complete(MESSAGES, [])

    assert caught.value.exit_code == ExitCode.REMOTE
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"id": "x"}, "no choices"),
        ({"choices": []}, "no choices"),
        ({"error": {"message": "model overloaded"}}, "model overloaded"),
        ({"choices": [{"index": 0}]}, "no message"),
    ],
)
async def test_body_without_a_usable_choice_is_an_invalid_response(
    fake_llm: FakeLLM, make_openai: MakeProvider, body: dict[str, object], reason: str
) -> None:
    fake_llm.enqueue(FakeLLM.error_reply(200, body=body))
    provider = make_openai(agent_config(fake_llm.base_url))

    with pytest.raises(LLMHTTPError, match=f"invalid response.*{reason}"):
        await provider.complete(MESSAGES, [])


# --- retries and errors -------------------------------------------------------------------------


async def test_429_and_500_are_retried_until_success(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    fake_llm.enqueue(FakeLLM.error_reply(429), FakeLLM.error_reply(500), "third time")
    provider = make_openai(agent_config(fake_llm.base_url, retries=2))

    reply = await provider.complete(MESSAGES, [])

    assert reply.content == "third time"
    assert len(fake_llm.requests) == 3
    assert fake_llm.requests[0].body == fake_llm.requests[2].body


async def test_retry_after_seconds_is_honoured(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    fake_llm.enqueue(FakeLLM.error_reply(429, headers={"Retry-After": "1"}), "done")
    provider = make_openai(agent_config(fake_llm.base_url))

    started = time.monotonic()
    reply = await provider.complete(MESSAGES, [])
    elapsed = time.monotonic() - started

    assert reply.content == "done"
    assert elapsed >= 0.95


async def test_retry_without_retry_after_uses_the_short_backoff(
    fake_llm: FakeLLM, make_openai: MakeProvider, waits: list[float]
) -> None:
    fake_llm.enqueue(FakeLLM.error_reply(503), "done")
    provider = make_openai(agent_config(fake_llm.base_url))  # backoff base: 1 ms

    await provider.complete(MESSAGES, [])

    assert len(waits) == 1 and 0.0005 <= waits[0] <= 0.001  # half to all of the base, jittered


async def test_retry_after_is_capped(
    fake_llm: FakeLLM, make_openai: MakeProvider, waits: list[float]
) -> None:
    fake_llm.enqueue(FakeLLM.error_reply(503, headers={"Retry-After": "3600"}), "done")
    provider = make_openai(agent_config(fake_llm.base_url), retry_after_cap=0.2)

    started = time.monotonic()
    reply = await provider.complete(MESSAGES, [])

    assert reply.content == "done"
    assert waits == [0.2]  # the cap, not the hour asked for
    assert time.monotonic() - started >= 0.15  # and it did wait


async def test_retries_exhausted_raise_llm_http_error_naming_the_url_not_the_key(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    fake_llm.enqueue(*[FakeLLM.error_reply(503, body=f"busy, key {SECRET_KEY}")] * 3)
    provider = make_openai(agent_config(fake_llm.base_url, retries=2))

    with pytest.raises(LLMHTTPError) as caught:
        await provider.complete(MESSAGES, [])

    error = caught.value
    assert error.exit_code == ExitCode.REMOTE
    assert int(error.exit_code) == 5
    assert error.status_code == 503
    assert f"{fake_llm.base_url}/chat/completions" in error.message
    assert "503" in error.message and "after 3 attempts" in error.message
    assert "busy, key ***" in error.message
    assert SECRET_KEY not in str(error)
    assert len(fake_llm.requests) == 3


async def test_400_is_not_retried(fake_llm: FakeLLM, make_openai: MakeProvider) -> None:
    fake_llm.enqueue(FakeLLM.error_reply(400, body={"error": {"message": "bad 'tools' field"}}))
    provider = make_openai(agent_config(fake_llm.base_url, retries=5))

    with pytest.raises(LLMHTTPError) as caught:
        await provider.complete(MESSAGES, [])

    assert caught.value.status_code == 400
    assert "bad 'tools' field" in caught.value.message
    assert len(fake_llm.requests) == 1


async def test_unreachable_endpoint_raises_llm_unreachable_error(
    make_openai: MakeProvider,
) -> None:
    base_url = f"http://user:hunter2@127.0.0.1:{free_port()}/v1?api-version=1&sig=qs-secret"
    provider = make_openai(agent_config(base_url, retries=1))

    with pytest.raises(LLMUnreachableError) as caught:
        await provider.complete(MESSAGES, [])

    error = caught.value
    assert error.exit_code == ExitCode.CONNECTION
    assert int(error.exit_code) == 4
    assert "http://127.0.0.1:" in error.message and "/v1/chat/completions" in error.message
    assert "after 2 attempts" in error.message
    for secret in (SECRET_KEY, "hunter2", "user:", "qs-secret"):
        assert secret not in str(error)


async def test_slow_answers_beyond_the_timeout_are_retried_then_unreachable(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    # Replies a minute late: only the 0.3 s timeout ends each attempt (30 s guards a hang).
    fake_llm.enqueue(FakeLLM.slow_reply(60), FakeLLM.slow_reply(60))
    provider = make_openai(agent_config(fake_llm.base_url, timeout=0.3, retries=1))

    with pytest.raises(LLMUnreachableError, match="timed out") as caught:
        await asyncio.wait_for(provider.complete(MESSAGES, []), 30)

    assert len(fake_llm.requests) == 2
    assert SECRET_KEY not in str(caught.value)


async def test_a_slow_answer_is_retried_and_the_next_one_used(
    fake_llm: FakeLLM, make_openai: MakeProvider
) -> None:
    fake_llm.enqueue(FakeLLM.slow_reply(3), "in time")
    provider = make_openai(agent_config(fake_llm.base_url, timeout=0.3, retries=1))

    reply = await provider.complete(MESSAGES, [])

    assert reply.content == "in time"


async def test_a_malformed_base_url_is_an_unreachable_error(make_openai: MakeProvider) -> None:
    provider = make_openai(agent_config("http://[::1/v1", retries=3))

    with pytest.raises(LLMUnreachableError, match="invalid URL"):
        await provider.complete(MESSAGES, [])
