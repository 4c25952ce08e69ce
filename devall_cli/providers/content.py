"""Reading OpenAI-format messages for providers that speak another format (Gemini, Anthropic).

A message `content` is a string, None, or a list of parts: `{"type": "text", "text": ...}` and
`{"type": "image_url", "image_url": {"url": "data:image/png;base64,..." | "https://..."}}`.
`content_parts` turns any of these into TextPart / ImagePart; `call_names` follows the tool calls
of assistant messages, so that a tool message (which only names its call id) can be answered in
formats that want the tool's name too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from devall_cli import json_limits
from devall_cli.providers.base import EXTRA_KEY

NO_INPUT = "(no input)"  # stands for an empty conversation: both APIs refuse empty text
_DATA_URL = re.compile(
    r"data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(?:;[^,;]*)*),(?P<data>.*)", re.S
)


@dataclass(frozen=True)
class TextPart:
    """Text of a message."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image of a message: base64 data with its MIME type, or a URL."""

    mime_type: str
    data: str | None = None  # base64
    url: str | None = None


Part = TextPart | ImagePart


@dataclass(frozen=True)
class CallRef:
    """An assistant tool call as a later tool message refers to it."""

    id: str
    name: str
    arguments: dict[str, Any]
    extra: Mapping[str, Any]


def content_parts(content: Any) -> list[Part]:
    """The non-empty text and image parts of a message `content`."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if not isinstance(content, Sequence):
        text = str(content)
        return [TextPart(text)] if text else []
    parts: list[Part] = []
    for item in content:
        part = _part(item)
        if part is not None:
            parts.append(part)
    return parts


def _part(item: Any) -> Part | None:
    if isinstance(item, str):
        return TextPart(item) if item else None
    if not isinstance(item, Mapping):
        return None
    if item.get("type") == "image_url":
        image = item.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        return image_part(str(url)) if url else None
    text = item.get("text")
    return TextPart(str(text)) if text else None


def image_part(url: str) -> ImagePart:
    """An image given by URL: a base64 `data:` URL becomes inline data, any other stays a URL."""
    found = _DATA_URL.fullmatch(url.strip())
    if found is not None and ";base64" in (found.group("params") or ""):
        mime = found.group("mime") or "application/octet-stream"
        return ImagePart(mime_type=mime, data=re.sub(r"\s+", "", found.group("data")))
    return ImagePart(mime_type="", url=url.strip())


def tool_calls_of(message: Mapping[str, Any]) -> list[CallRef]:
    """The tool calls of an OpenAI-format assistant message, arguments parsed ({} if bad)."""
    calls = message.get("tool_calls") or []
    refs: list[CallRef] = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        extra = call.get(EXTRA_KEY)
        refs.append(
            CallRef(
                id=str(call.get("id") or ""),
                name=str(function.get("name") or ""),
                arguments=_arguments(function.get("arguments")),
                extra=extra if isinstance(extra, Mapping) else {},
            )
        )
    return refs


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str) or not raw.strip():
        return {}
    try:
        parsed = json_limits.loads(raw)
    except ValueError:  # JsonLimitError included: the call was answered with an error already
        return {}
    return parsed if isinstance(parsed, dict) else {}


def with_calls(
    messages: Sequence[Mapping[str, Any]],
) -> Iterator[tuple[Mapping[str, Any], dict[str, CallRef]]]:
    """Each message with the tool calls made so far by id (the latest call of an id wins)."""
    calls: dict[str, CallRef] = {}
    for message in messages:
        if message.get("role") == "assistant":
            for ref in tool_calls_of(message):
                calls[ref.id] = ref
        yield message, calls


def system_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of every system message, joined by blank lines."""
    texts = [
        part.text
        for message in messages
        if message.get("role") == "system"
        for part in content_parts(message.get("content"))
        if isinstance(part, TextPart) and part.text.strip()
    ]
    return "\n\n".join(texts)
