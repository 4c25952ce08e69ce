"""The store types on their own: what they keep, what they find, and their files."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from devall_cli.errors import RunFailedError
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
