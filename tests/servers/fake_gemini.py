"""A fake Gemini API server for tests: `POST /v1beta/models/{model}:generateContent` on loopback.

Built on FakeLLM (same queue, recording, delays, drips and error replies); the answers are Gemini
`GenerateContentResponse` bodies. With `api_key` set it refuses a request whose
`x-goog-api-key` header is missing (403) or wrong (400), as the real API does; a key in the URL
is not the endpoint's path, so such a request gets a 404.

    with FakeGemini(api_key="k") as gemini:
        gemini.enqueue(FakeGemini.tool_call_reply([("rand_num", {"a": 1, "b": 9})]))
        gemini.enqueue("The number is 4.")
        ...  # point an agent at gemini.base_url
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from tests.servers.fake_llm import FakeLLM, FakeReply, RecordedRequest

_PATH = re.compile(r"/v1beta/models/(?P<model>[^/:?]+):generateContent")
_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
}


class FakeGemini(FakeLLM):
    """The fake Gemini server; a context manager."""

    def __init__(self, default_text: str = "ok", *, api_key: str | None = None) -> None:
        self.api_key = api_key
        super().__init__(default_text)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`, what an agent's `base_url` should be."""
        return f"http://127.0.0.1:{self.port}"

    # --- reply builders ------------------------------------------------------------------

    @staticmethod
    def text_reply(text: str | None, *, delay: float = 0.0) -> FakeReply:
        """A plain text answer."""
        return FakeReply(message={"parts": [{"text": text or ""}]}, delay=delay)

    @staticmethod
    def tool_call_reply(
        calls: Sequence[tuple[str, Any]],
        content: str | None = None,
        *,
        ids: bool = False,
        signature: str | None = None,
    ) -> FakeReply:
        """A turn calling functions; `ids` gives each call an id, `signature` a thoughtSignature."""
        parts: list[dict[str, Any]] = [{"text": content}] if content else []
        for n, (name, args) in enumerate(calls, start=1):
            call: dict[str, Any] = {"name": name, "args": args}
            if ids:
                call["id"] = f"fc_fake_{n}"
            part: dict[str, Any] = {"functionCall": call}
            if signature:
                part["thoughtSignature"] = f"{signature}-{n}"
            parts.append(part)
        return FakeReply(message={"parts": parts})

    @staticmethod
    def image_reply(data: bytes, mime_type: str = "image/png", text: str = "") -> FakeReply:
        """An answer with an inline image (and text before it, if given)."""
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        encoded = base64.b64encode(data).decode()
        parts.append({"inlineData": {"mimeType": mime_type, "data": encoded}})
        return FakeReply(message={"parts": parts})

    @staticmethod
    def blocked_reply(reason: str = "SAFETY") -> FakeReply:
        """A candidate without content, stopped for `reason`."""
        return FakeReply(message={"parts": [], "finishReason": reason})

    @staticmethod
    def error_reply(
        status: int, body: Any = None, headers: Mapping[str, str] | None = None
    ) -> FakeReply:
        """An HTTP error with a Google API error body."""
        if body is None:
            status_name = _STATUS.get(status, "INTERNAL")
            body = {
                "error": {"code": status, "message": f"fake error {status}", "status": status_name}
            }
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        return FakeReply(status=status, body=raw, headers=dict(headers or {}))

    # --- the API -------------------------------------------------------------------------

    def serves(self, path: str) -> bool:
        """Only `/v1beta/models/{model}:generateContent`, without a query."""
        return _PATH.fullmatch(path) is not None

    def refusal(self, request: RecordedRequest) -> FakeReply | None:
        """403 without a key, 400 with a wrong one (when the fake has a key)."""
        if self.api_key is None:
            return None
        given = request.headers.get("x-goog-api-key")
        if given is None:
            return self.error_reply(403, {"error": {"code": 403, "message": "unregistered caller"}})
        if given != self.api_key:
            message = "API key not valid. Please pass a valid API key."
            return self.error_reply(400, {"error": {"code": 400, "message": message}})
        return None

    def answer_body(self, reply: FakeReply, request_body: Any, number: int) -> bytes:
        """A GenerateContentResponse with `reply.message`'s parts as the one candidate."""
        message = dict(reply.message or {"parts": []})
        prompt = len(json.dumps(request_body)) // 4
        answer = len(json.dumps(message)) // 4
        body = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": message.get("parts", [])},
                    "finishReason": message.get("finishReason", "STOP"),
                    "index": 0,
                }
            ],
            "usageMetadata": reply.usage
            or {
                "promptTokenCount": prompt,
                "candidatesTokenCount": answer,
                "totalTokenCount": prompt + answer,
            },
            "modelVersion": "fake-gemini",
            "responseId": f"fake-{number}",
        }
        return json.dumps(body).encode()


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A running FakeGemini (no key checked), closed after the test."""
    with FakeGemini() as server:
        yield server
