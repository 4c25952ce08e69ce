"""make_provider picks the provider by name and keeps httpx out of `devall validate`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from devall_cli.errors import ConfigError
from devall_cli.nodes.agent_settings import AgentConfig
from devall_cli.providers import make_provider
from devall_cli.providers.openai import OpenAIProvider
from devall_cli.providers.scripted import ScriptedProvider, ScriptedTurn
from tests.conftest import REPO_ROOT
from tests.servers.fake_llm import FakeLLM


async def test_scripted_config_gives_a_scripted_provider() -> None:
    turns = (ScriptedTurn(content="hi"),)
    config = AgentConfig(provider="scripted", name="script", provider_config=turns)
    provider = make_provider(config)
    assert isinstance(provider, ScriptedProvider)
    assert (await provider.complete([], [])).content == "hi"


async def test_openai_config_reads_the_given_environment(fake_llm: FakeLLM) -> None:
    config = AgentConfig(provider="openai", name="m")
    provider = make_provider(config, environ={"OPENAI_BASE_URL": fake_llm.base_url})
    try:
        assert isinstance(provider, OpenAIProvider)
        assert (await provider.complete([{"role": "user", "content": "hi"}], [])).content == "ok"
    finally:
        await provider.aclose()
    assert "authorization" not in fake_llm.requests[0].headers


async def test_openai_config_defaults_to_the_process_environment(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-process")
    provider = make_provider(AgentConfig(provider="openai", name="m"))
    try:
        await provider.complete([{"role": "user", "content": "hi"}], [])
    finally:
        await provider.aclose()
    assert fake_llm.requests[0].headers["authorization"] == "Bearer sk-process"


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'claude'"):
        make_provider(AgentConfig(provider="claude", name="m"))


def test_importing_providers_and_making_a_scripted_one_does_not_import_httpx() -> None:
    code = (
        "import sys\n"
        "from devall_cli.providers.base import ModelSettings\n"
        "from devall_cli.providers import PROVIDERS, make_provider\n"
        "assert {'openai', 'gemini', 'anthropic', 'scripted'} <= set(PROVIDERS.names())\n"
        "make_provider(ModelSettings(provider='scripted', name='s'))\n"
        "print('httpx' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
