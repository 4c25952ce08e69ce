"""ChatDev's memory text heuristics and the numpy similarity search."""

from __future__ import annotations

import math

import pytest

from devall_cli.memory.base import MemoryItem
from devall_cli.memory.file import CHUNK_OVERLAP, CHUNK_SIZE, chunk_text
from devall_cli.memory.text import (
    FOOTER,
    HEADER,
    embedding_text,
    extract_key_content,
    format_memories,
    score_memory,
    semantic_similarity,
)
from devall_cli.memory.vectors import combine, nearest, unit


def test_short_content_is_only_collapsed() -> None:
    assert extract_key_content("  a   short\n\ntext ") == "a short text"


def test_long_content_loses_boilerplate_and_keeps_three_long_sentences() -> None:
    text = (
        "You are a careful writer, write well. "
        + "x" * 50
        + "\u3002tiny\u3002"
        + "first long sentence of the text here\u3002second long sentence of the text"
        + "\u3002third long sentence of the text\u3002fourth long sentence of the text"
    )
    kept = extract_key_content(text)
    assert "You are" not in kept
    assert "tiny" not in kept  # shorter than 20 characters
    assert kept.count("\u3002") == 2  # three sentences joined
    assert "fourth" not in kept


def test_long_content_is_cut_at_500_characters() -> None:
    kept = extract_key_content("word " * 300)
    assert len(kept) == 503 and kept.endswith("...")


def test_semantic_similarity_ranks_overlap_higher_and_stays_within_one() -> None:
    close = semantic_similarity("red lighthouse keeper", "the red lighthouse keeper")
    far = semantic_similarity("red lighthouse keeper", "quantum chromodynamics lecture")
    assert 0 <= far < close <= 1


def test_recent_relevant_medium_length_memories_score_highest() -> None:
    now = 1_000_000.0
    fresh = MemoryItem("a", "the lighthouse keeper counted ships", timestamp=now)
    old = MemoryItem("b", "the lighthouse keeper counted ships", timestamp=now - 3600 * 24 * 40)
    assert score_memory(fresh, "lighthouse ships", now) > score_memory(old, "lighthouse ships", now)
    assert score_memory(old, "lighthouse ships", now) == pytest.approx(0.7 * 0.1 + 0.3)


def test_retrieved_items_are_grouped_by_store_in_order() -> None:
    found = [
        ("notes", MemoryItem("1", "one")),
        ("board", MemoryItem("2", "two")),
        ("notes", MemoryItem("3", "three")),
    ]
    body = "--- notes ---\n1. one\n2. three\n\n--- board ---\n1. two"
    assert format_memories(found) == f"{HEADER}\n\n{body}\n\n{FOOTER}"


def test_embedding_text_drops_punctuation() -> None:
    assert embedding_text("Hello,  world!\n(again)") == "Hello world again"


def test_chunks_overlap_and_break_after_sentences() -> None:
    text = ("A sentence that ends here. " * 40).strip()
    chunks = chunk_text(text)
    assert len(chunks) > 1
    assert all(len(chunk) <= CHUNK_SIZE for chunk in chunks)
    assert all(chunk.endswith(".") for chunk in chunks[:-1])
    assert chunks[1][:CHUNK_OVERLAP // 2] in chunks[0]  # pieces overlap
    assert chunk_text("short") == ["short"]


def test_nearest_orders_by_cosine_and_skips_other_lengths() -> None:
    vectors = [[1.0, 0.0], [0.6, 0.8], [0.0, 2.0], [1.0, 1.0, 1.0], [0.0, 0.0]]
    found = nearest([0.0, 1.0], vectors, 3)
    assert [row for row, _ in found] == [2, 1, 0]
    assert found[0][1] == pytest.approx(1.0)
    assert nearest([0.0, 1.0], vectors, 10)[-1][0] in (0, 4)  # zero vector: similarity 0
    assert nearest([1.0], vectors, 3) == []


def test_unit_and_combine() -> None:
    assert unit([3.0, 4.0]) == pytest.approx([0.6, 0.8])
    assert unit([0.0, 0.0]) == [0.0, 0.0]
    pieces = [[1.0, 0.0], [0.0, 1.0]]
    assert combine(pieces, "average") == pytest.approx([0.5, 0.5])
    assert combine(pieces, "first") == [1.0, 0.0]
    weighted = combine(pieces, "weighted")
    assert weighted == pytest.approx([2 / 3, 1 / 3])
    assert math.isclose(sum(weighted), 1.0, rel_tol=1e-6)
