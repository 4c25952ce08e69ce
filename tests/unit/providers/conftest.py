"""Fixtures of the provider tests: the fake LLM server and quick-retrying providers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from devall_cli.config.model import frozen_mapping
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.providers.http_client import ModelEndpoint
from devall_cli.providers.openai import OpenAIProvider
from tests.servers.fake_llm import fake_llm as fake_llm  # re-exported fixture

SECRET_KEY = "sk-test-0123456789abcdef"

MakeProvider = Callable[..., OpenAIProvider]


def agent_config(base_url: str | None, **overrides: Any) -> AgentConfig:
    """An openai agent config pointing at `base_url`."""
    params = overrides.pop("params", {})
    values: dict[str, Any] = {"api_key": SECRET_KEY, "retries": 2, "timeout": 5.0}
    values.update(overrides)
    return AgentConfig(
        provider="openai",
        name="gpt-test",
        base_url=base_url,
        params=frozen_mapping(params),
        **values,
    )


@pytest.fixture
async def make_openai() -> AsyncIterator[MakeProvider]:
    """Build OpenAIProviders with millisecond backoff; all are closed after the test."""
    made: list[OpenAIProvider] = []

    def build(config: AgentConfig, **options: Any) -> OpenAIProvider:
        options.setdefault("backoff_base", 0.001)
        options.setdefault("environ", {})
        provider = OpenAIProvider(config, **options)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.aclose()


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds the endpoint chose to wait before each retry, in order (it still waits)."""
    chosen: list[float] = []
    backoff = ModelEndpoint._backoff
    retry_delay = ModelEndpoint._retry_delay

    def recorded_backoff(self: ModelEndpoint, attempt: int) -> float:
        chosen.append(backoff(self, attempt))
        return chosen[-1]

    def recorded_retry_delay(self: ModelEndpoint, attempt: int, response: Any) -> float:
        count = len(chosen)
        delay = retry_delay(self, attempt, response)
        del chosen[count:]  # a backoff it fell back on is the same wait
        chosen.append(delay)
        return delay

    monkeypatch.setattr(ModelEndpoint, "_backoff", recorded_backoff)
    monkeypatch.setattr(ModelEndpoint, "_retry_delay", recorded_retry_delay)
    return chosen
