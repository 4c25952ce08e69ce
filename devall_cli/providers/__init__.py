"""Model providers: `openai` (any OpenAI-compatible endpoint) and `scripted` (offline).

The openai module, and with it httpx, is imported only when an openai provider is made, so that
`devall validate` and `devall --help` never load httpx.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from devall_cli.config.model import AgentConfig
from devall_cli.errors import ConfigError
from devall_cli.providers.base import AssistantMessage, Provider, ToolCall, Usage
from devall_cli.providers.scripted import ScriptedProvider
from devall_cli.redaction import Redactor

if TYPE_CHECKING:
    import httpx

__all__ = ["AssistantMessage", "Provider", "ToolCall", "Usage", "make_provider"]


def make_provider(
    config: AgentConfig,
    *,
    environ: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    redactor: Redactor | None = None,
) -> Provider:
    """A fresh provider for one node run of an agent with this config."""
    if config.provider == "scripted":
        return ScriptedProvider(config.script)
    if config.provider == "openai":
        from devall_cli.providers.openai import OpenAIProvider

        env = os.environ if environ is None else environ
        return OpenAIProvider(config, environ=env, transport=transport, redactor=redactor)
    raise ConfigError(f"unknown provider {config.provider!r} (expected 'openai' or 'scripted')")
