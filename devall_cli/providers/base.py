"""What every model provider speaks: assistant turns, tool calls, usage and the provider protocol.

Messages are OpenAI Chat Completions dicts (`role`, `content`, `tool_calls`, `tool_call_id`); every
provider takes them as they are and answers with one `AssistantMessage`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from devall_cli import json_limits
from devall_cli.config.model import EMPTY
from devall_cli.tools.base import ToolSpec

# The key of a tool call (in the OpenAI-format assistant message) that carries `ToolCall.extra`;
# the name Gemini's OpenAI-compatible endpoint uses for the same purpose.
EXTRA_KEY = "extra_content"

RESERVED_PARAMS = ("tool_loop_limit", "timeout", "retries", "max_result_chars")


@dataclass(frozen=True)
class ModelSettings:
    """What a provider needs to reach a model: the model-facing part of an agent's settings."""

    provider: str  # the name of a registered provider
    name: str
    base_url: str | None = None
    api_key: str | None = None
    params: Mapping[str, Any] = EMPTY  # sent in the request body (reserved keys removed)
    provider_config: Any = None  # what the provider parsed for itself (a scripted agent's turns)
    timeout: float = 300.0
    retries: int = 5


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for."""

    id: str
    name: str
    arguments: Mapping[str, Any]  # {} when the JSON was bad
    raw_arguments: str  # as the model sent it
    # Set when the arguments were not a JSON object: the engine hands this back to the model as
    # an error result instead of calling the tool.
    error: str | None = None
    # What the provider must send back with this call on the next request (a Gemini thought
    # signature, Claude's thinking blocks), keyed by provider; JSON-able.
    extra: Mapping[str, Any] = EMPTY


@dataclass(frozen=True)
class MediaPart:
    """An image (or other binary) the model answered with; the agent saves it as an attachment."""

    mime_type: str
    data: bytes


@dataclass(frozen=True)
class Usage:
    """Token counts of one model call (0 when the endpoint does not report them).

    Every provider reads its endpoint's usage into one meaning: `prompt_tokens` is the whole
    prompt, the part read from the provider's cache (`cached_tokens`) included;
    `completion_tokens` is the whole answer, the model's reasoning (`reasoning_tokens`) included.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class AssistantMessage:
    """One assistant turn: text, tool calls, or both."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    media: tuple[MediaPart, ...] = ()

    def to_message(self) -> dict[str, Any]:
        """The OpenAI-format assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            # Chat Completions rejects an empty `tool_calls` list, so the key is only set when used.
            message["tool_calls"] = [_call_message(call) for call in self.tool_calls]
        return message

    def with_content(self, content: str | None) -> AssistantMessage:
        """This turn with another text, and its media taken out (they are saved elsewhere)."""
        return AssistantMessage(content, self.tool_calls, self.usage)


def _call_message(call: ToolCall) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.raw_arguments},
    }
    if call.extra:
        entry[EXTRA_KEY] = dict(call.extra)
    return entry


class Provider(Protocol):
    """A chat model: one call per assistant turn."""

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """The model's next turn for this conversation, offering these tools."""
        ...

    async def aclose(self) -> None:
        """Release connections (idempotent)."""
        ...


def json_default(value: Any) -> Any:
    """`json.dumps` fallback: read-only mappings become dicts, anything else its text."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def plain(value: Any) -> Any:
    """Plain dicts and lists from read-only config structures (params), to send as JSON."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def dump_json(value: Any) -> str:
    """Compact JSON of config-derived data (which may hold read-only mappings or dates)."""
    return json.dumps(value, default=json_default, ensure_ascii=False)


def tool_call_from_json(call_id: str, name: str, raw: str) -> ToolCall:
    """A ToolCall from arguments as a JSON string; bad JSON or a non-object sets `error`."""
    if not raw.strip():
        # Several endpoints send "" for a call without arguments; that means {}.
        return ToolCall(id=call_id, name=name, arguments={}, raw_arguments=raw)
    try:
        parsed = json_limits.loads(raw)
    except json_limits.JsonLimitError as exc:
        error = f"tool call arguments refused: the JSON {exc}"
        return ToolCall(call_id, name, {}, raw, error=error)
    except ValueError as exc:
        error = f"tool call arguments are not valid JSON ({exc}): {_excerpt(raw)}"
        return ToolCall(call_id, name, {}, raw, error=error)
    if not isinstance(parsed, dict):
        error = f"tool call arguments must be a JSON object, got {type(parsed).__name__}"
        return ToolCall(call_id, name, {}, raw, error=error)
    return ToolCall(id=call_id, name=name, arguments=parsed, raw_arguments=raw)


def content_text(content: Any) -> str:
    """The text of a message `content`: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        return "".join(str(p) for p in parts if p)
    return str(content)


def _excerpt(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
