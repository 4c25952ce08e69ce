"""The memory stores of one graph run, and what an agent node does with them.

`MemoryBank.open` builds and loads a graph's stores before its nodes run; `retrieve` gathers what
a node's references give for one stage into the prompt block (ChatDev's MemoryManager: items of
every readable store, scored, grouped by store); `write` hands a finished visit to every store
the node may write, each saved at once. The bank saves every store again when the graph is done.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devall_cli.config.model import MemoryStoreConfig
from devall_cli.events import (
    Event,
    MemoryLoadedEvent,
    MemoryRetrievedEvent,
    MemoryWrittenEvent,
)
from devall_cli.memory.base import (
    MEMORY_STORES,
    Embedder,
    EmbeddingConfig,
    MemoryItem,
    MemoryRefConfig,
    MemoryStore,
    StoreContext,
    WritePayload,
)
from devall_cli.memory.text import format_memories, score_memory
from devall_cli.redaction import Redactor


@dataclass
class MemoryContext:
    """What the stores of every graph of a run share."""

    run_id: str = ""
    run_dir: Path | None = None
    environ: Mapping[str, str] | None = None
    redactor: Redactor = field(default_factory=Redactor)
    emit: Callable[[Event], None] = lambda event: None


class MemoryBank:
    """A graph run's stores by name."""

    def __init__(self, context: MemoryContext | None = None, graph: str = "") -> None:
        self.context = context or MemoryContext()
        self.graph = graph  # "" for the workflow's graph, else the subgraph node's path
        self.stores: dict[str, MemoryStore] = {}
        self._clients: list[Any] = []

    @classmethod
    async def open(
        cls, configs: Sequence[MemoryStoreConfig], context: MemoryContext, graph: str = ""
    ) -> MemoryBank:
        """Build and load the stores (file memories are indexed here)."""
        bank = cls(context, graph)
        try:
            for config in configs:
                await bank._add(config)
        except BaseException:
            await bank.aclose()
            raise
        return bank

    async def _add(self, config: MemoryStoreConfig) -> None:
        kind = MEMORY_STORES.get(config.type)
        if kind is None:  # the loader checked the type; a programming error otherwise
            raise KeyError(config.type)
        scope = f"{self.graph}_" if self.graph else ""
        stem = _file_name(f"memory_{scope}{config.name}")
        store_context = StoreContext(
            name=config.name,
            run_dir=self.context.run_dir,
            file_stem=stem,
            redactor=self.context.redactor,
            embedder=lambda embedding: self._embedder(embedding, config.name),
            environ=self.context.environ,
        )
        store = kind.build(config.config, store_context)
        self.stores[config.name] = store
        started = time.monotonic()
        await store.load()
        self.context.emit(
            MemoryLoadedEvent(
                run_id=self.context.run_id,
                store=config.name,
                type=config.type,
                graph=self.graph,
                items=store.count(),
                path=str(store.path) if store.path is not None else None,
                duration_ms=_ms(started),
            )
        )

    def _embedder(self, config: EmbeddingConfig, store: str) -> Embedder:
        from devall_cli.memory.embeddings import EmbeddingClient

        client = EmbeddingClient(
            config,
            store=store,
            graph=self.graph,
            run_id=self.context.run_id,
            emit=self.context.emit,
            environ=self.context.environ,
            redactor=self.context.redactor,
        )
        self._clients.append(client)
        return client

    def save(self) -> None:
        """Write every store that has a file."""
        for store in self.stores.values():
            store.save()

    async def aclose(self) -> None:
        """Close the embeddings clients and the stores that hold connections (mem0)."""
        for client in self._clients:
            await client.aclose()
        self._clients.clear()
        for store in self.stores.values():
            closing = getattr(store, "aclose", None)
            if closing is not None:
                await closing()

    # --- a node's visit ----------------------------------------------------------------------

    async def retrieve(
        self, refs: Sequence[MemoryRefConfig], *, stage: str, query: str, node: str
    ) -> str | None:
        """The memories block for one stage of a node's visit, or None when nothing was found."""
        readable = [ref for ref in refs if ref.read and _at(ref, stage)]
        if not readable:
            return None
        started = time.monotonic()
        found: list[tuple[float, str, MemoryItem]] = []
        for ref in readable:
            store = self.stores[ref.name]
            items = await store.retrieve(query, ref.top_k, ref.similarity_threshold, node=node)
            found.extend((score_memory(item, query), ref.name, item) for item in items)
        found.sort(key=lambda entry: entry[0], reverse=True)
        text = format_memories([(name, item) for _, name, item in found]) if found else None
        self.context.emit(
            MemoryRetrievedEvent(
                run_id=self.context.run_id,
                node_id=node,
                stage=stage,
                stores=[ref.name for ref in readable],
                items=len(found),
                text=text or "",
                duration_ms=_ms(started),
            )
        )
        return text

    async def write(
        self, refs: Sequence[MemoryRefConfig], payload: WritePayload, *, node: str
    ) -> None:
        """Hand the visit to every store the node may write, and save each."""
        for ref in refs:
            if not ref.write:
                continue
            store = self.stores[ref.name]
            started = time.monotonic()
            added = await store.write(payload, node=node)
            store.save()
            self.context.emit(
                MemoryWrittenEvent(
                    run_id=self.context.run_id,
                    node_id=node,
                    store=ref.name,
                    added=added,
                    items=store.count(),
                    path=str(store.path) if store.path is not None else None,
                    duration_ms=_ms(started),
                )
            )


def _at(ref: MemoryRefConfig, stage: str) -> bool:
    return ref.retrieve_stage is None or stage in ref.retrieve_stage


def _file_name(stem: str) -> str:
    return re.sub(r"[^A-Za-z0-9 ._-]+", "_", stem).strip(" .") or "memory"


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)
