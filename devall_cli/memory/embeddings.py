"""The embeddings client of memory stores: an OpenAI-compatible `POST {base_url}/embeddings`.

Requests go through the providers' `ModelEndpoint`: the same retries, deadline, size limit and
error mapping as model requests (unreachable: exit 4; HTTP error after retries: exit 5).
Texts are cleaned as ChatDev cleans them and cut to `max_length` characters; with
`use_chunking`, a longer text is embedded in pieces whose vectors are combined.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from devall_cli import json_limits
from devall_cli.events import EmbeddingsEvent, Event
from devall_cli.memory.base import EmbeddingConfig
from devall_cli.memory.text import embedding_text
from devall_cli.memory.vectors import combine
from devall_cli.providers.http_client import ModelEndpoint, invalid_response, join_url
from devall_cli.providers.openai import DEFAULT_BASE_URL
from devall_cli.redaction import Redactor

BATCH = 128  # texts per request
FALLBACK_DIMENSIONS = 1536  # the vector of an empty text before any answer told the size


class EmbeddingClient:
    """Embeds texts for one memory store."""

    def __init__(
        self,
        config: EmbeddingConfig,
        *,
        store: str,
        graph: str = "",
        run_id: str = "",
        emit: Callable[[Event], None] | None = None,
        environ: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        base_url = config.base_url or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        api_key = config.api_key or env.get("OPENAI_API_KEY") or ""
        self._endpoint = ModelEndpoint(
            join_url(base_url, "/embeddings"),
            headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
            secrets=(api_key,),
            redactor=redactor,
            retries=config.retries,
            timeout=config.timeout,
        )
        self._config = config
        self._store = store
        self._graph = graph
        self._run_id = run_id
        self._emit = emit or (lambda event: None)
        self._dimensions = FALLBACK_DIMENSIONS

    async def aclose(self) -> None:
        """Close the HTTP connections (idempotent)."""
        await self._endpoint.aclose()

    async def embed(self, texts: Sequence[str], *, node: str = "") -> list[list[float]]:
        """One vector per text, in order."""
        pieces: list[list[str]] = [self._pieces(embedding_text(text)) for text in texts]
        flat = [piece for group in pieces for piece in group]
        vectors: list[list[float]] = []
        for start in range(0, len(flat), BATCH):
            vectors += await self._request(flat[start : start + BATCH], node)
        if vectors:
            self._dimensions = len(vectors[0])
        result: list[list[float]] = []
        for group in pieces:
            taken, vectors = vectors[: len(group)], vectors[len(group) :]
            if not taken:  # nothing left of the text once cleaned (ChatDev: a zero vector)
                result.append([0.0] * self._dimensions)
            else:
                result.append(combine(taken, self._config.chunk_strategy))
        return result

    def _pieces(self, text: str) -> list[str]:
        if not text:
            return []
        limit = self._config.max_length
        if not self._config.use_chunking or len(text) <= limit:
            return [text[:limit]]
        size = max(1, limit // 2)
        return [text[i : i + size] for i in range(0, len(text), size)]

    async def _request(self, inputs: list[str], node: str) -> list[list[float]]:
        body = {"model": self._config.model, "input": inputs, "encoding_format": "float"}
        started = time.monotonic()
        content = await self._endpoint.post_json(body)
        vectors, usage = parse_embeddings(content, len(inputs), self._endpoint.display_url)
        self._emit(
            EmbeddingsEvent(
                run_id=self._run_id,
                store=self._store,
                graph=self._graph,
                node_id=node,
                inputs=len(inputs),
                usage=usage,
                duration_ms=round((time.monotonic() - started) * 1000, 3),
            )
        )
        return vectors


def parse_embeddings(
    content: bytes, expected: int, display_url: str
) -> tuple[list[list[float]], dict[str, int]]:
    """The vectors of an `/embeddings` answer (in input order) and its token usage."""
    try:
        data = json_limits.loads(content)
    except ValueError as exc:
        raise invalid_response(display_url, f"body is not JSON ({exc})") from exc
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) != expected:
        count = len(items) if isinstance(items, list) else "no"
        raise invalid_response(display_url, f"expected {expected} embeddings, got {count}")
    ordered = sorted(items, key=lambda item: _index(item, display_url))
    vectors = [_vector(item, display_url) for item in ordered]
    if len({len(vector) for vector in vectors}) > 1:
        raise invalid_response(display_url, "embeddings of different lengths in one answer")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    counts = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    return vectors, counts


def _index(item: Any, display_url: str) -> int:
    index = item.get("index", 0) if isinstance(item, dict) else None
    if not isinstance(index, int) or isinstance(index, bool):
        raise invalid_response(display_url, "an embedding without a numeric index")
    return index


def _vector(item: Any, display_url: str) -> list[float]:
    vector = item.get("embedding") if isinstance(item, dict) else None
    if not isinstance(vector, list) or not vector:
        raise invalid_response(display_url, "an embedding that is not a list of numbers")
    if not all(_finite(v) for v in vector):
        raise invalid_response(display_url, "an embedding that is not a list of numbers")
    return [float(v) for v in vector]


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
