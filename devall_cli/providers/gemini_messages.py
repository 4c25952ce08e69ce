"""OpenAI-format messages to a Gemini `generateContent` request, and its answer back.

System messages become `systemInstruction`; user messages `user` contents (text parts, and
`inlineData` parts for base64 images); assistant messages `model` contents with `functionCall`
parts; tool messages `user` contents with `functionResponse` parts named after the call they
answer. Consecutive contents of one role are merged (Gemini wants the roles to alternate, and all
answers to one turn's calls in one content).

A call's `id` is sent back only when Gemini gave one, and its `thoughtSignature` always (newer
models refuse a conversation whose function calls lost theirs); both travel in `ToolCall.extra`
under "google". Images in the answer (`inlineData`) come back as `AssistantMessage.media`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from devall_cli.providers.base import AssistantMessage, MediaPart, ToolCall, Usage, dump_json
from devall_cli.providers.content import (
    NO_INPUT,
    CallRef,
    ImagePart,
    TextPart,
    content_parts,
    system_text,
    tool_calls_of,
    with_calls,
)
from devall_cli.providers.gemini_schema import function_parameters
from devall_cli.providers.http_client import count, error_text, invalid_response
from devall_cli.tools.base import ToolSpec

EXTRA = "google"  # the key of Gemini's data in ToolCall.extra
# Finish reasons of an answer that is complete; any other on an empty answer is an error.
_FINISHED = frozenset({"STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED", ""})


def build_request(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec],
    fields: Mapping[str, Any],
) -> dict[str, Any]:
    """The generateContent request body; `fields` are those the params set."""
    body: dict[str, Any] = {"contents": contents(messages)}
    system = system_text(messages)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if tools:
        body["tools"] = [{"functionDeclarations": [declaration(tool) for tool in tools]}]
    body.update(fields)
    return body


def declaration(tool: ToolSpec) -> dict[str, Any]:
    """A ToolSpec as a Gemini function declaration."""
    entry: dict[str, Any] = {"name": tool.name, "description": tool.description}
    parameters = function_parameters(tool.input_schema)
    if parameters is not None:
        entry["parameters"] = parameters
    return entry


def contents(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as Gemini contents, roles alternating; never empty."""
    merged: list[dict[str, Any]] = []
    for message, calls in with_calls(messages):
        role, parts = _content(message, calls)
        if not parts:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["parts"].extend(parts)
        else:
            merged.append({"role": role, "parts": parts})
    if not merged:
        merged.append({"role": "user", "parts": [{"text": NO_INPUT}]})
    return merged


def _content(
    message: Mapping[str, Any], calls: Mapping[str, CallRef]
) -> tuple[str, list[dict[str, Any]]]:
    role = message.get("role")
    if role == "tool":
        return "user", [_function_response(message, calls)]
    if role == "assistant":
        parts = _parts(message.get("content"))
        return "model", parts + [_function_call(ref) for ref in tool_calls_of(message)]
    if role == "system":
        return "user", []  # in systemInstruction
    return "user", _parts(message.get("content"))


