"""`type: simple`: a visit's gist, searched by embedding similarity (ChatDev's SimpleMemory).

Each write keeps `Input: ... Output: ...` reduced to its key content (at most 500 characters;
under 20 it is not kept, nor is a summary the store already holds), with its embedding. A
retrieval embeds `Query: <inputs>` the same way, takes the 3 * top_k most similar items at or
above the threshold, re-ranks them by 0.7 * similarity + 0.3 * text similarity, and returns the
best top_k. Without an `embedding` block the store is append-only: it keeps every visit and
returns the most recent ones. The newest 1000 items are kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from devall_cli.config.schema import Checker, KeySpec
from devall_cli.config.yaml_source import KeyPath
from devall_cli.memory.base import (
    AUTO,
    MEMORY_STORES,
    EmbeddingConfig,
    MemoryItem,
    MemoryStore,
    MemoryStoreType,
    StoreContext,
    WritePayload,
)
from devall_cli.memory.config import embedding_shape, memory_path, parse_embedding
from devall_cli.memory.list_store import ListStore
from devall_cli.memory.text import (
    MIN_CONTENT,
    content_hash,
    extract_key_content,
    semantic_similarity,
)

MAX_ITEMS = 1000


@dataclass(frozen=True)
class SimpleMemoryConfig:
    """`config` of a simple store."""

    memory_path: str = AUTO  # absolute, or `auto` (also when it is not given, as in ChatDev)
    embedding: EmbeddingConfig | None = None


class SimpleMemory(ListStore):
    """Summaries with embeddings; similarity search, re-ranked."""

    def __init__(self, config: SimpleMemoryConfig, context: StoreContext) -> None:
        super().__init__(
            context.name, context.resolve(config.memory_path), context.redactor, MAX_ITEMS
        )
        self.embedder = context.embedder(config.embedding) if config.embedding else None

    def key(self, item: MemoryItem) -> str:
        """Items holding the same summary are one (another run may have kept it meanwhile)."""
        return content_hash(item.content_summary)

    async def retrieve(
        self, query: str, top_k: int, threshold: float, *, node: str
    ) -> list[MemoryItem]:
        """The best `top_k` items for the query (the newest ones without embeddings)."""
        if not self.items:
            return []
        if self.embedder is None:
            return self.items[-top_k:]
        from devall_cli.memory.vectors import nearest

        query_text = extract_key_content(f"Query: {query}")
        (vector,) = await self.embedder.embed([query_text], node=node)
        stored = [item for item in self.items if item.embedding is not None]
        vectors = [item.embedding or [] for item in stored]
        ranked = []
        for row, similarity in nearest(vector, vectors, top_k * 3):
            if similarity >= threshold:
                text_score = semantic_similarity(query_text, stored[row].content_summary)
                ranked.append((0.7 * similarity + 0.3 * text_score, row))
        ranked.sort(key=lambda entry: entry[0], reverse=True)
        return [stored[row] for _, row in ranked[:top_k]]

    async def write(self, payload: WritePayload, *, node: str) -> int:
        """Keep the visit's gist unless it is too short or already known."""
        output = payload.output_snapshot
        if output is None or not output.text.strip():
            return 0
        payload = self.masked(payload)
        content = extract_key_content(f"Input: {payload.inputs_text}\nOutput: {output.text}")
        content = self.redactor.text(content)
        if len(content) < MIN_CONTENT:
            return 0
        digest = content_hash(content)
        async with self.lock:
            if any(content_hash(item.content_summary) == digest for item in self.items):
                return 0
            embedding = None
            if self.embedder is not None:
                from devall_cli.memory.vectors import unit

                (vector,) = await self.embedder.embed([content], node=node)
                embedding = unit(vector)
            self.add(
                MemoryItem(
                    id=f"{digest}_{int(time.time())}",
                    content_summary=content,
                    metadata={
                        "agent_role": payload.agent_role,
                        "input_preview": payload.inputs_text[:200],
                        "content_length": len(content),
                        "attachments": [],
                    },
                    embedding=embedding,
                    input_snapshot=payload.input_snapshot,
                    output_snapshot=payload.output_snapshot,
                )
            )
        return 1


def parse_simple(ck: Checker, config: dict[str, Any], path: KeyPath) -> Any:
    """`memory_path` (default `auto`) and an optional `embedding`."""
    where = memory_path(ck, config, "memory_path", path) or AUTO
    embedding = parse_embedding(ck, config.get("embedding"), (*path, "embedding"))
    return SimpleMemoryConfig(where, embedding)


def _build(settings: Any, context: StoreContext) -> MemoryStore:
    return SimpleMemory(settings, context)


SIMPLE = MEMORY_STORES.register(
    MemoryStoreType(
        "simple",
        "a visit's gist, found again by embedding similarity (append-only without embedding)",
        KeySpec(known=frozenset({"memory_path", "embedding"})),
        parse_simple,
        _build,
        shapes=lambda: {"embedding": embedding_shape()},
    )
)
