"""The gemini and anthropic clients against fake servers of their APIs, over HTTP on loopback.

What both share with the openai provider (retries, Retry-After, deadline, error mapping, masking)
is tested for each, through the same table.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from devall_cli.config.model import frozen_mapping
from devall_cli.errors import ExitCode, LLMHTTPError, LLMUnreachableError
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.providers import make_provider
from devall_cli.providers.anthropic_client import AnthropicProvider, messages_url
from devall_cli.providers.base import Provider
from devall_cli.providers.gemini_client import GeminiProvider, generate_url
from devall_cli.tools.base import ToolSpec
from tests.helpers import free_port
from tests.servers.fake_anthropic import FakeAnthropic
from tests.servers.fake_gemini import FakeGemini
from tests.servers.fake_llm import FakeLLM, FakeReply

KEY = "key-test-5f1e2d3c4b5a6978"


@dataclass(frozen=True)
class Api:
    """One provider and the fake of its API."""

    name: str
    fake: type[FakeLLM]
    client: type[Any]
    key_header: str
    key_env: str
    base_env: str


GEMINI = Api(
    "gemini",
    FakeGemini,
    GeminiProvider,
    "x-goog-api-key",
    "GEMINI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
)
ANTHROPIC = Api(
    "anthropic",
    FakeAnthropic,
    AnthropicProvider,
    "x-api-key",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
)


@pytest.fixture(params=[GEMINI, ANTHROPIC], ids=lambda api: api.name)
def api(request: pytest.FixtureRequest) -> Api:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def server(api: Api) -> Iterator[Any]:
    with api.fake(api_key=KEY) as fake:  # type: ignore[call-arg]
        yield fake


def config(api: Api, base_url: str | None, **overrides: Any) -> AgentConfig:
    params = overrides.pop("params", {})
    values: dict[str, Any] = {"api_key": KEY, "retries": 2, "timeout": 5.0}
    values.update(overrides)
    return AgentConfig(
        provider=api.name,
        name="model-test",
        base_url=base_url,
        params=frozen_mapping(params),
        **values,
    )


@pytest.fixture
async def make() -> AsyncIterator[Callable[..., Provider]]:
    """Build providers with millisecond backoff; all are closed after the test."""
    made: list[Provider] = []

    def build(api: Api, cfg: AgentConfig, **options: Any) -> Provider:
        options.setdefault("backoff_base", 0.001)
        options.setdefault("environ", {})
        provider = api.client(cfg, **options)
        made.append(provider)
        return provider  # type: ignore[no-any-return]

    yield build
    for provider in made:
        await provider.aclose()


def add_tool() -> ToolSpec:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    return ToolSpec("add", "add", "Add two integers.", frozen_mapping(schema), "mcp_local", "", "s")


HELLO = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Add 1 and 2."}]


# --- requests -----------------------------------------------------------------------------------


async def test_the_key_goes_in_its_header_and_never_in_the_url(
    api: Api, server: Any, make: Callable[..., Provider]
) -> None:
    provider = make(api, config(api, server.base_url))
    reply = await provider.complete(HELLO, [add_tool()])
    assert reply.content == "ok"
    (request,) = server.requests
    assert request.headers[api.key_header] == KEY
    assert KEY not in request.path and "key=" not in request.path
    assert request.headers["content-type"] == "application/json"
    if api is GEMINI:
        assert request.path == "/v1beta/models/model-test:generateContent"
        assert request.body["systemInstruction"]["parts"] == [{"text": "Be terse."}]
        assert request.body["tools"][0]["functionDeclarations"][0]["name"] == "add"
    else:
        assert request.path == "/v1/messages"
        assert request.headers["anthropic-version"] == "2023-06-01"
        assert request.body["model"] == "model-test" and request.body["system"] == "Be terse."
        assert request.body["tools"][0]["input_schema"]["required"] == ["a", "b"]


async def test_key_and_url_come_from_the_environment_when_the_agent_names_none(
    api: Api, server: Any, make: Callable[..., Provider]
) -> None:
    environ = {api.key_env: KEY, api.base_env: server.base_url}
    provider = make(api, config(api, None, api_key=None), environ=environ)
    await provider.complete(HELLO, [])
    assert server.requests[0].headers[api.key_header] == KEY


async def test_google_api_key_wins_over_gemini_api_key(make: Callable[..., Provider]) -> None:
    with FakeGemini(api_key=KEY) as fake:
        environ = {"GOOGLE_API_KEY": KEY, "GEMINI_API_KEY": "other-key-000"}
        provider = make(GEMINI, config(GEMINI, fake.base_url, api_key=None), environ=environ)
        await provider.complete(HELLO, [])
        assert fake.requests[0].headers["x-goog-api-key"] == KEY


def test_make_provider_builds_each_by_name(api: Api) -> None:
    provider = make_provider(config(api, "http://127.0.0.1:1"), environ={})
    assert isinstance(provider, api.client)


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("https://g.test", "https://g.test/v1beta/models/m:generateContent"),
        ("https://g.test/", "https://g.test/v1beta/models/m:generateContent"),
        ("https://g.test/v1", "https://g.test/v1/models/m:generateContent"),
        (
            "https://proxy.test/gemini/v1beta",
            "https://proxy.test/gemini/v1beta/models/m:generateContent",
        ),
    ],
)
def test_gemini_url(base: str, expected: str) -> None:
    assert generate_url(base, "m") == expected
    assert generate_url(base, "models/m") == expected


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("https://a.test", "https://a.test/v1/messages"),
        ("https://a.test/v1/", "https://a.test/v1/messages"),
        ("https://proxy.test/anthropic", "https://proxy.test/anthropic/v1/messages"),
    ],
)
def test_anthropic_url(base: str, expected: str) -> None:
    assert messages_url(base) == expected


# --- a tool-call turn, then the answer -----------------------------------------------------------


async def test_a_tool_call_turn_round_trips_its_ids(
    api: Api, server: Any, make: Callable[..., Provider]
) -> None:
    server.enqueue(api.fake.tool_call_reply([("add", {"a": 1, "b": 2})]), "It is 3.")  # type: ignore[attr-defined]
    provider = make(api, config(api, server.base_url))
    messages: list[dict[str, Any]] = list(HELLO)

    turn = await provider.complete(messages, [add_tool()])
    (call,) = turn.tool_calls
    assert (call.name, dict(call.arguments)) == ("add", {"a": 1, "b": 2})
    messages += [turn.to_message(), {"role": "tool", "tool_call_id": call.id, "content": "3"}]
    final = await provider.complete(messages, [add_tool()])

    assert final.content == "It is 3." and final.usage.total_tokens > 0
    second = server.requests[1].body
    if api is GEMINI:
        model, result = second["contents"][1:]
        assert model["parts"] == [{"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}}]
        assert result["parts"] == [
            {"functionResponse": {"name": "add", "response": {"result": "3"}}}
        ]
    else:
        assistant, result = second["messages"][1:]
        assert assistant["content"][0] == {
            "type": "tool_use",
            "id": "toolu_fake_1",
            "name": "add",
            "input": {"a": 1, "b": 2},
        }
        assert result["content"] == [
            {"type": "tool_result", "tool_use_id": "toolu_fake_1", "content": "3"}
        ]


async def test_gemini_call_ids_and_thought_signatures_go_back(
    make: Callable[..., Provider],
) -> None:
    with FakeGemini() as fake:
        fake.enqueue(
            FakeGemini.tool_call_reply([("add", {"a": 1, "b": 2})], ids=True, signature="sig")
        )
        provider = make(GEMINI, config(GEMINI, fake.base_url))
        turn = await provider.complete(HELLO, [add_tool()])
        (call,) = turn.tool_calls
        assert call.id == "fc_fake_1"
        tool = {"role": "tool", "tool_call_id": call.id, "content": "3"}
        await provider.complete([*HELLO, turn.to_message(), tool], [add_tool()])
        model, result = fake.requests[1].body["contents"][1:]
    assert model["parts"] == [
        {
            "functionCall": {"name": "add", "args": {"a": 1, "b": 2}, "id": "fc_fake_1"},
            "thoughtSignature": "sig-1",
        }
    ]
    assert result["parts"][0]["functionResponse"]["id"] == "fc_fake_1"


# --- errors ------------------------------------------------------------------------------------


async def test_429_with_retry_after_and_5xx_are_retried(
    api: Api, server: Any, make: Callable[..., Provider]
) -> None:
    server.enqueue(
        api.fake.error_reply(429, headers={"Retry-After": "0"}),
        api.fake.error_reply(503),
        "third time",
    )
    provider = make(api, config(api, server.base_url))
    assert (await provider.complete(HELLO, [])).content == "third time"
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [400, 403, 404])
async def test_client_errors_are_not_retried_and_quote_the_api_message(
    api: Api, server: Any, make: Callable[..., Provider], status: int
) -> None:
    server.enqueue(api.fake.error_reply(status))
    provider = make(api, config(api, server.base_url))
    with pytest.raises(LLMHTTPError) as caught:
        await provider.complete(HELLO, [])
    assert caught.value.exit_code == ExitCode.REMOTE and caught.value.status_code == status
    assert f"answered HTTP {status}: fake error {status}" in caught.value.message
    assert len(server.requests) == 1


async def test_a_wrong_key_is_refused_and_never_quoted(
    api: Api, server: Any, make: Callable[..., Provider]
) -> None:
    wrong = "key-wrong-99887766554433"
    provider = make(api, config(api, server.base_url, api_key=wrong))
    with pytest.raises(LLMHTTPError) as caught:
        await provider.complete(HELLO, [])
    assert caught.value.status_code in (400, 401)
    assert wrong not in caught.value.message and len(server.requests) == 1


async def test_a_key_echoed_in_an_error_body_is_masked(
    api: Api, server: Any, make: Callable[..., Provider]
) -> None:
    server.enqueue(api.fake.error_reply(400, body={"error": {"message": f"bad key {KEY} here"}}))
    provider = make(api, config(api, server.base_url))
    with pytest.raises(LLMHTTPError) as caught:
        await provider.complete(HELLO, [])
    assert KEY not in caught.value.message and "bad key *** here" in caught.value.message


async def test_retries_exhausted_name_the_attempts(
    api: Api, server: Any, make: Callable[..., Provider]
) -> None:
    server.enqueue(*[api.fake.error_reply(529 if api is ANTHROPIC else 500)] * 3)
    provider = make(api, config(api, server.base_url))
    with pytest.raises(LLMHTTPError, match="after 3 attempts"):
        await provider.complete(HELLO, [])
    assert len(server.requests) == 3


async def test_an_unreachable_endpoint_is_exit_4(api: Api, make: Callable[..., Provider]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    provider = make(api, config(api, url, retries=1))
    with pytest.raises(LLMUnreachableError) as caught:
        await provider.complete(HELLO, [])
    assert caught.value.exit_code == ExitCode.CONNECTION
    assert url in caught.value.message and KEY not in caught.value.message


async def test_the_deadline_bounds_a_slow_answer(
    api: Api, server: Any, make: Callable[..., Provider]
) -> None:
    server.enqueue(FakeReply(body=b"{}", delay=3.0))
    provider = make(api, config(api, server.base_url, retries=0, timeout=0.3))
    with pytest.raises(LLMUnreachableError, match="timed out"):
        await provider.complete(HELLO, [])


async def test_a_malformed_body_is_an_invalid_response(
    api: Api, server: Any, make: Callable[..., Provider]
) -> None:
    server.enqueue(FakeLLM.malformed_reply())
    provider = make(api, config(api, server.base_url))
    with pytest.raises(LLMHTTPError, match="invalid response"):
        await provider.complete(HELLO, [])
    assert len(server.requests) == 1
