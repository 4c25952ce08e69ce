"""The store types on their own: what they keep, what they find, and their files."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from devall_cli import limits
from devall_cli.errors import RunFailedError
from devall_cli.memory import files
from devall_cli.memory.base import (
    AUTO,
    MEMORY_STORES,
    EmbeddingConfig,
    Snapshot,
    StoreContext,
    WritePayload,
)
from devall_cli.memory.blackboard import BlackboardMemoryConfig
from devall_cli.memory.file import FileMemoryConfig, FileSource
from devall_cli.memory.simple import SimpleMemoryConfig
from devall_cli.redaction import Redactor
from tests.servers.fake_llm import FakeLLM


class WordEmbedder:
    """The fake server's vectors, in process; counts the texts it embedded."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str], *, node: str = "") -> list[list[float]]:
        self.texts.extend(texts)
        return [FakeLLM.embedding(text) for text in texts]


def context(
    name: str, run_dir: Path | None, embedder: WordEmbedder, secret: str = ""
) -> StoreContext:
    return StoreContext(
        name=name,
        run_dir=run_dir,
        file_stem=f"memory_{name}",
        redactor=Redactor([secret] if secret else []),
        embedder=lambda config: embedder,
    )


def store(type_name: str, settings: object, ctx: StoreContext):  # type: ignore[no-untyped-def]
    kind = MEMORY_STORES.get(type_name)
    assert kind is not None
    return kind.build(settings, ctx)


def visit(inputs: str, output: str) -> WritePayload:
    return WritePayload("a writer", inputs, Snapshot(f"(user) {inputs}"), Snapshot(output))


EMBEDDING = EmbeddingConfig(model="fake")


