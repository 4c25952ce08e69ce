"""A server's `sampling/createMessage` request in the providers' message format.

MCP sampling messages (text, image and audio content, one block or a list) become OpenAI Chat
Completions messages: text as text, images as `image_url` data URLs. Audio and the tool-use
content of sampling with tools have no equivalent every provider takes, and are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devall_cli.tools.base import SamplingRequest


class SamplingRefused(Exception):
    """A sampling request devall cannot hand to a model (the server is told why)."""


def sampling_request(params: Any, max_tokens_cap: int) -> SamplingRequest:
    """The request as a node's model will get it; `max_tokens` capped at `max_tokens_cap`."""
    if getattr(params, "tools", None):
        raise SamplingRefused("devall does not offer tools to a sampling request")
    messages = tuple(_message(message) for message in params.messages or ())
    if not messages:
        raise SamplingRefused("the sampling request has no messages")
    wanted = params.max_tokens if isinstance(params.max_tokens, int) else max_tokens_cap
    preferences = getattr(params, "model_preferences", None)
    hints = getattr(preferences, "hints", None) or ()
    return SamplingRequest(
        messages=messages,
        max_tokens=max(1, min(wanted, max_tokens_cap)),
        system_prompt=params.system_prompt or None,
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_hints=tuple(str(hint.name) for hint in hints if getattr(hint, "name", None)),
    )


def _message(message: Any) -> Mapping[str, Any]:
    role = str(message.role)
    if role not in ("user", "assistant"):
        raise SamplingRefused(f"a sampling message has the unknown role {role!r}")
    content = message.content
    blocks = content if isinstance(content, list) else [content]
    parts = [_part(block) for block in blocks]
    if all(part["type"] == "text" for part in parts):
        return {"role": role, "content": "\n".join(str(part["text"]) for part in parts)}
    if role != "user":
        raise SamplingRefused("only user messages of a sampling request may hold images")
    return {"role": role, "content": parts}


def _part(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": str(block.text)}
    if kind == "image":
        url = f"data:{block.mime_type};base64,{block.data}"
        return {"type": "image_url", "image_url": {"url": url}}
    raise SamplingRefused(f"devall cannot give '{kind}' content of a sampling request to a model")