def _parts(content: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in content_parts(content):
        if isinstance(part, TextPart):
            parts.append({"text": part.text})
        elif isinstance(part, ImagePart) and part.data is not None:
            parts.append({"inlineData": {"mimeType": part.mime_type, "data": part.data}})
        elif isinstance(part, ImagePart):
            # Gemini reads only its own file URIs; another URL is shown to the model as text.
            parts.append({"text": f"[image: {part.url}]"})
    return parts


def _function_call(ref: CallRef) -> dict[str, Any]:
    google = ref.extra.get(EXTRA)
    google = google if isinstance(google, Mapping) else {}
    call: dict[str, Any] = {"name": ref.name, "args": ref.arguments}
    if google.get("id"):
        call["id"] = google["id"]
    part: dict[str, Any] = {"functionCall": call}
    if google.get("thought_signature"):
        part["thoughtSignature"] = google["thought_signature"]
    return part


def _function_response(message: Mapping[str, Any], calls: Mapping[str, CallRef]) -> dict[str, Any]:
    call_id = str(message.get("tool_call_id") or "")
    ref = calls.get(call_id)
    text = "".join(p.text for p in content_parts(message.get("content")) if isinstance(p, TextPart))
    response: dict[str, Any] = {"name": ref.name if ref else "tool", "response": {"result": text}}
    google = ref.extra.get(EXTRA) if ref else None
    if isinstance(google, Mapping) and google.get("id"):
        response["id"] = google["id"]
    return {"functionResponse": response}


# --- the answer ---------------------------------------------------------------------------------


def parse_answer(
    data: Mapping[str, Any], display_url: str, new_id: Callable[[], str]
) -> AssistantMessage:
    """The assistant turn of a generateContent answer; `new_id` names calls Gemini left unnamed."""
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates:
        feedback = data.get("promptFeedback")
        blocked = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
        reason = f"the prompt was blocked ({blocked})" if blocked else None
        raise invalid_response(
            display_url, reason or error_text(data.get("error")) or "no candidates"
        )
    first = candidates[0] if isinstance(candidates[0], Mapping) else {}
    content = first.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    parts = [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []
    texts: list[str] = []
    calls: list[ToolCall] = []
    media: list[MediaPart] = []
    for part in parts:
        _read_part(part, texts, calls, media, new_id)
    finish = str(first.get("finishReason") or "")
    if not parts and finish not in _FINISHED:
        raise invalid_response(display_url, f"the model stopped without an answer ({finish})")
    return AssistantMessage(
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        usage=_usage(data.get("usageMetadata")),
        media=tuple(media),
    )


def _read_part(
    part: Mapping[str, Any],
    texts: list[str],
    calls: list[ToolCall],
    media: list[MediaPart],
    new_id: Callable[[], str],
) -> None:
    if part.get("thought") is True:
        return  # a thought summary, not the answer
    if isinstance(part.get("text"), str):
        texts.append(part["text"])
    elif isinstance(part.get("functionCall"), Mapping):
        calls.append(_tool_call(part["functionCall"], part.get("thoughtSignature"), new_id))
    elif isinstance(part.get("inlineData"), Mapping):
        _inline(part["inlineData"], texts, media)
    elif isinstance(part.get("fileData"), Mapping):
        uri, mime = part["fileData"].get("fileUri"), part["fileData"].get("mimeType")
        _note(texts, f"[file: {uri} ({mime or 'unknown type'})]")


def _tool_call(call: Mapping[str, Any], signature: Any, new_id: Callable[[], str]) -> ToolCall:
    google: dict[str, Any] = {}
    given = call.get("id")
    if isinstance(given, str) and given:
        google["id"] = given
    if isinstance(signature, str) and signature:
        google["thought_signature"] = signature
    call_id = google.get("id") or new_id()
    name = str(call.get("name") or "")
    extra = {EXTRA: google} if google else {}
    arguments = call.get("args")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raw = dump_json(arguments)
        error = f"tool call arguments must be a JSON object, got {type(arguments).__name__}"
        return ToolCall(call_id, name, {}, raw, error=error, extra=extra)
    return ToolCall(call_id, name, dict(arguments), dump_json(arguments), extra=extra)


def _inline(blob: Mapping[str, Any], texts: list[str], media: list[MediaPart]) -> None:
    mime = str(blob.get("mimeType") or "application/octet-stream")
    try:
        data = base64.b64decode(str(blob.get("data") or ""), validate=True)
    except (binascii.Error, ValueError):
        _note(texts, f"[{mime} content from the model could not be decoded]")
        return
    media.append(MediaPart(mime_type=mime, data=data))


def _note(texts: list[str], note: str) -> None:
    """A line of devall's own about a part, on a line of its own."""
    texts.append(f"\n{note}" if texts else note)


def _usage(data: Any) -> Usage:
    """generateContent's usageMetadata: thoughts are counted apart from the candidates, and
    billed as answer tokens, so the completion is both; the cached part is in the prompt."""
    if not isinstance(data, Mapping):
        return Usage()
    thoughts = count(data, "thoughtsTokenCount")
    prompt = count(data, "promptTokenCount")
    answer = count(data, "candidatesTokenCount") + thoughts
    return Usage(
        prompt,
        answer,
        count(data, "totalTokenCount") or prompt + answer,
        cached_tokens=count(data, "cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )
