"""The `openai` provider descriptor: any OpenAI-compatible Chat Completions endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from devall_cli.providers.registry import PROVIDERS, ProviderType

if TYPE_CHECKING:
    from devall_cli.providers.base import ModelSettings, Provider


def make_openai(config: ModelSettings, **options: Any) -> Provider:
    """An OpenAIProvider (httpx is imported here, when a run needs it)."""
    from devall_cli.providers.openai import OpenAIProvider

    environ: Mapping[str, str] | None = options.pop("environ", None)
    options.pop("state", None)  # nothing to keep between visits
    return OpenAIProvider(config, environ=environ, **options)


OPENAI = PROVIDERS.register(
    ProviderType(
        "openai",
        "any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama, LM Studio, ...)",
        make=make_openai,
        secret_env=("OPENAI_API_KEY",),
    )
)
