"""`type: blackboard`: an append-only board of what nodes said; retrieval is by recency
(ChatDev's BlackboardMemory). No embeddings."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from devall_cli.config.schema import Checker, KeySpec, opt_int
from devall_cli.config.yaml_source import KeyPath
from devall_cli.memory.base import (
    MEMORY_STORES,
    MemoryItem,
    MemoryStore,
    MemoryStoreType,
    StoreContext,
    WritePayload,
)
from devall_cli.memory.config import memory_path
from devall_cli.memory.list_store import ListStore


@dataclass(frozen=True)
class BlackboardMemoryConfig:
    """`config` of a blackboard store."""

    memory_path: str | None = None  # None: this run only, in memory; `auto`: the run directory
    max_items: int = 1000


class BlackboardMemory(ListStore):
    """The newest `max_items` outputs, oldest first."""

    def __init__(self, config: BlackboardMemoryConfig, context: StoreContext) -> None:
        path = context.resolve(config.memory_path)
        super().__init__(context.name, path, context.redactor, config.max_items)

    async def retrieve(
        self, query: str, top_k: int, threshold: float, *, node: str
    ) -> list[MemoryItem]:
        """The newest `top_k` items (the query plays no part)."""
        return list(self.items[-top_k:]) if 0 < top_k < len(self.items) else list(self.items)

    async def write(self, payload: WritePayload, *, node: str) -> int:
        """Post the node's output (its inputs if it said nothing)."""
        payload = self.masked(payload)
        snapshot = payload.output_snapshot or payload.input_snapshot
        content = (snapshot.text if snapshot is not None else payload.inputs_text).strip()
        if not content:
            return 0
        async with self.lock:
            self.add(
                MemoryItem(
                    id=f"bb_{uuid.uuid4().hex}",
                    content_summary=content,
                    metadata={
                        "agent_role": payload.agent_role,
                        "input_preview": payload.inputs_text[:200],
                        "attachments": [],
                    },
                    timestamp=time.time(),
                    input_snapshot=payload.input_snapshot,
                    output_snapshot=payload.output_snapshot,
                )
            )
        return 1


def parse_blackboard(ck: Checker, config: dict[str, Any], path: KeyPath) -> Any:
    """`memory_path` (none: in memory) and `max_items` (≥ 1, default 1000)."""
    where = memory_path(ck, config, "memory_path", path)
    max_items = opt_int(ck, config, "max_items", path, 1000, minimum=1)
    return BlackboardMemoryConfig(where, max_items)


def _build(settings: Any, context: StoreContext) -> MemoryStore:
    return BlackboardMemory(settings, context)


BLACKBOARD = MEMORY_STORES.register(
    MemoryStoreType(
        "blackboard",
        "an append-only board of outputs shared by nodes; the newest are retrieved",
        KeySpec(known=frozenset({"memory_path", "max_items"})),
        parse_blackboard,
        _build,
    )
)
