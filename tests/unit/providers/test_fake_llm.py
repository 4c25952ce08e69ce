"""The fake Chat Completions server itself: queueing, recording, defaults and shutdown."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from tests.servers.fake_llm import FakeLLM


def post(url: str, body: Any, timeout: float = 5) -> tuple[int, dict[str, str], Any]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def test_replies_are_served_in_order_then_the_default(fake_llm: FakeLLM) -> None:
    fake_llm.default_text = "fallback"
    fake_llm.enqueue("first", FakeLLM.tool_call_reply([("t", {"a": 1})]))
    url = fake_llm.base_url + "/chat/completions"

    replies = [post(url, {"model": "m", "messages": []})[2] for _ in range(3)]

    assert replies[0]["choices"][0]["message"]["content"] == "first"
    call = replies[1]["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "t", "arguments": '{"a": 1}'}
    assert replies[1]["choices"][0]["finish_reason"] == "tool_calls"
    assert replies[2]["choices"][0]["message"]["content"] == "fallback"
    assert [r.body["model"] for r in fake_llm.requests] == ["m", "m", "m"]
    assert fake_llm.pending == 0


def test_errors_carry_status_headers_and_body(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue(FakeLLM.error_reply(429, headers={"Retry-After": "2"}))
    status, headers, body = post(fake_llm.base_url + "/chat/completions", {})
    assert (status, headers["Retry-After"]) == (429, "2")
    assert "fake error 429" in body


def test_unknown_paths_are_404_and_recorded_without_using_the_queue(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue("kept")
    status, _, _ = post(f"http://127.0.0.1:{fake_llm.port}/v2/other", {"x": 1})
    assert status == 404
    assert fake_llm.requests[0].path == "/v2/other"
    assert fake_llm.pending == 1


def test_close_ends_a_slow_answer_and_stops_the_thread() -> None:
    llm = FakeLLM()
    llm.enqueue(FakeLLM.slow_reply(120))  # far beyond the 30 s the close is given
    outcome: list[str] = []

    def call() -> None:
        try:
            post(llm.base_url + "/chat/completions", {})
            outcome.append("answered")
        except OSError:  # the dropped connection
            outcome.append("dropped")

    client = threading.Thread(target=call, daemon=True)
    client.start()
    deadline = time.monotonic() + 30
    while not llm.requests and time.monotonic() < deadline:
        time.sleep(0.01)

    closer = threading.Thread(target=llm.close, daemon=True)
    closer.start()
    closer.join(timeout=30)  # a hang guard: closing must not wait for the slow answer

    assert not closer.is_alive()
    assert not llm.running
    client.join(timeout=30)
    assert not client.is_alive()
    assert outcome == ["dropped"]
