"""The `openai` provider: any OpenAI-compatible Chat Completions endpoint, over httpx.

Requests go through a `JsonEndpoint` (`http_endpoint.py`), which retries transient failures,
bounds each attempt by `params.timeout`, refuses oversized answers and maps httpx exceptions to
devall errors; this module builds the request body and reads the completion.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from devall_cli.config.model import RESERVED_PARAMS, AgentConfig
from devall_cli.providers.base import (
    AssistantMessage,
    ToolCall,
    Usage,
    content_text,
    dump_json,
    tool_call_from_json,
)
from devall_cli.providers.http_endpoint import (
    BACKOFF_BASE,
    BACKOFF_CAP,
    CAUGHT_HTTPX_ERRORS,
    RETRY_AFTER_CAP,
    RETRY_STATUSES,
    DeadlineExceededError,
    JsonEndpoint,
    endpoint_url,
    error_text,
    invalid_response,
    parse_retry_after,
    response_excerpt,
    safe_url,
    translate_httpx_error,
)
from devall_cli.redaction import Redactor
from devall_cli.text import clean_text, clean_value
from devall_cli.tools import json_limits
from devall_cli.tools.base import ToolSpec

__all__ = [
    "BACKOFF_BASE",
    "BACKOFF_CAP",
    "CAUGHT_HTTPX_ERRORS",
    "DEFAULT_BASE_URL",
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
    "translate_httpx_error",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Body keys devall owns: params may not replace the conversation or switch to streaming.
PROTECTED_KEYS = frozenset({"model", "messages", "stream", *RESERVED_PARAMS})


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
        self._endpoint = JsonEndpoint(
            completions_url(base_url),
            api_key=config.api_key or env.get("OPENAI_API_KEY") or None,
            timeout=config.timeout,
            retries=config.retries,
            redactor=redactor,
            transport=transport,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
            retry_after_cap=retry_after_cap,
        )
        self.display_url = self._endpoint.display_url
        self._model = config.name
        self._params = {k: v for k, v in config.params.items() if k not in PROTECTED_KEYS}

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """Send the conversation; return the model's next turn."""
        body = build_request_body(self._model, messages, tools, self._params)
        # Text entering devall is cleaned where it enters; this is the last line of defence.
        payload = clean_text(dump_json(body)).encode("utf-8")
        response = await self._endpoint.post(payload)
        return parse_completion(response.content, self.display_url)

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
        raise invalid_response(display_url, f"the body {exc}") from exc
    except ValueError as exc:
        raise invalid_response(display_url, f"body is not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise invalid_response(display_url, "body is not a JSON object")
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
    if not isinstance(data, dict):
        return Usage()

    def count(key: str) -> int:
        value = data.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    prompt, completion = count("prompt_tokens"), count("completion_tokens")
    return Usage(prompt, completion, count("total_tokens") or prompt + completion)





# --- URLs -------------------------------------------------------------------------------------


def completions_url(base_url: str) -> str:
    """`{base_url}/chat/completions`, keeping a query such as `?api-version=…` at the end."""
    return endpoint_url(base_url, "chat/completions")
