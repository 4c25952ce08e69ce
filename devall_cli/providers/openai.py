"""The `openai` provider: any OpenAI-compatible Chat Completions endpoint, over httpx.

This is the one place where httpx exceptions become devall errors (`translate_httpx_error`).
Transient failures (connection errors, timeouts, 408/409/425/429/5xx) are retried with exponential
backoff and jitter, honouring `Retry-After`; what is left after the retries is raised as
`LLMUnreachableError` (exit 4) or `LLMHTTPError` (exit 5). Messages name the endpoint URL without
userinfo or query, and never the API key.

`params.timeout` is a deadline for each whole attempt, reading the answer included: httpx's own
timeouts bound each read, which an endpoint trickling one byte at a time never lets expire. An
answer longer than `limits.MODEL_REPLY_BYTES` is refused as soon as that is known.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from devall_cli import __version__, limits
from devall_cli.config.model import RESERVED_PARAMS, AgentConfig
from devall_cli.errors import DevallError, LLMHTTPError, LLMUnreachableError
from devall_cli.providers.base import (
    AssistantMessage,
    ToolCall,
    Usage,
    content_text,
    dump_json,
    tool_call_from_json,
)
from devall_cli.redaction import Redactor
from devall_cli.text import clean_text, clean_value
from devall_cli.tools import json_limits
from devall_cli.tools.base import ToolSpec

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Module-level so that tests (of this module or of the engine) can shorten the waits.
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
RETRY_AFTER_CAP = 30.0
RETRY_STATUSES = frozenset({408, 409, 425, 429, *range(500, 600)})
# Body keys devall owns: params may not replace the conversation or switch to streaming.
PROTECTED_KEYS = frozenset({"model", "messages", "stream", *RESERVED_PARAMS})
# The httpx exceptions `complete` catches; every subclass maps to a DevallError.
CAUGHT_HTTPX_ERRORS: tuple[type[Exception], ...] = (httpx.HTTPError, httpx.InvalidURL)
_RETRYABLE_HTTPX_ERRORS = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
    httpx.ProxyError,
)
_EXCERPT_CHARS = 200


class DeadlineExceededError(httpx.TimeoutException):
    """An attempt did not complete, answer included, within `params.timeout`."""


@dataclass(frozen=True)
class Answer:
    """One HTTP answer of the endpoint, its body read (within the size limit)."""

    status_code: int
    headers: httpx.Headers
    content: bytes


class OpenAIProvider:
    """Chat Completions client for one node run."""

    def __init__(
        self,
        config: AgentConfig,
        *,
        environ: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        redactor: Redactor | None = None,
        backoff_base: float | None = None,
        backoff_cap: float | None = None,
        retry_after_cap: float | None = None,
    ) -> None:
        env = environ if environ is not None else os.environ
        base_url = config.base_url or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._url = completions_url(base_url)
        self._api_key = config.api_key or env.get("OPENAI_API_KEY") or None
        # Error excerpts are cut short here, so they are masked here first.
        self._redactor = (redactor or Redactor()).with_secrets([self._api_key or ""])
        self.display_url = safe_url(self._url)
        self._model = config.name
        self._params = {k: v for k, v in config.params.items() if k not in PROTECTED_KEYS}
        self._retries = max(0, config.retries)
        self._deadline = config.timeout if config.timeout > 0 else None
        self._timeout = httpx.Timeout(self._deadline)
        self._backoff_base = BACKOFF_BASE if backoff_base is None else backoff_base
        self._backoff_cap = BACKOFF_CAP if backoff_cap is None else backoff_cap
        self._retry_after_cap = RETRY_AFTER_CAP if retry_after_cap is None else retry_after_cap
        self._headers = {"Content-Type": "application/json", "User-Agent": f"devall/{__version__}"}
        if self._api_key:
            self._headers["Authorization"] = f"Bearer {self._api_key}"
        self._client = httpx.AsyncClient(transport=transport, timeout=self._timeout)

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """Send the conversation; return the model's next turn."""
        body = build_request_body(self._model, messages, tools, self._params)
        # Text entering devall is cleaned where it enters; this is the last line of defence.
        payload = clean_text(dump_json(body)).encode("utf-8")
        response = await self._post_with_retries(payload)
        return parse_completion(response.content, self.display_url)

    async def aclose(self) -> None:
        """Close the HTTP connections (idempotent)."""
        await self._client.aclose()

    async def _post_with_retries(self, payload: bytes) -> Answer:
        attempts = self._retries + 1
        for attempt in range(1, attempts + 1):
            final = attempt == attempts
            try:
                response = await self._post(payload, read_body=final)
            except CAUGHT_HTTPX_ERRORS as exc:
                if final or not isinstance(exc, _RETRYABLE_HTTPX_ERRORS):
                    raise self._translate(exc, attempt) from exc
                await asyncio.sleep(self._backoff(attempt))
                continue
            if response.status_code in RETRY_STATUSES and not final:
                await asyncio.sleep(self._retry_delay(attempt, response))
                continue
            if response.status_code >= 300:
                raise self._http_error(response, attempt)
            return response
        raise AssertionError("the last attempt always returns or raises")  # pragma: no cover

    async def _post(self, payload: bytes, *, read_body: bool) -> Answer:
        """One attempt, body included, within the deadline; a body to retry on is not read."""
        try:
            async with asyncio.timeout(self._deadline):
                async with self._client.stream(
                    "POST", self._url, content=payload, headers=self._headers, timeout=self._timeout
                ) as response:
                    status = response.status_code
                    if status in RETRY_STATUSES and not read_body:
                        content = b""
                    elif status >= 300:
                        content = await _read_some(response, limits.MODEL_ERROR_BODY_BYTES)
                    else:
                        content = await self._read_reply(response)
                    return Answer(status, response.headers, content)
        except TimeoutError:
            reason = f"no complete answer within {self._deadline:g} s"
            raise DeadlineExceededError(reason) from None

    async def _read_reply(self, response: httpx.Response) -> bytes:
        """The whole body, refused (LLMHTTPError) once it proves longer than the limit."""
        limit = limits.MODEL_REPLY_BYTES
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_long(f"{declared} bytes")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                raise self._too_long(f"more than {limit} bytes")
        return bytes(body)

    def _too_long(self, size: str) -> LLMHTTPError:
        return LLMHTTPError(
            f"model endpoint {self.display_url} answered with {size}; devall reads at most "
            f"{limits.MODEL_REPLY_BYTES} bytes of a model's answer"
        )

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: base * 2^(attempt-1), capped, times 0.5 to 1."""
        delay: float = min(self._backoff_cap, self._backoff_base * 2.0 ** (attempt - 1))
        return delay * random.uniform(0.5, 1.0)

    def _retry_delay(self, attempt: int, response: Answer) -> float:
        asked = parse_retry_after(response.headers.get("Retry-After"))
        if asked is None:
            return self._backoff(attempt)
        return min(asked, self._retry_after_cap)

    def _translate(self, exc: Exception, attempts: int) -> DevallError:
        return translate_httpx_error(exc, self.display_url, attempts=attempts)

    def _http_error(self, response: Answer, attempts: int) -> LLMHTTPError:
        status = response.status_code
        excerpt = response_excerpt(response.content, self._redactor)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        message = f"model endpoint {self.display_url} answered HTTP {status}{tries}"
        return LLMHTTPError(f"{message}: {excerpt}" if excerpt else message, status_code=status)


# --- request ------------------------------------------------------------------------------------


def build_request_body(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec],
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """The Chat Completions request body."""
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    if tools:
        body["tools"] = [tool_definition(tool) for tool in tools]
        body["tool_choice"] = "auto"
    body.update({k: v for k, v in params.items() if k not in PROTECTED_KEYS})
    return body


def tool_definition(tool: ToolSpec) -> dict[str, Any]:
    """A ToolSpec as an OpenAI `function` tool."""
    # The API wants an object schema even for a tool without parameters.
    schema = tool.input_schema or {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": schema},
    }


# --- response -----------------------------------------------------------------------------------


def parse_completion(content: bytes, display_url: str) -> AssistantMessage:
    """The assistant turn of a Chat Completions response body."""
    try:
        # A "\ud800" escape is valid JSON but a lone surrogate, which no UTF-8 writer takes.
        data = clean_value(json_limits.loads(content))
    except json_limits.JsonLimitError as exc:
        raise _invalid(display_url, f"the body {exc}") from exc
    except ValueError as exc:
        raise _invalid(display_url, f"body is not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise _invalid(display_url, "body is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        # Some gateways answer 200 with an `error` object instead of an HTTP status.
        reason = _error_text(data.get("error")) or "no choices"
        raise _invalid(display_url, reason)
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise _invalid(display_url, "choices[0] has no message")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise _invalid(display_url, "tool_calls is not a list")
    text = message.get("content")
    return AssistantMessage(
        content=None if text is None else content_text(text),
        tool_calls=tuple(_tool_call(call, n) for n, call in enumerate(raw_calls, start=1)),
        usage=_usage(data.get("usage")),
    )


def _tool_call(call: Any, number: int) -> ToolCall:
    call = call if isinstance(call, dict) else {}
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    call_id = str(call.get("id") or f"call_{number}")
    name = str(function.get("name") or "")
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        # Some servers (Ollama among them) send the object itself rather than its JSON text.
        return ToolCall(call_id, name, arguments, dump_json(arguments))
    return tool_call_from_json(call_id, name, "" if arguments is None else str(arguments))


def _usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage()

    def count(key: str) -> int:
        value = data.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    prompt, completion = count("prompt_tokens"), count("completion_tokens")
    return Usage(prompt, completion, count("total_tokens") or prompt + completion)


def _invalid(display_url: str, reason: str) -> LLMHTTPError:
    return LLMHTTPError(f"invalid response from model endpoint {display_url}: {reason}")


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or "")
    return "" if error is None else str(error)


# --- errors -------------------------------------------------------------------------------------


def translate_httpx_error(
    exc: Exception, display_url: str, *, attempts: int = 1
) -> DevallError:
    """The DevallError for an httpx exception raised while talking to `display_url`.

    Secrets in the message are masked where it is printed or written (the run's Redactor).
    """
    where = f"model endpoint {display_url}"
    reason = str(exc) or type(exc).__name__
    tail = f" (after {attempts} attempts)" if attempts > 1 else ""
    if isinstance(exc, httpx.TimeoutException):
        why = str(exc) if isinstance(exc, DeadlineExceededError) else type(exc).__name__
        return LLMUnreachableError(f"{where} timed out ({why}){tail}")
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return LLMUnreachableError(f"invalid URL for {where}: {reason}")
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        return LLMHTTPError(f"{where} answered HTTP {status}{tail}", status_code=status)
    if isinstance(exc, httpx.DecodingError | httpx.TooManyRedirects):
        return LLMHTTPError(f"invalid response from {where}: {reason}")
    if isinstance(exc, httpx.TransportError):
        return LLMUnreachableError(f"cannot reach {where}: {reason}{tail}")
    return LLMHTTPError(f"request to {where} failed: {reason}")


async def _read_some(response: httpx.Response, limit: int) -> bytes:
    """The first `limit` bytes of the body, or all of a shorter one; the rest is left unread."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= limit:
            break
    return bytes(body[:limit])


def completions_url(base_url: str) -> str:
    """`{base_url}/chat/completions`, keeping a query such as `?api-version=…` at the end."""
    try:
        parts = urlsplit(base_url.strip())
    except ValueError:
        # Left to httpx, whose InvalidURL is translated like every other request failure.
        return base_url.strip().rstrip("/") + "/chat/completions"
    path = parts.path.rstrip("/") + "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def safe_url(url: str) -> str:
    """`url` without userinfo, query or fragment, fit to show in messages and logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def response_excerpt(content: bytes, redactor: Redactor | None = None) -> str:
    """A short one-line excerpt of an error body: the API's error message, or the text."""
    text = content.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("error"):
        text = _error_text(data["error"])
    text = re.sub(r"\s+", " ", text).strip()
    return (redactor or Redactor()).preview(text, _EXCERPT_CHARS, tail="…")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait per a `Retry-After` header (seconds or HTTP date); None if unusable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)
