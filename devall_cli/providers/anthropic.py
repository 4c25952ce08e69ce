"""The `anthropic` provider descriptor: Anthropic's Messages API (`/v1/messages`), over httpx.

This module stays light (no httpx): the client is imported only in `make`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from devall_cli.providers.registry import PROVIDERS, ProviderType

if TYPE_CHECKING:
    from devall_cli.providers.base import ModelSettings, Provider


def make_anthropic(config: ModelSettings, **options: Any) -> Provider:
    """An AnthropicProvider (httpx is imported here, when a run needs it)."""
    from devall_cli.providers.anthropic_client import AnthropicProvider

    options.pop("state", None)  # nothing to keep between visits
    return AnthropicProvider(config, **options)


ANTHROPIC = PROVIDERS.register(
    ProviderType(
        "anthropic",
        "Anthropic's Messages API (Claude): tool use, images in",
        make=make_anthropic,
        secret_env=("ANTHROPIC_API_KEY",),
    )
)
