"""Providers are registered descriptors: each says which agent keys it reads and makes clients.

`PROVIDERS` imports the built-in descriptor modules on first use. A descriptor module stays
light (no httpx): it imports its client module inside `make`, so `devall validate` and
`devall --help` never load an HTTP stack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from devall_cli.config.json_shapes import Schema, no_shapes
from devall_cli.config.schema import Checker
from devall_cli.config.yaml_source import KeyPath
from devall_cli.kinds import Registry

if TYPE_CHECKING:
    import httpx

    from devall_cli.providers.base import ModelSettings, Provider
    from devall_cli.redaction import Redactor


class ProviderFactory:
    """The signature of `ProviderType.make` (documentation only)."""

    def __call__(
        self,
        config: ModelSettings,
        *,
        environ: Mapping[str, str],
        redactor: Redactor,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> Provider:
        """A fresh client for one node visit."""
        raise NotImplementedError


def _nothing(ck: Checker, config: dict[str, Any], path: KeyPath) -> Any:
    return None


@dataclass(frozen=True)
class ProviderType:
    """One model provider."""

    name: str
    summary: str
    make: Callable[..., Provider]  # see ProviderFactory
    keys: frozenset[str] = frozenset()  # agent config keys only this provider reads
    # Reads those keys into `ModelSettings.provider_config`; returns None after recording issues.
    parse: Callable[[Checker, dict[str, Any], KeyPath], Any] = _nothing
    name_required: bool = True  # whether the agent must name a model
    # Environment variables the provider takes its API key from when the agent sets none: their
    # values are masked in every output, like the secrets the workflow names.
    secret_env: tuple[str, ...] = ()
    # `devall schema`: the values of its own agent config keys that are nested blocks
    shapes: Callable[[], dict[str, Schema]] = no_shapes


PROVIDERS: Registry[ProviderType] = Registry(
    "provider",
    (
        "devall_cli.providers.openai_compatible",
        "devall_cli.providers.scripted",
        "devall_cli.providers.gemini",
        "devall_cli.providers.anthropic",
    ),
)


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    """The API keys found in `environ` under a name some provider reads its key from."""
    names = {name for kind in PROVIDERS.all().values() for name in kind.secret_env}
    return [environ[name] for name in sorted(names) if environ.get(name)]
