"""The `gemini` provider's client: `POST {base_url}/v1beta/models/{name}:generateContent`.

Where the key and the URL come from follows Google's own client (google-genai, which ChatDev
uses): `api_key`, else `GOOGLE_API_KEY`, else `GEMINI_API_KEY`; `base_url`, else
`GOOGLE_GEMINI_BASE_URL`, else `https://generativelanguage.googleapis.com`. The key is sent as
the `x-goog-api-key` header, never in the URL. Retries, deadline, limits and error mapping are
the shared `ModelEndpoint`'s.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from devall_cli.providers.base import AssistantMessage, ModelSettings
from devall_cli.providers.gemini import request_fields
from devall_cli.providers.gemini_messages import build_request, parse_answer
from devall_cli.providers.http_client import (
    ModelEndpoint,
    RetryTiming,
    join_url,
    parse_json_object,
    url_path,
)
from devall_cli.redaction import Redactor
from devall_cli.tools.base import ToolSpec

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"  # google-genai's default for the Gemini API
KEY_ENV = ("GOOGLE_API_KEY", "GEMINI_API_KEY")  # in this order, as google-genai reads them
BASE_URL_ENV = "GOOGLE_GEMINI_BASE_URL"
_VERSION = re.compile(r"/v\d+(?:alpha|beta)?\d*$")


class GeminiProvider:
    """generateContent client for one node run."""

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
        api_key = config.api_key or next((env[n] for n in KEY_ENV if env.get(n)), None)
        self._endpoint = ModelEndpoint(
            generate_url(base_url, config.name),
            headers={"x-goog-api-key": api_key} if api_key else {},
            secrets=(api_key or "",),
            redactor=redactor,
            retries=config.retries,
            timeout=config.timeout,
            transport=transport,
            timing=RetryTiming.of(backoff_base, backoff_cap, retry_after_cap),
        )
        self.display_url = self._endpoint.display_url
        self._fields = request_fields(config.params)
        self._ids = itertools.count(1)

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """Send the conversation; return the model's next turn."""
        body = build_request(messages, tools, self._fields)
        content = await self._endpoint.post_json(body)
        data = parse_json_object(content, self.display_url)
        return parse_answer(data, self.display_url, self._new_id)

    async def aclose(self) -> None:
        """Close the HTTP connections (idempotent)."""
        await self._endpoint.aclose()

    def _new_id(self) -> str:
        return f"call_{next(self._ids)}"


def generate_url(base_url: str, model: str) -> str:
    """`{base_url}/v1beta/models/{model}:generateContent`; a base URL naming a version keeps it."""
    name = model.strip()
    if not name.startswith(("models/", "tunedModels/")):
        name = f"models/{name}"
    version = "" if _VERSION.search(url_path(base_url)) else f"/{API_VERSION}"
    return join_url(base_url, f"{version}/{quote(name, safe='/-._~')}:generateContent")
