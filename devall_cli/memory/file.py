"""`type: file`: a read-only index of files, searched by embedding similarity (ChatDev's
FileMemory).

Files of the `file_sources` are cut into chunks of 500 characters (50 overlapping, broken after
a sentence end in the second half when one is there) and embedded. With `index_path` the index
is kept in that file: a later run re-embeds only the files that are new or changed (by hash)
and drops the chunks of files that are gone. Nodes cannot write to it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devall_cli import limits
from devall_cli.config.json_shapes import Schema, array_of, keys_object
from devall_cli.config.placeholders import UNRESOLVED
from devall_cli.config.schema import (
    Checker,
    KeySpec,
    check_keys,
    describe,
    get_mapping,
    opt_bool,
    opt_str,
    opt_str_list,
)
from devall_cli.config.yaml_source import KeyPath
from devall_cli.memory.base import (
    MEMORY_STORES,
    EmbeddingConfig,
    MemoryItem,
    MemoryStore,
    MemoryStoreType,
    StoreContext,
    WritePayload,
    json_kind,
)
from devall_cli.memory.config import embedding_shape, memory_path, parse_embedding
from devall_cli.memory.files import (
    RefusedFileError,
    read_memory_file,
    read_regular_file,
    unreadable_error,
    update_memory_file,
)
from devall_cli.memory.list_store import items_of

CHUNK_SIZE = 500
CHUNK_OVERLAP = 50
FileEntries = dict[str, dict[str, Any]]  # an index's `file_metadata`: path -> hash, size, ...
_SENTENCE_ENDS = ("\u3002", "\uff01", "\uff1f", ".", "!", "?", "\n")


@dataclass(frozen=True)
class FileSource:
    """One entry of `file_sources`."""

    path: str  # absolute
    file_types: tuple[str, ...] | None = None  # suffixes such as `.md`; None: every file
    recursive: bool = True
    encoding: str = "utf-8"


@dataclass(frozen=True)
class FileMemoryConfig:
    """`config` of a file store."""

    sources: tuple[FileSource, ...]
    embedding: EmbeddingConfig
    index_path: str | None = None  # None: indexed afresh in every run


class FileMemory:
    """Chunks of files with their embeddings."""

    def __init__(self, config: FileMemoryConfig, context: StoreContext) -> None:
        self.name = context.name
        self.path = context.resolve(config.index_path)
        self.sources = config.sources
        self.redactor = context.redactor
        self.embedder = context.embedder(config.embedding)
        self.items: list[MemoryItem] = []
        self.files: FileEntries = {}  # path -> hash, size, chunks_count, indexed_at
        self._seen: set[str] = set()  # the files this run indexed, found unchanged, or forgot
        self._changed = False  # the index differs from what the file holds

    def count(self) -> int:
        """How many chunks are indexed."""
        return len(self.items)

    async def load(self) -> None:
        """Read the index and bring it up to date with the files (or build it)."""
        data = read_memory_file(self.path, self.name) if self.path is not None else None
        if data is not None and self.path is not None:
            self.files, self.items = read_index(data, self.path, self.name)
        self._changed = await self._update() or data is None
        self.save()

    def save(self) -> None:
        """Write the index, if the store has an `index_path` and this run changed it.

        Under the file's lock, the entries of the files this run looked at are replaced by what
        it found; the entries of other files are kept as the file holds them now.
        """
        if self.path is None or not self._changed:
            return
        path = self.path

        def merge(current: Any | None) -> dict[str, Any]:
            files, items = read_index(current, path, self.name) if current is not None else ({}, [])
            others = {name: entry for name, entry in files.items() if name not in self._seen}
            kept = [item for item in items if _file_of(item) in others]
            return {
                "file_metadata": {**others, **self.files},
                "contents": [item.to_dict() for item in [*kept, *self.items]],
                "config": {"chunk_size": CHUNK_SIZE, "chunk_overlap": CHUNK_OVERLAP},
            }

        update_memory_file(path, self.name, merge)
        self._changed = False

    async def retrieve(
        self, query: str, top_k: int, threshold: float, *, node: str
    ) -> list[MemoryItem]:
        """The `top_k` chunks most similar to the query, at or above the threshold."""
        if not self.items:
            return []
        from devall_cli.memory.vectors import nearest

        (vector,) = await self.embedder.embed([query], node=node)
        vectors = [item.embedding or [] for item in self.items]
        return [
            self.items[row] for row, similarity in nearest(vector, vectors, top_k)
            if similarity >= threshold
        ]

    async def write(self, payload: WritePayload, *, node: str) -> int:
        """Nothing: a file memory is read-only."""
        return 0

    # --- the index -------------------------------------------------------------------------

    async def _update(self) -> bool:
        """Index new and changed files, forget removed ones; whether anything changed."""
        current = {path: source for source in self.sources for path in _scan(source)}
        gone = [path for path in self.files if path not in current]
        self._forget(gone)
        self._seen = {*current, *gone}
        changed = bool(gone)
        chunks: list[tuple[str, dict[str, Any]]] = []
        for path, source in current.items():
            raw = _read_source(path)  # None: left out of the index
            digest = hashlib.md5(raw).hexdigest()[:16] if raw is not None else ""
            known = self.files.get(path)
            if known is not None:
                if raw is not None and known.get("hash") == digest:
                    continue  # unchanged: its chunks stay
                self._forget([path])
                changed = True
            if raw is not None:
                chunks.extend(self._chunks(path, raw, digest, source.encoding))
        if chunks:
            vectors = await self.embedder.embed([text for text, _ in chunks])
            from devall_cli.memory.vectors import unit

            for (text, metadata), vector in zip(chunks, vectors, strict=True):
                item_id = f"{metadata['file_hash']}_{metadata['chunk_index']}"
                self.items.append(MemoryItem(item_id, text, metadata, unit(vector)))
        return changed or bool(chunks)

    def _forget(self, paths: list[str]) -> None:
        if not paths:
            return
        dropped = set(paths)
        self.items = [item for item in self.items if _file_of(item) not in dropped]
        for path in paths:
            self.files.pop(path, None)

    def _chunks(
        self, path: str, raw: bytes, digest: str, encoding: str
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        try:
            content = raw.decode(encoding, errors="ignore")
        except LookupError:
            return
        if not content.strip():
            return
        pieces = chunk_text(self.redactor.text(content))  # no secret reaches the index
        self.files[path] = {
            "hash": digest,
            "size": len(raw),
            "chunks_count": len(pieces),
            "indexed_at": time.time(),
        }
        for index, piece in enumerate(pieces):
            metadata = {
                "source_type": "file",
                "file_path": path,
                "file_name": Path(path).name,
                "file_hash": digest,
                "file_size": len(raw),
                "chunk_index": index,
                "total_chunks": len(pieces),
                "encoding": encoding,
            }
            yield piece, metadata


def read_index(data: Any, path: Path, store: str) -> tuple[FileEntries, list[MemoryItem]]:
    """The files and chunks of an index file's JSON; anything else in their place refuses it."""
    if not isinstance(data, dict):
        raise unreadable_error(path, store, "not a file memory index")
    files = data.get("file_metadata")
    if files is None:
        files = {}
    if not isinstance(files, dict):
        reason = f"its 'file_metadata' is {json_kind(files)}, not an object"
        raise unreadable_error(path, store, reason)
    for name, entry in files.items():
        if not isinstance(entry, dict):
            reason = f"the 'file_metadata' of {name!r} is {json_kind(entry)}, not an object"
            raise unreadable_error(path, store, reason)
    contents = data.get("contents")
    if contents is None:
        contents = []
    if not isinstance(contents, list):
        reason = f"its 'contents' is {json_kind(contents)}, not a list"
        raise unreadable_error(path, store, reason)
    items = items_of(contents, path, store, " of 'contents'")
    return {str(name): dict(entry) for name, entry in files.items()}, items


