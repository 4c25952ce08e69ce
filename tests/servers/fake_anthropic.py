"""A fake Anthropic Messages API server for tests: `POST /v1/messages` on loopback.

Built on FakeLLM (same queue, recording, delays, drips and error replies); the answers are
Messages API `message` bodies. With `api_key` set it refuses a request whose `x-api-key` header
is missing or wrong (401), and any request without `anthropic-version` (400), as the real API does.

    with FakeAnthropic(api_key="k") as claude:
        claude.enqueue(FakeAnthropic.tool_call_reply([("rand_num", {"a": 1, "b": 9})]))
        claude.enqueue("The number is 4.")
        ...  # point an agent at claude.base_url
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from tests.servers.fake_llm import FakeLLM, FakeReply, RecordedRequest

MESSAGES_PATH = "/v1/messages"
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class FakeAnthropic(FakeLLM):
    """The fake Anthropic server; a context manager."""

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
        return FakeReply(message={"content": [{"type": "text", "text": text or ""}]}, delay=delay)

    @staticmethod
    def tool_call_reply(
        calls: Sequence[tuple[str, Any]],
        content: str | None = None,
        *,
        thinking: str | None = None,
    ) -> FakeReply:
        """A turn using tools (ids `toolu_fake_N`); `thinking` adds a signed thinking block."""
        blocks: list[dict[str, Any]] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": "sig-fake"})
        if content:
            blocks.append({"type": "text", "text": content})
        blocks.extend(
            {"type": "tool_use", "id": f"toolu_fake_{n}", "name": name, "input": args}
            for n, (name, args) in enumerate(calls, start=1)
        )
        return FakeReply(message={"content": blocks})

    @staticmethod
    def error_reply(
        status: int, body: Any = None, headers: Mapping[str, str] | None = None
    ) -> FakeReply:
        """An HTTP error with an Anthropic error body."""
        if body is None:
            kind = _TYPES.get(status, "api_error")
            body = {"type": "error", "error": {"type": kind, "message": f"fake error {status}"}}
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        return FakeReply(status=status, body=raw, headers=dict(headers or {}))

    # --- the API -------------------------------------------------------------------------

    def serves(self, path: str) -> bool:
        """Only `/v1/messages`, without a query."""
        return path == MESSAGES_PATH

    def refusal(self, request: RecordedRequest) -> FakeReply | None:
        """400 without `anthropic-version`; 401 without the right key (when the fake has one)."""
        if "anthropic-version" not in request.headers:
            return self.error_reply(400)
        if self.api_key is not None and request.headers.get("x-api-key") != self.api_key:
            error = {"type": "authentication_error", "message": "invalid x-api-key"}
            return self.error_reply(401, {"type": "error", "error": error})
        return None

    def answer_body(self, reply: FakeReply, request_body: Any, number: int) -> bytes:
        """A `message` with `reply.message`'s content blocks."""
        content = list((reply.message or {}).get("content", []))
        model = request_body.get("model", "fake") if isinstance(request_body, dict) else "fake"
        uses_tools = any(block.get("type") == "tool_use" for block in content)
        body = {
            "id": f"msg_fake_{number}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if uses_tools else "end_turn",
            "stop_sequence": None,
            "usage": reply.usage
            or {
                "input_tokens": len(json.dumps(request_body)) // 4,
                "output_tokens": len(json.dumps(content)) // 4,
            },
        }
        return json.dumps(body).encode()


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A running FakeAnthropic (no key checked), closed after the test."""
    with FakeAnthropic() as server:
        yield server
