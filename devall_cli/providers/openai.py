"""The `openai` provider: any OpenAI-compatible Chat Completions endpoint, over httpx.

Retries, the whole-request deadline `params.timeout`, size limits and the mapping of httpx
errors to devall errors are the shared `http_client.ModelEndpoint`'s; this module builds the
Chat Completions request and reads its answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from devall_cli.providers.base import (
    RESERVED_PARAMS,
    AssistantMessage,
    ModelSettings,
    ToolCall,
    Usage,
    content_text,
    dump_json,
    tool_call_from_json,
)
from devall_cli.providers.http_client import (
    BACKOFF_BASE,
    BACKOFF_CAP,
    CAUGHT_HTTPX_ERRORS,
    RETRY_AFTER_CAP,
    RETRY_STATUSES,
    DeadlineExceededError,
    ModelEndpoint,
    RetryTiming,
    count,
    error_text,
    invalid_response,
    join_url,
    parse_json_object,
    parse_retry_after,
    response_excerpt,
    safe_url,
    translate_httpx_error,
)
from devall_cli.redaction import Redactor
from devall_cli.tools.base import ToolSpec

__all__ = [
    "BACKOFF_BASE",
    "BACKOFF_CAP",
    "CAUGHT_HTTPX_ERRORS",
    "RETRY_AFTER_CAP",
    "RETRY_STATUSES",
    "DeadlineExceededError",
    "OpenAIProvider",
    "build_request_body",
    "completions_url",
    "parse_completion",
    "parse_retry_after",
    "response_excerpt",
    "safe_url",
    "tool_definition",
    "translate_httpx_error",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# What ChatDev sends when a node's params set no temperature (its openai_provider.py).
DEFAULT_TEMPERATURE = 0.7
# Body keys devall owns: params may not replace the conversation or switch to streaming.
PROTECTED_KEYS = frozenset({"model", "messages", "stream", *RESERVED_PARAMS})


class OpenAIProvider:
    """Chat Completions client for one node run."""

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
        base_url = config.base_url or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        api_key = config.api_key or env.get("OPENAI_API_KEY") or None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._endpoint = ModelEndpoint(
            completions_url(base_url),
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
        self._params = {k: v for k, v in config.params.items() if k not in PROTECTED_KEYS}

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """Send the conversation; return the model's next turn."""
        body = build_request_body(self._model, messages, tools, self._params)
        content = await self._endpoint.post_json(body)
        return parse_completion(content, self.display_url)

    async def aclose(self) -> None:
        """Close the HTTP connections (idempotent)."""
        await self._endpoint.aclose()


# --- request ------------------------------------------------------------------------------------


def build_request_body(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec],
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """The Chat Completions request body, as ChatDev's Chat Completions path builds it.

    ChatDev sends `temperature: 0.7` unless the node's params set one (`temperature: null`
    sends none: for models that accept only their own), and sends `max_output_tokens` as
    `max_tokens` (an explicit `max_tokens` wins).
    """
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    rest = {k: v for k, v in params.items() if k not in PROTECTED_KEYS}
    temperature = rest.pop("temperature", DEFAULT_TEMPERATURE)
    if temperature is not None:
        body["temperature"] = temperature
    max_output_tokens = rest.pop("max_output_tokens", None)
    if max_output_tokens is not None and "max_tokens" not in rest:
        rest["max_tokens"] = max_output_tokens
    if tools:
        body["tools"] = [tool_definition(tool) for tool in tools]
        body["tool_choice"] = "auto"
    body.update(rest)
    return body


def tool_definition(tool: ToolSpec) -> dict[str, Any]:
    """A ToolSpec as an OpenAI `function` tool."""
    # The API wants an object schema even for a tool without parameters.
    schema = tool.input_schema or {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": schema},
    }


def completions_url(base_url: str) -> str:
    """`{base_url}/chat/completions`, keeping a query such as `?api-version=…` at the end."""
    return join_url(base_url, "/chat/completions")


# --- response -----------------------------------------------------------------------------------


def parse_completion(content: bytes, display_url: str) -> AssistantMessage:
    """The assistant turn of a Chat Completions response body."""
    data = parse_json_object(content, display_url)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        # Some gateways answer 200 with an `error` object instead of an HTTP status.
        reason = error_text(data.get("error")) or "no choices"
        raise invalid_response(display_url, reason)
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise invalid_response(display_url, "choices[0] has no message")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise invalid_response(display_url, "tool_calls is not a list")
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
    """Chat Completions' usage: cached and reasoning tokens are parts of prompt and completion."""
    if not isinstance(data, dict):
        return Usage()
    prompt, completion = count(data, "prompt_tokens"), count(data, "completion_tokens")
    return Usage(
        prompt,
        completion,
        count(data, "total_tokens") or prompt + completion,
        cached_tokens=_detail(data, "prompt_tokens_details", "cached_tokens"),
        reasoning_tokens=_detail(data, "completion_tokens_details", "reasoning_tokens"),
    )


def _detail(data: dict[str, Any], group: str, key: str) -> int:
    details = data.get(group)
    return count(details, key) if isinstance(details, dict) else 0
