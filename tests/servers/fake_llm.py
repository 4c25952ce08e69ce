"""A fake OpenAI-compatible Chat Completions server for tests: the only faked service.

A stdlib ThreadingHTTPServer on 127.0.0.1 (free port) in a daemon thread. Tests queue replies
(text, tool calls, HTTP errors with headers, slow answers, answers trickled a byte at a time,
huge answers made up as they are sent, malformed JSON) and read back every request it received.

It also answers `/v1/embeddings` with deterministic vectors (`FakeLLM.embedding`): each word of
a text adds 1 to one of 64 dimensions chosen by its hash, so texts sharing words are similar.
Queued `embedding_errors` are answered first.

    with FakeLLM() as llm:
        llm.enqueue(FakeLLM.tool_call_reply([("rand_num", {"a": 1, "b": 9})]))
        llm.enqueue("The number is 4.")
        ...  # point an agent at llm.base_url
        assert llm.requests[0].body["tools"]

Run as a script it serves until interrupted and prints its base URL on the first line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

COMPLETIONS_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
EMBEDDING_DIMENSIONS = 64


@dataclass(frozen=True)
class FakeReply:
    """One queued answer: an assistant message (status 200) or an error status, maybe late."""

    status: int = 200
    message: Mapping[str, Any] | None = None  # the assistant message of a 200 answer
    body: bytes | None = None  # raw body; overrides `message`
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering
    usage: Mapping[str, int] | None = None
    drip: float = 0.0  # seconds between the bytes of the body (an endpoint that trickles)
    size: int = 0  # a body of this many bytes, made up while it is sent (never held whole)
    declare_size: bool = True  # with `size`: send Content-Length, else a chunked body


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    headers: Mapping[str, str]  # names in lower case
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes


ReplyLike = FakeReply | str | Mapping[str, Any]


class FakeLLM:
    """The fake server; a context manager. `close()` stops it."""

    def __init__(
        self,
        default_text: str = "ok",
        responder: Callable[[Any], ReplyLike] | None = None,
    ) -> None:
        self.default_text = default_text
        # With an empty queue, the reply is `responder(request body)`: a pure function of it.
        self.responder = responder
        self._lock = threading.Lock()
        self._queue: deque[FakeReply] = deque()
        self._embedding_errors: deque[FakeReply] = deque()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._sent_bytes = 0
        self._closing = threading.Event()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-llm",
            daemon=True,
        )
        self._thread.start()

    # --- setup ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`, what an agent's `base_url` should be."""
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: ReplyLike) -> None:
        """Queue replies: a FakeReply, a text answer, or an assistant message mapping."""
        with self._lock:
            self._queue.extend(self.as_reply(reply) for reply in replies)

    def enqueue_embedding_error(self, *replies: FakeReply) -> None:
        """Answer the next `/embeddings` requests with these (error) replies."""
        with self._lock:
            self._embedding_errors.extend(replies)

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        """The `/embeddings` requests received so far."""
        return [r for r in self.requests if r.path == EMBEDDINGS_PATH]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat completion requests received so far."""
        return [r for r in self.requests if r.path == COMPLETIONS_PATH]

    @staticmethod
    def embedding(text: str) -> list[float]:
        """The vector the server gives `text` (not normalized)."""
        vector = [0.0] * EMBEDDING_DIMENSIONS
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.md5(word.encode("utf-8")).digest()
            vector[int.from_bytes(digest[:4], "big") % EMBEDDING_DIMENSIONS] += 1.0
        return vector

    @property
    def pending(self) -> int:
        """How many queued replies are still unused."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def sent_bytes(self) -> int:
        """Body bytes of `size` answers written so far (before the client hung up)."""
        with self._lock:
            return self._sent_bytes

    # --- reply builders ------------------------------------------------------------------

    @classmethod
    def as_reply(cls, reply: ReplyLike) -> FakeReply:
        """A queued reply from a FakeReply, a text answer, or a message mapping."""
        if isinstance(reply, FakeReply):
            return reply
        if isinstance(reply, str):
            return cls.text_reply(reply)
        return FakeReply(message={"role": "assistant", **dict(reply)})

    @staticmethod
    def text_reply(text: str | None, *, delay: float = 0.0) -> FakeReply:
        """A plain assistant answer."""
        return FakeReply(message={"role": "assistant", "content": text}, delay=delay)

    @staticmethod
    def tool_call_reply(
        calls: Sequence[tuple[str, Mapping[str, Any] | str]], content: str | None = None
    ) -> FakeReply:
        """An assistant turn calling tools; string arguments are sent as they are (bad JSON too)."""
        tool_calls = [
            {
                "id": f"call_fake_{n}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(dict(args)),
                },
            }
            for n, (name, args) in enumerate(calls, start=1)
        ]
        message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
        return FakeReply(message=message)

    @staticmethod
    def error_reply(
        status: int, body: Any = None, headers: Mapping[str, str] | None = None
    ) -> FakeReply:
        """An HTTP error; `body` is text or JSON-able (default: an OpenAI-style error object)."""
        if body is None:
            body = {"error": {"message": f"fake error {status}", "type": "fake"}}
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        return FakeReply(status=status, body=raw, headers=dict(headers or {}))

    @classmethod
    def slow_reply(cls, seconds: float, then: ReplyLike = "ok") -> FakeReply:
        """`then`, answered only after `seconds`."""
        reply = cls.as_reply(then)
        return FakeReply(reply.status, reply.message, reply.body, reply.headers, seconds)

    @classmethod
    def dripping_reply(cls, seconds_per_byte: float, then: ReplyLike = "ok") -> FakeReply:
        """`then`, its body sent one byte every `seconds_per_byte`."""
        reply = cls.as_reply(then)
        return dataclasses.replace(reply, drip=seconds_per_byte)

    @staticmethod
    def huge_reply(size: int, *, declare_size: bool = True) -> FakeReply:
        """A valid answer whose body is `size` bytes of text content (chunked if undeclared)."""
        return FakeReply(size=size, declare_size=declare_size)

    @staticmethod
    def malformed_reply(status: int = 200) -> FakeReply:
        """A body that is not valid JSON."""
        return FakeReply(status=status, body=b'{"choices": [{"message": ')

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop serving, end slow answers early, drop open connections (idempotent)."""
        if self._closing.is_set():
            return
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        """Whether the serving thread is alive."""
        return self._thread.is_alive()

    def __enter__(self) -> FakeLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- what a fake of another API overrides ---------------------------------------------

    def serves(self, path: str) -> bool:
        """Whether `path` is the API's endpoint (others answer 404 and take no reply)."""
        return path == COMPLETIONS_PATH

    def refusal(self, request: RecordedRequest) -> FakeReply | None:
        """An answer refusing the request (bad credentials), or None to answer it."""
        return None

    def answer_body(self, reply: FakeReply, request_body: Any, number: int) -> bytes:
        """The body of a 200 answer carrying `reply.message`."""
        return _completion_body(reply, request_body, number)

    # --- used by the handler -------------------------------------------------------------

    def _record(self, request: RecordedRequest, *, take_reply: bool = True) -> FakeReply:
        with self._lock:
            self._requests.append(request)
            if take_reply and self._queue:
                return self._queue.popleft()
        if take_reply and self.responder is not None:
            return self.as_reply(self.responder(request.body))
        return self.text_reply(self.default_text)

    def _number(self) -> int:
        """How many requests were received: the number of this answer (no copy of the list,
        which would make a long batch quadratic)."""
        with self._lock:
            return len(self._requests)

    def _embedding_error(self) -> FakeReply | None:
        with self._lock:
            return self._embedding_errors.popleft() if self._embedding_errors else None

    def _count_sent(self, count: int) -> None:
        with self._lock:
            self._sent_bytes += count

    def _track(self, conn: socket.socket, alive: bool) -> None:
        with self._lock:
            if alive:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


