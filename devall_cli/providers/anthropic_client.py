"""The `anthropic` provider's client: `POST {base_url}/v1/messages`.

The key is `api_key`, else `ANTHROPIC_API_KEY`; the URL `base_url`, else `ANTHROPIC_BASE_URL`,
else `https://api.anthropic.com` (as Anthropic's own client reads them). The key is sent as the
`x-api-key` header with `anthropic-version: 2023-06-01`. Retries, deadline, limits and error
mapping are the shared `ModelEndpoint`'s.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from devall_cli.providers.anthropic_messages import build_request, parse_answer
from devall_cli.providers.base import AssistantMessage, ModelSettings
from devall_cli.providers.http_client import (
    ModelEndpoint,
    RetryTiming,
    join_url,
    parse_json_object,
    url_path,
)
from devall_cli.redaction import Redactor
from devall_cli.tools.base import ToolSpec

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
_VERSION = re.compile(r"/v\d+$")


class AnthropicProvider:
    """Messages API client for one node run."""

    def __init__(
        self,
        config: ModelSettings,
        *,
        environ: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        redactor: Redactor | None = None,
        backoff_base: float | None = None,
        backoff_cap: float | None = None,
        retry_after_cap: float | None = None,
    ) -> None:
        env = environ if environ is not None else os.environ
        base_url = config.base_url or env.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        api_key = config.api_key or env.get(KEY_ENV) or None
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        self._endpoint = ModelEndpoint(
            messages_url(base_url),
            headers=headers,
            secrets=(api_key or "",),
            redactor=redactor,
            retries=config.retries,
            timeout=config.timeout,
            transport=transport,
            timing=RetryTiming.of(backoff_base, backoff_cap, retry_after_cap),
        )
        self.display_url = self._endpoint.display_url
        self._model = config.name
        self._params = dict(config.params)
        self._ids = itertools.count(1)

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """Send the conversation; return the model's next turn."""
        body = build_request(self._model, messages, tools, self._params)
        content = await self._endpoint.post_json(body)
        data = parse_json_object(content, self.display_url)
        return parse_answer(data, self.display_url, self._new_id)

    async def aclose(self) -> None:
        """Close the HTTP connections (idempotent)."""
        await self._endpoint.aclose()

    def _new_id(self) -> str:
        return f"toolu_devall_{next(self._ids)}"


def messages_url(base_url: str) -> str:
    """`{base_url}/v1/messages`; a base URL ending in a version (`.../v1`) keeps it."""
    version = "" if _VERSION.search(url_path(base_url)) else "/v1"
    return join_url(base_url, f"{version}/messages")
