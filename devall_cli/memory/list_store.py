"""What simple and blackboard memory share: a list of items kept in one JSON file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from devall_cli.memory.base import MemoryItem, Snapshot, WritePayload
from devall_cli.memory.files import read_memory_file, unreadable_error, write_memory_file
from devall_cli.redaction import Redactor


class ListStore:
    """Items in order of writing; the file is a JSON list of ChatDev's item objects."""

    def __init__(self, name: str, path: Path | None, redactor: Redactor, limit: int) -> None:
        self.name = name
        self.path = path
        self.items: list[MemoryItem] = []
        self.limit = limit  # the newest `limit` items are kept
        self.redactor = redactor
        self.lock = asyncio.Lock()  # nodes running at once write one after the other

    def count(self) -> int:
        """How many items the store holds."""
        return len(self.items)

    async def load(self) -> None:
        """Read the items of the file, if there is one (entries that are not items are skipped,
        as ChatDev skips them)."""
        data = read_memory_file(self.path, self.name) if self.path is not None else None
        if data is None:
            return
        if not isinstance(data, list):
            raise unreadable_error(self.path or Path(), self.name, "not a list of memory items")
        for entry in data:
            try:
                self.items.append(MemoryItem.from_dict(entry))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue

    def save(self) -> None:
        """Write the newest items to the file, if the store has one."""
        if self.path is not None:
            write_memory_file(self.path, [item.to_dict() for item in self.items[-self.limit :]])

    def add(self, item: MemoryItem) -> None:
        """Append an item, forgetting the oldest past the limit."""
        self.items.append(item)
        if len(self.items) > self.limit:
            del self.items[: len(self.items) - self.limit]

    def masked(self, payload: WritePayload) -> WritePayload:
        """The payload with the workflow's secrets masked: memory files are files devall
        writes, and no secret may reach one."""
        text = self.redactor.text
        return WritePayload(
            agent_role=text(payload.agent_role),
            inputs_text=text(payload.inputs_text),
            input_snapshot=_masked(payload.input_snapshot, self.redactor),
            output_snapshot=_masked(payload.output_snapshot, self.redactor),
        )


def _masked(snapshot: Snapshot | None, redactor: Redactor) -> Snapshot | None:
    return None if snapshot is None else Snapshot(redactor.text(snapshot.text))
