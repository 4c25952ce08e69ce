"""Model providers, each a registered descriptor (`registry.PROVIDERS`).

Built in: `openai` (any OpenAI-compatible endpoint), `gemini` (Google's generateContent API),
`anthropic` (Anthropic's Messages API) and `scripted` (offline). A descriptor module imports its
HTTP client only when a provider is made, so `devall validate` and `devall --help` never load
httpx. The HTTP clients share `http_client.ModelEndpoint` (retries, deadline, limits, errors).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from devall_cli.errors import ConfigError
from devall_cli.providers.base import AssistantMessage, ModelSettings, Provider, ToolCall, Usage
from devall_cli.providers.registry import PROVIDERS, ProviderType
from devall_cli.redaction import Redactor

if TYPE_CHECKING:
    import httpx

__all__ = [
    "PROVIDERS",
    "AssistantMessage",
    "Provider",
    "ProviderType",
    "ToolCall",
    "Usage",
    "make_provider",
]


def make_provider(
    config: ModelSettings,
    *,
    environ: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    redactor: Redactor | None = None,
    state: dict[str, Any] | None = None,
) -> Provider:
    """A fresh provider for one node visit of an agent with this config.

    `state` is the node's state, kept across its visits (a scripted agent's place in its
    script); providers that keep nothing ignore it.
    """
    kind = PROVIDERS.get(config.provider)
    if kind is None:
        raise ConfigError(PROVIDERS.unknown_message(config.provider))
    return kind.make(
        config,
        environ=os.environ if environ is None else environ,
        transport=transport,
        redactor=redactor or Redactor(),
        state=state,
    )