def chunk_text(text: str) -> list[str]:
    """Pieces of at most 500 characters overlapping by 50, cut after a sentence end when one is
    in a piece's second half."""
    if len(text) <= CHUNK_SIZE:
        return [text]
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = start + CHUNK_SIZE
        piece = text[start:end]
        if end < len(text):
            last = max(piece.rfind(mark) for mark in _SENTENCE_ENDS)
            if last > CHUNK_SIZE // 2:
                piece = piece[: last + 1]
                end = start + last + 1
        chunks.append(piece.strip())
        start = end - CHUNK_OVERLAP
        if start >= len(text) or end >= len(text):
            break
    return [chunk for chunk in chunks if chunk]


def _scan(source: FileSource) -> list[str]:
    root = Path(source.path)
    if root.is_file():
        return [str(root)] if _wanted(root, source) else []
    if not root.is_dir():
        return []
    found = root.rglob("*") if source.recursive else root.glob("*")
    return sorted(str(path) for path in found if path.is_file() and _wanted(path, source))


def _wanted(path: Path, source: FileSource) -> bool:
    return source.file_types is None or path.suffix in source.file_types


def _file_of(item: MemoryItem) -> str | None:
    """The file a chunk was cut from."""
    path = item.metadata.get("file_path")
    return path if isinstance(path, str) else None


