"""A local stand-in for Mem0's HTTP API, as the `mem0ai` client speaks it: a thread on 127.0.0.1.

`POST /v3/memories/add/` keeps each user message as one memory (no extraction model: the text
is the memory) under the `user_id` and `agent_id` given, and answers `{"results": [...]}` with
one `ADD` event per memory. `POST /v3/memories/search/` applies `filters` (`user_id`, `agent_id`,
or `{"OR": [...]}` of them), scores each memory by the share of the query's words it holds,
drops those below `threshold`, and answers the best `top_k` as `{"results": [...]}`. Every
request is recorded; one whose `Authorization` is not `Token <key>` gets 401. Memories persist
for the server's life, so two runs against one server see each other's writes.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Mem0Request:
    path: str
    headers: dict[str, str]
    body: Any


class FakeMem0:
    """The fake service; a context manager."""

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.memories: list[dict[str, Any]] = []
        self.requests: list[Mem0Request] = []
        self.fail_with: int | None = None  # answer every request with this status instead
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeMem0:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        with self._lock:
            self.requests.append(Mem0Request(path, headers, body))
            if self.fail_with is not None:
                return self.fail_with, {"detail": "failing as told"}
            if headers.get("authorization") != f"Token {self.api_key}":
                return 401, {"detail": "Invalid API key"}
            if not isinstance(body, dict):
                return 400, {"detail": "body must be a JSON object"}
            if path == "/v3/memories/add/":
                return 200, self._add(body)
            if path == "/v3/memories/search/":
                return 200, self._search(body)
            return 404, {"detail": "not found"}

    def _add(self, body: dict[str, Any]) -> dict[str, Any]:
        results = []
        for message in body.get("messages") or []:
            if message.get("role") != "user" or not str(message.get("content") or "").strip():
                continue
            memory = {
                "id": uuid.uuid4().hex,
                "memory": str(message["content"]),
                "user_id": body.get("user_id"),
                "agent_id": body.get("agent_id"),
                "categories": ["notes"],
            }
            self.memories.append(memory)
            results.append({"id": memory["id"], "memory": memory["memory"], "event": "ADD"})
        return {"results": results}

    def _search(self, body: dict[str, Any]) -> dict[str, Any]:
        words = set(_words(str(body.get("query") or "")))
        threshold = float(body.get("threshold") or 0)
        found = []
        for memory in self.memories:
            if not _matches(memory, body.get("filters") or {}):
                continue
            held = words & set(_words(memory["memory"]))
            score = len(held) / len(words) if words else 0.0
            if score > 0 and score >= threshold:
                found.append({**memory, "score": round(score, 3)})
        found.sort(key=lambda memory: memory["score"], reverse=True)
        return {"results": found[: int(body.get("top_k") or 10)]}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _matches(memory: dict[str, Any], filters: dict[str, Any]) -> bool:
    if "OR" in filters:
        return any(_matches(memory, part) for part in filters["OR"])
    return all(memory.get(key) == value for key, value in filters.items())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        status, answer = self.server.fake.answer(self.path, headers, body)  # type: ignore[attr-defined]
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read the recorded requests."""