async def test_simple_memory_finds_the_similar_visit_in_a_second_run(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    embedder = WordEmbedder()
    first = store("simple", SimpleMemoryConfig(str(path), EMBEDDING), context("n", None, embedder))
    await first.load()
    assert await first.write(visit("lighthouses", "The lighthouse keeper counted ships."), node="a")
    assert await first.write(visit("cooking", "A recipe for tomato soup with basil."), node="a")
    first.save()
    saved = json.loads(path.read_text())
    assert [len(item["embedding"]) for item in saved] == [64, 64]

    second = store("simple", SimpleMemoryConfig(str(path), EMBEDDING), context("n", None, embedder))
    await second.load()
    assert second.count() == 2
    found = await second.retrieve("tell me about the lighthouse keeper", 1, -1.0, node="a")
    assert [item.content_summary for item in found] == [saved[0]["content_summary"]]
    assert "lighthouse keeper" in found[0].content_summary


async def test_simple_memory_skips_repeats_short_and_empty_outputs(tmp_path: Path) -> None:
    memory = store(
        "simple", SimpleMemoryConfig(AUTO, EMBEDDING), context("n", tmp_path, WordEmbedder())
    )
    await memory.load()
    assert await memory.write(visit("q", "a long enough answer about ships"), node="a") == 1
    assert await memory.write(visit("q", "a long enough answer about ships"), node="a") == 0
    assert await memory.write(visit("", "tiny"), node="a") == 0
    assert await memory.write(visit("q", "   "), node="a") == 0
    memory.save()
    assert memory.path == tmp_path / "memory_n.json"  # `auto`: the run directory
    assert len(json.loads(memory.path.read_text())) == 1


async def test_similarity_threshold_filters(tmp_path: Path) -> None:
    memory = store(
        "simple", SimpleMemoryConfig(AUTO, EMBEDDING), context("n", None, WordEmbedder())
    )
    await memory.write(visit("q", "zebra giraffe elephant savanna animals"), node="a")
    assert await memory.retrieve("quantum physics lecture notes", 3, 0.9, node="a") == []
    assert len(await memory.retrieve("quantum physics lecture notes", 3, -1.0, node="a")) == 1


async def test_simple_memory_without_embedding_is_append_only(tmp_path: Path) -> None:
    embedder = WordEmbedder()
    memory = store("simple", SimpleMemoryConfig(AUTO, None), context("n", None, embedder))
    for n in range(4):
        await memory.write(visit("q", f"answer number {n} with some length"), node="a")
    found = await memory.retrieve("anything", 2, -1.0, node="a")
    assert [item.content_summary[-30:] for item in found] == [
        "answer number 2 with some length"[-30:],
        "answer number 3 with some length"[-30:],
    ]
    assert embedder.texts == []


async def test_blackboard_keeps_the_newest_items_and_returns_the_latest(tmp_path: Path) -> None:
    path = tmp_path / "board.json"
    settings = BlackboardMemoryConfig(str(path), max_items=3)
    board = store("blackboard", settings, context("b", None, WordEmbedder()))
    await board.load()
    for n in range(5):
        await board.write(visit("q", f"post {n}"), node="a")
    board.save()
    again = store("blackboard", settings, context("b", None, WordEmbedder()))
    await again.load()
    assert [i.content_summary for i in await again.retrieve("", 2, -1, node="a")] == [
        "post 3",
        "post 4",
    ]
    assert [i.content_summary for i in await again.retrieve("", 10, -1, node="a")] == [
        "post 2",
        "post 3",
        "post 4",
    ]


async def test_blackboard_without_path_lives_in_memory_only(tmp_path: Path) -> None:
    board = store("blackboard", BlackboardMemoryConfig(), context("b", tmp_path, WordEmbedder()))
    await board.write(visit("q", "post"), node="a")
    board.save()
    assert board.path is None and list(tmp_path.iterdir()) == []


async def test_secrets_never_reach_a_memory_file(tmp_path: Path) -> None:
    secret = "sk-never-in-memory-1234"
    path = tmp_path / "board.json"
    ctx = context("b", None, WordEmbedder(), secret)
    board = store("blackboard", BlackboardMemoryConfig(str(path)), ctx)
    await board.write(visit(f"key {secret}", f"the key is {secret}"), node="a")
    board.save()
    assert secret not in path.read_text()
    assert "the key is ***" in path.read_text()


async def test_an_unreadable_memory_file_stops_the_run_instead_of_being_overwritten(
    tmp_path: Path,
) -> None:
    path = tmp_path / "board.json"
    path.write_text("{not json")
    board = store(
        "blackboard", BlackboardMemoryConfig(str(path)), context("b", None, WordEmbedder())
    )
    with pytest.raises(RunFailedError, match=r"memory store 'b': cannot read .*not valid JSON"):
        await board.load()
    assert path.read_text() == "{not json"


async def test_file_memory_indexes_once_and_updates_changed_files(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ships.md").write_text("The harbour holds seventeen ships in winter.")
    (docs / "soup.md").write_text("Tomato soup needs basil and salt.")
    (docs / "skip.txt").write_text("not indexed")
    index = tmp_path / "index.json"
    settings = FileMemoryConfig(
        (FileSource(str(docs), (".md",)),), EMBEDDING, index_path=str(index)
    )
    embedder = WordEmbedder()
    first = store("file", settings, context("docs", None, embedder))
    await first.load()
    assert first.count() == 2 and len(embedder.texts) == 2 and index.exists()

    embedder.texts.clear()
    second = store("file", settings, context("docs", None, embedder))
    await second.load()
    assert embedder.texts == []  # unchanged files are not embedded again
    (found,) = await second.retrieve("how many ships in the harbour", 1, -1, node="a")
    assert "seventeen ships" in found.content_summary
    assert await second.write(visit("q", "answer"), node="a") == 0  # read-only

    (docs / "soup.md").write_text("Pumpkin soup needs nutmeg.")
    (docs / "ships.md").unlink()
    embedder.texts.clear()
    third = store("file", settings, context("docs", None, embedder))
    await third.load()
    assert embedder.texts == ["Pumpkin soup needs nutmeg."]
    assert [item.content_summary for item in third.items] == ["Pumpkin soup needs nutmeg."]
    assert list(json.loads(index.read_text())["file_metadata"]) == [str(docs / "soup.md")]


# --- what is read, and what is refused ---------------------------------------------------------

PROC_FILE = Path("/proc/self/status")  # says 0 bytes; holds about a thousand


def file_settings(index: Path, source: Path = PROC_FILE) -> FileMemoryConfig:
    return FileMemoryConfig((FileSource(str(source)),), EMBEDDING, index_path=str(index))


@pytest.mark.skipif(not PROC_FILE.exists(), reason="needs Linux /proc")
async def test_reads_stop_at_the_limit_whatever_size_the_file_tells(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert PROC_FILE.stat().st_size == 0 and len(PROC_FILE.read_bytes()) > 64
    monkeypatch.setattr(limits, "MEMORY_FILE_BYTES", 64)
    for type_name, settings in (
        ("blackboard", BlackboardMemoryConfig(str(PROC_FILE))),
        ("file", file_settings(PROC_FILE, tmp_path)),
    ):
        memory = store(type_name, settings, context("m", None, WordEmbedder()))
        with pytest.raises(RunFailedError) as caught:
            await memory.load()
        assert str(caught.value) == (
            f"memory store 'm': cannot read {PROC_FILE}: it holds more than the 64 bytes "
            "devall reads"
        )

    embedder = WordEmbedder()
    indexed = store("file", file_settings(tmp_path / "a.json"), context("m", None, embedder))
    await indexed.load()
    assert indexed.count() >= 1 and "Name:" in embedder.texts[0]
    monkeypatch.setattr(limits, "MEMORY_SOURCE_BYTES", 64)
    embedder.texts.clear()
    left_out = store("file", file_settings(tmp_path / "b.json"), context("m", None, embedder))
    await left_out.load()
    assert left_out.count() == 0 and embedder.texts == []


@contextlib.contextmanager
def plant(kind: str, path: Path) -> Iterator[None]:
    """Something that is not a regular file at `path`, for the time of the block."""
    if kind == "directory":
        path.mkdir()
        yield
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(path))
            yield
    else:
        path.symlink_to("/dev/null")  # followed: the device is what would be read
        yield


@pytest.mark.parametrize("kind", ["directory", "socket", "device"])
async def test_anything_but_a_regular_file_is_refused_naming_store_and_path(
    kind: str, tmp_path: Path
) -> None:
    path = tmp_path / "m.json"
    said = {"directory": "a directory", "socket": "a socket", "device": "a character device"}
    with plant(kind, path):
        for type_name, settings in (
            ("blackboard", BlackboardMemoryConfig(str(path))),
            ("simple", SimpleMemoryConfig(str(path), None)),
            ("file", file_settings(path, tmp_path / "docs")),
        ):
            memory = store(type_name, settings, context("m", None, WordEmbedder()))
            with pytest.raises(RunFailedError) as caught:
                await memory.load()
            assert str(caught.value) == (
                f"memory store 'm': cannot read {path}: it is {said[kind]}, not a regular file"
            )
        assert path.is_dir() if kind == "directory" else not path.is_file()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


@pytest.mark.parametrize(
    ("type_name", "document", "reason"),
    [
        (
            "blackboard",
            [{"foo": "bar"}, 42, "str", None],
            "entry 0 is not a memory item: it has no 'id'",
        ),
        (
            "simple",
            [{"id": "a", "content_summary": "kept"}, 42],
            "entry 1 is not a memory item: it is a number, not an object",
        ),
        (
            "simple",
            [{"id": "a", "content_summary": "kept", "embedding": ["x"]}],
            "entry 0 is not a memory item: its 'embedding' is not a list of numbers",
        ),
        (
            "file",
            {"file_metadata": {}, "contents": [{"id": "c", "output_snapshot": "text"}]},
            "entry 0 of 'contents' is not a memory item: its 'output_snapshot' is a text, not "
            "an object",
        ),
        (
            "file",
            {"file_metadata": {"a.md": 5}, "contents": []},
            "the 'file_metadata' of 'a.md' is a number, not an object",
        ),
    ],
    ids=["blackboard", "simple_number", "simple_embedding", "file_contents", "file_metadata"],
)
async def test_a_file_holding_entries_that_are_not_items_is_refused_and_left_as_it_is(
    type_name: str, document: object, reason: str, tmp_path: Path
) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(document))
    before = path.read_bytes()
    settings = {
        "blackboard": BlackboardMemoryConfig(str(path)),
        "simple": SimpleMemoryConfig(str(path), None),
        "file": file_settings(path, tmp_path / "docs"),
    }[type_name]
    memory = store(type_name, settings, context("m", None, WordEmbedder()))
    with pytest.raises(RunFailedError) as caught:
        await memory.load()
    assert str(caught.value) == f"memory store 'm': cannot read {path}: {reason}"
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


# --- several stores on one file ----------------------------------------------------------------


class GatedEmbedder(WordEmbedder):
    """Answers once `gate` is set: the store waits in the middle of its indexing."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def embed(self, texts: Sequence[str], *, node: str = "") -> list[list[float]]:
        await self.gate.wait()
        return await super().embed(texts, node=node)


async def test_stores_sharing_a_file_keep_what_each_added(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "board.json"
    ctx = context("b", None, WordEmbedder())
    first = store("blackboard", BlackboardMemoryConfig(str(path)), ctx)
    await first.write(visit("q", "there before"), node="a")
    first.save()
    one, two = (store("blackboard", BlackboardMemoryConfig(str(path)), ctx) for _ in range(2))
    await one.load()
    await two.load()  # both hold the file as it was before either wrote
    for n in range(2):
        await one.write(visit("q", f"one {n}"), node="a")
    for n in range(3):
        await two.write(visit("q", f"two {n}"), node="b")
    one.save()
    two.save()
    await one.write(visit("q", "one again"), node="a")
    one.save()
    summaries = [item["content_summary"] for item in json.loads(path.read_text())]
    assert summaries == ["there before", "one 0", "one 1", "two 0", "two 1", "two 2", "one again"]
    assert one.count() == 7 and two.count() == 6

    notes = tmp_path / "notes.json"
    simple = [store("simple", SimpleMemoryConfig(str(notes), None), ctx) for _ in range(2)]
    for memory, words in zip(simple, ("about ships", "about soup"), strict=True):
        await memory.load()
        await memory.write(visit("q", f"a long enough answer {words}"), node="a")
        await memory.write(visit("q", "the same long answer from both"), node="a")
    for memory in simple:
        memory.save()
    kept = [item["content_summary"] for item in json.loads(notes.read_text())]
    assert len(kept) == 3 and sum("same long answer" in text for text in kept) == 1

    with _held(path):
        monkeypatch.setattr(files, "LOCK_WAIT_S", 0.05)
        await one.write(visit("q", "while another writes"), node="a")
        with pytest.raises(RunFailedError, match=r"another process has held its lock for 0.05 s"):
            one.save()
    assert len(json.loads(path.read_text())) == 7

    # A file memory's index: a run that indexes while another writes keeps the other's files.
    ships, soup = tmp_path / "ships.md", tmp_path / "soup.md"
    ships.write_text("The harbour holds seventeen ships.")
    soup.write_text("Tomato soup needs basil.")
    index = tmp_path / "index.json"
    gated = GatedEmbedder()
    slow = store("file", file_settings(index, ships), context("docs", None, gated))
    loading = asyncio.create_task(slow.load())
    await asyncio.sleep(0)  # it has read the (missing) index and waits for its embeddings
    quick = store("file", file_settings(index, soup), context("docs", None, WordEmbedder()))
    await quick.load()
    gated.gate.set()
    await loading
    saved = json.loads(index.read_text())
    assert sorted(saved["file_metadata"]) == [str(ships), str(soup)]
    assert sorted(item["content_summary"] for item in saved["contents"]) == [
        "The harbour holds seventeen ships.",
        "Tomato soup needs basil.",
    ]


@contextlib.contextmanager
def _held(path: Path) -> Iterator[None]:
    """The lock of the memory file at `path`, held as another process would hold it."""
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
