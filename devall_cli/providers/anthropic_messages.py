"""OpenAI-format messages to an Anthropic Messages API request, and its answer back.

System messages become `system`; user messages `user` turns of text and image blocks; assistant
messages `assistant` turns with `tool_use` blocks; tool messages `tool_result` blocks in a `user`
turn. Consecutive turns of one role are merged, `tool_result` blocks first in their turn (the API
wants the results of a turn's calls right after it); the conversation starts with a user turn,
and empty text is never sent (the API refuses both).

With extended thinking, the `thinking` blocks before a turn's tool calls must go back with them:
they travel in the first call's `ToolCall.extra` under "anthropic".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from devall_cli.providers.base import (
    RESERVED_PARAMS,
    AssistantMessage,
    ToolCall,
    Usage,
    dump_json,
    plain,
)
from devall_cli.providers.content import (
    NO_INPUT,
    ImagePart,
    TextPart,
    content_parts,
    system_text,
    tool_calls_of,
)
from devall_cli.providers.http_client import count, error_text, invalid_response
from devall_cli.tools.base import ToolSpec

EXTRA = "anthropic"  # the key of Anthropic's data in ToolCall.extra
DEFAULT_MAX_TOKENS = 4096  # the API requires max_tokens
# Body keys devall owns: params may not replace the conversation or switch to streaming.
PROTECTED_KEYS = frozenset({"model", "messages", "system", "tools", "stream", *RESERVED_PARAMS})
_THINKING = frozenset({"thinking", "redacted_thinking"})


def build_request(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec],
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """The Messages API request body."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": turns(messages),
    }
    system = system_text(messages)
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [tool_definition(tool) for tool in tools]
    for key, value in params.items():
        if key in PROTECTED_KEYS:
            continue
        if key == "stop":  # the OpenAI name
            key, value = "stop_sequences", [value] if isinstance(value, str) else value
            if "stop_sequences" in params:
                continue
        body[key] = plain(value)
    return body


def tool_definition(tool: ToolSpec) -> dict[str, Any]:
    """A ToolSpec as an Anthropic tool."""
    schema = plain(tool.input_schema) if tool.input_schema else {}
    schema.setdefault("type", "object")  # the API wants an object schema, even an empty one
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


def turns(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as alternating user and assistant turns, starting with a user turn."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = _turn(message)
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    if not merged or merged[0]["role"] != "user":
        merged.insert(0, {"role": "user", "content": [_text(NO_INPUT)]})
    for turn in merged:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda block: block.get("type") != "tool_result")
    return merged


def _turn(message: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    role = message.get("role")
    if role == "tool":
        return "user", [_tool_result(message)]
    if role == "assistant":
        calls = tool_calls_of(message)
        thinking = _thinking_of(calls[0].extra) if calls else []
        uses = [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in calls
        ]
        return "assistant", thinking + _blocks(message.get("content")) + uses
    if role == "system":
        return "user", []  # in `system`
    return "user", _blocks(message.get("content"))


def _blocks(content: Any) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in content_parts(content):
        if isinstance(part, TextPart):
            if part.text.strip():
                blocks.append(_text(part.text))
        elif isinstance(part, ImagePart) and part.data is not None:
            source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
            blocks.append({"type": "image", "source": source})
        elif isinstance(part, ImagePart):
            blocks.append({"type": "image", "source": {"type": "url", "url": part.url}})
    return blocks


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_result(message: Mapping[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": str(message.get("tool_call_id") or ""),
    }
    text = "".join(p.text for p in content_parts(message.get("content")) if isinstance(p, TextPart))
    if text.strip():
        block["content"] = text
    return block


def _thinking_of(extra: Mapping[str, Any]) -> list[dict[str, Any]]:
    own = extra.get(EXTRA)
    blocks = own.get("thinking") if isinstance(own, Mapping) else None
    return [dict(b) for b in blocks if isinstance(b, Mapping)] if isinstance(blocks, list) else []


# --- the answer ---------------------------------------------------------------------------------


def parse_answer(
    data: Mapping[str, Any], display_url: str, new_id: Callable[[], str]
) -> AssistantMessage:
    """The assistant turn of a Messages API answer."""
    blocks = data.get("content")
    if data.get("type") == "error" or not isinstance(blocks, list):
        raise invalid_response(display_url, error_text(data.get("error")) or "no content")
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            calls.append(_tool_call(block, new_id))
        elif kind in _THINKING:
            thinking.append(dict(block))
    if calls and thinking:
        first = calls[0]
        extra = {**first.extra, EXTRA: {"thinking": thinking}}
        calls[0] = ToolCall(
            first.id, first.name, first.arguments, first.raw_arguments, first.error, extra
        )
    return AssistantMessage(
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        usage=_usage(data.get("usage")),
    )


def _tool_call(block: Mapping[str, Any], new_id: Callable[[], str]) -> ToolCall:
    call_id = str(block.get("id") or new_id())
    name = str(block.get("name") or "")
    arguments = block.get("input")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        error = f"tool call arguments must be a JSON object, got {type(arguments).__name__}"
        return ToolCall(call_id, name, {}, dump_json(arguments), error=error)
    return ToolCall(call_id, name, dict(arguments), dump_json(arguments))


def _usage(data: Any) -> Usage:
    """The Messages API's usage: `input_tokens` leaves out the cache's writes and reads, which
    are added to the prompt; the reads are its cached tokens (writes are priced as input)."""
    if not isinstance(data, Mapping):
        return Usage()
    read = count(data, "cache_read_input_tokens")
    cached = count(data, "cache_creation_input_tokens") + read
    prompt, answer = count(data, "input_tokens") + cached, count(data, "output_tokens")
    return Usage(prompt, answer, prompt + answer, cached_tokens=read)