def _completion_body(reply: FakeReply, request_body: Any, number: int) -> bytes:
    message = dict(reply.message or {"role": "assistant", "content": ""})
    model = request_body.get("model", "fake") if isinstance(request_body, dict) else "fake"
    prompt = len(json.dumps(request_body)) // 4
    completion = len(json.dumps(message)) // 4
    usage = reply.usage or {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    body = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": dict(usage),
    }
    return json.dumps(body).encode()


def _embeddings_body(request_body: Any) -> bytes:
    given = request_body.get("input", []) if isinstance(request_body, dict) else []
    texts = [given] if isinstance(given, str) else [str(t) for t in given]
    tokens = sum(len(text.split()) for text in texts)
    body = {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": FakeLLM.embedding(text)}
            for i, text in enumerate(texts)
        ],
        "model": request_body.get("model", "fake") if isinstance(request_body, dict) else "fake",
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    return json.dumps(body).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a slow answer must not hold up shutdown
    block_on_close = False
    # The listen backlog (socketserver's default is 5): clients connecting at once past it wait
    # for a SYN retransmission (1 s) or fail, which real endpoints do not make them do. A batch
    # at --concurrency 256 and more opens that many connections at once.
    request_queue_size = 1024

    def __init__(self, fake: FakeLLM) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints
    # The head and the body of an answer are two writes: with Nagle's algorithm the body of an
    # answer on a kept-alive connection waits for the client's delayed ACK (40 ms).
    disable_nagle_algorithm = True
    timeout = 30  # an idle kept-alive connection ends eventually
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, False)
        super().finish()

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = RecordedRequest("POST", self.path, headers, body, raw)
        if self.path == EMBEDDINGS_PATH:
            fake._record(request, take_reply=False)
            error = fake._embedding_error()
            if error is not None:
                self._send(error.status, error.body or b"{}", error.headers)
                return
            self._send(200, _embeddings_body(body), {})
            return
        if not fake.serves(self.path):
            fake._record(request, take_reply=False)
            self._send(404, b'{"error": {"message": "not found"}}', {})
            return
        refusal = fake.refusal(request)
        if refusal is not None:
            fake._record(request, take_reply=False)
            self._send(refusal.status, refusal.body or b"", refusal.headers)
            return
        reply = fake._record(request)
        if reply.delay and fake._closing.wait(reply.delay):
            self.close_connection = True  # shutting down: drop the slow answer
            return
        if reply.size:
            self._send_huge(reply.size, declare_size=reply.declare_size)
            return
        payload = reply.body or fake.answer_body(reply, body, fake._number())
        self._send(reply.status, payload, reply.headers, drip=reply.drip)

    def do_GET(self) -> None:
        self._send(404, b'{"error": {"message": "not found"}}', {})

    def _send(
        self, status: int, payload: bytes, headers: Mapping[str, str], *, drip: float = 0.0
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not drip:
            self.wfile.write(payload)
            return
        self.close_connection = True
        closing = self.server.fake._closing
        with contextlib.suppress(OSError):  # the client gave up waiting
            for offset in range(len(payload)):
                if closing.wait(drip):
                    break
                self.wfile.write(payload[offset : offset + 1])

    def _send_huge(self, size: int, *, declare_size: bool) -> None:
        """A valid completion of `size` bytes, written in 1 MiB pieces until the client leaves."""
        head = b'{"choices": [{"message": {"role": "assistant", "content": "'
        tail = b'"}}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if declare_size:
            self.send_header("Content-Length", str(size))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        chunked = not declare_size
        piece = b"x" * (1024 * 1024)
        filler = size - len(head) - len(tail)
        try:
            self._write_part(head, chunked=chunked)
            while filler > 0:
                part = piece[: min(filler, len(piece))]
                self._write_part(part, chunked=chunked)
                filler -= len(part)
            self._write_part(tail, chunked=chunked)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client stopped reading: what a test of a size limit wants to see

    def _write_part(self, part: bytes, *, chunked: bool) -> None:
        if chunked:
            self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        else:
            self.wfile.write(part)
        self.server.fake._count_sent(len(part))

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running FakeLLM, closed after the test; import it into a conftest to use it."""
    with FakeLLM() as server:
        yield server


if __name__ == "__main__":
    with FakeLLM() as _server:
        print(_server.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