def _read_source(path: str) -> bytes | None:
    """A source file's bytes; None when it is not a regular file, is over the limit (it is left
    out of the index) or cannot be read."""
    try:
        return read_regular_file(Path(path), limits.MEMORY_SOURCE_BYTES)
    except (RefusedFileError, OSError):
        return None


# --- config ----------------------------------------------------------------------------------

_SOURCE_KEYS = KeySpec(known=frozenset({"path", "file_types", "recursive", "encoding"}))


def parse_file_memory(ck: Checker, config: dict[str, Any], path: KeyPath) -> Any:
    """`file_sources` (required), `embedding` (required), `index_path` (or `memory_path`)."""
    index = memory_path(ck, config, "index_path", path)
    if index is None:
        index = memory_path(ck, config, "memory_path", path)
    sources = _sources(ck, config.get("file_sources"), (*path, "file_sources"))
    embedding = parse_embedding(ck, config.get("embedding"), (*path, "embedding"))
    if embedding is None and config.get("embedding") is None:
        ck.error((*path, "embedding"), "a file memory needs an embedding block to search its files")
    if not sources or embedding is None:
        return None
    return FileMemoryConfig(sources, embedding, index)


def _sources(ck: Checker, raw: Any, path: KeyPath) -> tuple[FileSource, ...]:
    if raw is UNRESOLVED:
        return ()
    items = raw if isinstance(raw, list) else [raw] if isinstance(raw, dict) else None
    if not items:
        ck.error(path, f"file_sources must list at least one {{path: ...}}, got {describe(raw)}")
        return ()
    sources: list[FileSource] = []
    for index, item in enumerate(items):
        here = (*path, index) if isinstance(raw, list) else path
        entry = get_mapping(ck, item, here, "a file source")
        if entry is None:
            continue
        check_keys(ck, entry, here, _SOURCE_KEYS)
        where = opt_str(ck, entry, "path", here, required=True)
        types = opt_str_list(ck, entry, "file_types", here) if "file_types" in entry else None
        recursive = opt_bool(ck, entry, "recursive", here, True)
        encoding = (opt_str(ck, entry, "encoding", here) or "utf-8").strip() or "utf-8"
        if where is None:
            continue
        absolute = (ck.workflow_dir / where.strip()).expanduser().resolve()
        if not absolute.exists():
            ck.warning((*here, "path"), f"{where} does not exist (nothing is indexed from it)")
        sources.append(FileSource(str(absolute), types, recursive, encoding))
    return tuple(sources)


def _build(settings: Any, context: StoreContext) -> MemoryStore:
    return FileMemory(settings, context)


def _shapes() -> dict[str, Schema]:
    return {
        "embedding": embedding_shape(),
        "file_sources": array_of(keys_object(_SOURCE_KEYS, strict=False)),
    }


FILE = MEMORY_STORES.register(
    MemoryStoreType(
        "file",
        "a read-only index of files, searched by embedding similarity",
        KeySpec(known=frozenset({"index_path", "memory_path", "file_sources", "embedding"})),
        parse_file_memory,
        _build,
        config_required=True,
        shapes=_shapes,
    )
)
