"""Memory stores are a kind: each type is a registered descriptor that reads its `config` and
builds a store that loads, retrieves, writes and saves (ChatDev's memory module).

A graph declares its stores under `memory:` (`MemoryStoreConfig`); an agent attaches some of
them under `memories:` (`MemoryRefConfig`). This module is light: descriptor modules import
numpy and the HTTP client only when a store is built for a run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from devall_cli.config.json_shapes import Schema, no_shapes
from devall_cli.config.schema import Checker, KeySpec
from devall_cli.config.yaml_source import KeyPath
from devall_cli.kinds import Registry
from devall_cli.redaction import Redactor

AUTO = "auto"  # memory_path: a file in the run directory, for this run only


@dataclass(frozen=True)
class EmbeddingConfig:
    """`embedding:` of a store: an OpenAI-compatible `/embeddings` endpoint."""

    model: str = "text-embedding-3-small"
    base_url: str | None = None  # default: OPENAI_BASE_URL, else OpenAI's
    api_key: str | None = None  # default: OPENAI_API_KEY
    max_length: int = 8191  # characters of text sent per input (ChatDev's params.max_length)
    use_chunking: bool = False  # longer texts: embed pieces and combine them
    chunk_strategy: str = "average"  # average | weighted | first
    timeout: float = 60.0
    retries: int = 5


@dataclass(frozen=True)
class MemoryRefConfig:
    """One entry of an agent's `memories`: which store, when it is read, whether written."""

    name: str
    retrieve_stage: tuple[str, ...] | None = None  # None: every stage
    top_k: int = 3
    similarity_threshold: float = -1.0
    read: bool = True
    write: bool = True
    key_path: KeyPath = ()  # where it is written, for errors about the reference


@dataclass(frozen=True)
class Snapshot:
    """Text kept of the inputs or the output of a node visit."""

    text: str

    def to_dict(self) -> dict[str, Any]:
        """As stored in a memory file (ChatDev's MemoryContentSnapshot)."""
        return {"text": self.text, "blocks": []}


@dataclass
class MemoryItem:
    """One remembered thing (ChatDev's MemoryItem; the files use its JSON form)."""

    id: str
    content_summary: str
    metadata: dict[str, Any] = field(default_factory=dict)
    embedding: list[float] | None = None
    timestamp: float = field(default_factory=time.time)
    input_snapshot: Snapshot | None = None
    output_snapshot: Snapshot | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        data: dict[str, Any] = {
            "id": self.id,
            "content_summary": self.content_summary,
            "metadata": self.metadata,
            "embedding": self.embedding,
            "timestamp": self.timestamp,
        }
        if self.input_snapshot is not None:
            data["input_snapshot"] = self.input_snapshot.to_dict()
        if self.output_snapshot is not None:
            data["output_snapshot"] = self.output_snapshot.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Any) -> MemoryItem:
        """From the JSON form; ValueError saying why when `data` is not one.

        An entry of another shape is refused rather than skipped or coerced: the store writes
        its items back to the file, and would lose or change that entry.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"it is {json_kind(data)}, not an object")
        if "id" not in data:
            raise ValueError("it has no 'id'")
        ident = data["id"]
        if not isinstance(ident, str | int) or isinstance(ident, bool):
            raise ValueError(f"its 'id' is {json_kind(ident)}, not a text")
        summary = _field(data, "content_summary", str, "a text")
        metadata = _field(data, "metadata", Mapping, "an object")
        embedding = _field(data, "embedding", list, "a list of numbers")
        if embedding is not None and not all(_is_number(v) for v in embedding):
            raise ValueError("its 'embedding' is not a list of numbers")
        vector = [_float(v, "embedding") for v in embedding] if embedding is not None else None
        timestamp = data.get("timestamp")
        if timestamp is not None and not _is_number(timestamp):
            raise ValueError(f"its 'timestamp' is {json_kind(timestamp)}, not a number")
        return cls(
            id=str(ident),
            content_summary=summary or "",
            metadata=dict(metadata or {}),
            embedding=vector,
            timestamp=_float(timestamp, "timestamp") if timestamp else time.time(),
            input_snapshot=_snapshot(data, "input_snapshot"),
            output_snapshot=_snapshot(data, "output_snapshot"),
        )


def _field(data: Mapping[str, Any], key: str, kind: type, what: str) -> Any:
    """`data[key]`, which must be of `kind` or null (or missing)."""
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        raise ValueError(f"its '{key}' is {json_kind(value)}, not {what}")
    return value


def _snapshot(data: Mapping[str, Any], key: str) -> Snapshot | None:
    snapshot = _field(data, key, Mapping, "an object")
    if snapshot is None:
        return None
    text = snapshot.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"the 'text' of its '{key}' is {json_kind(text)}, not a text")
    return Snapshot(text or "")


def _float(value: Any, key: str) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer of hundreds of digits
        raise ValueError(f"its '{key}' holds a number too large to be a float") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_kind(value: Any) -> str:
    """What a JSON value is, for messages: `null`, `a number`, `a text`, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if _is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


@dataclass(frozen=True)
class WritePayload:
    """What a node visit writes to its memories."""

    agent_role: str
    inputs_text: str  # the inputs as `=== INPUT FROM ... ===` sections
    input_snapshot: Snapshot | None
    output_snapshot: Snapshot | None


class MemoryStore(Protocol):
    """A store at run time."""

    name: str
    path: Path | None  # its file; None while it lives in memory only

    def count(self) -> int:
        """How many items it holds."""
        ...

    async def load(self) -> None:
        """Read the file (or build the index) before the graph runs."""
        ...

    def save(self) -> None:
        """Write the file, if it has one."""
        ...

    async def retrieve(
        self, query: str, top_k: int, threshold: float, *, node: str
    ) -> list[MemoryItem]:
        """Items relevant to `query`, best first."""
        ...

    async def write(self, payload: WritePayload, *, node: str) -> int:
        """Remember a node visit; the number of items added."""
        ...


class Embedder(Protocol):
    """Text to vectors, for the stores that search by similarity."""

    async def embed(self, texts: Sequence[str], *, node: str = "") -> list[list[float]]:
        """One vector per text, in order."""
        ...


@dataclass
class StoreContext:
    """What building a store gets from the run."""

    name: str
    run_dir: Path | None
    file_stem: str  # `memory_<name>` (prefixed for a subgraph's stores), for `auto` paths
    redactor: Redactor
    embedder: Callable[[EmbeddingConfig], Embedder]
    environ: Mapping[str, str] | None = None  # None: the process environment

    def resolve(self, path: str | None) -> Path | None:
        """A configured memory_path: `auto` is a file in the run directory (or none)."""
        if path is None:
            return None
        if path == AUTO:
            return self.run_dir / f"{self.file_stem}.json" if self.run_dir is not None else None
        return Path(path)


@dataclass(frozen=True)
class MemoryStoreType:
    """One store type: its config keys, how they are read, and how a store is built."""

    name: str
    summary: str
    keys: KeySpec
    parse: Callable[[Checker, dict[str, Any], KeyPath], Any]  # settings, or None after errors
    build: Callable[[Any, StoreContext], MemoryStore]
    config_required: bool = False  # True: `config` must be given (it has required keys)
    shapes: Callable[[], dict[str, Schema]] = no_shapes  # `devall schema`: nested blocks


MEMORY_STORES: Registry[MemoryStoreType] = Registry(
    "memory store type",
    (
        "devall_cli.memory.simple",
        "devall_cli.memory.file",
        "devall_cli.memory.blackboard",
        "devall_cli.memory.mem0",
    ),
)
