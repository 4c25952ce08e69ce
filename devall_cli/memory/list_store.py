"""What simple and blackboard memory share: a list of items kept in one JSON file.

Several runs (or the tasks of a batch) may use one file at once. Each save therefore adds the
items this store added since its last save to the file as it is now, under the file's lock,
rather than writing the list it loaded over what the others wrote meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devall_cli.memory.base import MemoryItem, Snapshot, WritePayload
from devall_cli.memory.files import read_memory_file, unreadable_error, update_memory_file
from devall_cli.redaction import Redactor


class ListStore:
    """Items in order of writing; the file is a JSON list of ChatDev's item objects."""

    def __init__(self, name: str, path: Path | None, redactor: Redactor, limit: int) -> None:
        import asyncio  # here: a store type's module is imported to parse a workflow, not run

        self.name = name
        self.path = path
        self.items: list[MemoryItem] = []
        self.limit = limit  # the newest `limit` items are kept
        self.redactor = redactor
        self.lock = asyncio.Lock()  # nodes running at once write one after the other
        self._pending: list[MemoryItem] = []  # added since the file was last written

    def count(self) -> int:
        """How many items the store holds."""
        return len(self.items)

    async def load(self) -> None:
        """Read the items of the file, if there is one; a file holding anything but items is
        refused (ChatDev skips such entries, and then writes the file without them)."""
        data = read_memory_file(self.path, self.name) if self.path is not None else None
        if data is not None and self.path is not None:
            self.items = items_of(data, self.path, self.name)

    def save(self) -> None:
        """Add what this store added since its last save to the file, keeping the newest items
        (nothing to add and a file there: the file is left as it is)."""
        if self.path is None or (not self._pending and self.path.exists()):
            return
        path = self.path
        merged: list[MemoryItem] = []

        def merge(current: Any | None) -> list[dict[str, Any]]:
            items = [] if current is None else items_of(current, path, self.name)
            known = {self.key(item) for item in items}
            items.extend(item for item in self._pending if self.key(item) not in known)
            merged[:] = items[-self.limit :]
            return [item.to_dict() for item in merged]

        update_memory_file(path, self.name, merge)
        self.items = merged
        self._pending.clear()

    def add(self, item: MemoryItem) -> None:
        """Append an item, forgetting the oldest past the limit."""
        for items in (self.items, self._pending):
            items.append(item)
            if len(items) > self.limit:
                del items[: len(items) - self.limit]

    def key(self, item: MemoryItem) -> str:
        """What makes two items the same one when files are merged: its id."""
        return item.id

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


def items_of(data: Any, path: Path, store: str, where: str = "") -> list[MemoryItem]:
    """The items of a memory file's list; the first entry that is not one refuses the file."""
    if not isinstance(data, list):
        raise unreadable_error(path, store, "not a list of memory items")
    items: list[MemoryItem] = []
    for index, entry in enumerate(data):
        try:
            items.append(MemoryItem.from_dict(entry))
        except ValueError as exc:
            reason = f"entry {index}{where} is not a memory item: {exc}"
            raise unreadable_error(path, store, reason) from None
    return items
