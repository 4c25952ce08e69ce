"""The embeddings client against the fake OpenAI-compatible server."""

from __future__ import annotations

import pytest

from devall_cli.errors import LLMHTTPError, LLMUnreachableError
from devall_cli.events import EmbeddingsEvent, Event
from devall_cli.memory.base import EmbeddingConfig
from devall_cli.memory.embeddings import BATCH, EmbeddingClient
from devall_cli.providers import http_client
from tests.servers.fake_llm import FakeLLM, FakeReply
from tests.servers.fake_llm import fake_llm as fake_llm  # re-exported fixture
from tests.servers.serve import free_port

KEY = "sk-embedding-key-0123456"


@pytest.fixture(autouse=True)
def _quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_client, "BACKOFF_BASE", 0.001)


def client(base_url: str, events: list[Event] | None = None, **settings: object) -> EmbeddingClient:
    config = EmbeddingConfig(model="emb-small", base_url=base_url, api_key=KEY, **settings)  # type: ignore[arg-type]
    return EmbeddingClient(
        config, store="notes", emit=events.append if events is not None else None, environ={}
    )


async def test_vectors_come_back_in_order_with_usage_and_the_key(fake_llm: FakeLLM) -> None:
    events: list[Event] = []
    embedder = client(fake_llm.base_url, events)
    try:
        vectors = await embedder.embed(["red ships", "blue soup!"], node="a")
    finally:
        await embedder.aclose()
    assert vectors == [FakeLLM.embedding("red ships"), FakeLLM.embedding("blue soup")]
    (request,) = fake_llm.embedding_requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "emb-small",
        "input": ["red ships", "blue soup"],
        "encoding_format": "float",
    }
    (event,) = [e for e in events if isinstance(e, EmbeddingsEvent)]
    assert (event.store, event.node_id, event.inputs) == ("notes", "a", 2)
    assert event.usage["total_tokens"] == 4


async def test_many_texts_are_sent_in_batches_and_empty_ones_are_zero(fake_llm: FakeLLM) -> None:
    embedder = client(fake_llm.base_url)
    try:
        vectors = await embedder.embed([f"text {n}" for n in range(BATCH + 3)] + ["?!"])
    finally:
        await embedder.aclose()
    assert [len(r.body["input"]) for r in fake_llm.embedding_requests] == [BATCH, 3]
    assert vectors[-1] == [0.0] * 64


async def test_long_texts_are_cut_or_embedded_in_pieces(fake_llm: FakeLLM) -> None:
    cut = client(fake_llm.base_url, max_length=10)
    pieces = client(fake_llm.base_url, max_length=10, use_chunking=True)
    try:
        await cut.embed(["alpha beta gamma delta"])
        await pieces.embed(["alpha beta gamma delta"])
    finally:
        await cut.aclose()
        await pieces.aclose()
    first, second = fake_llm.embedding_requests
    assert first.body["input"] == ["alpha beta"]
    assert second.body["input"] == ["alpha", " beta", " gamm", "a del", "ta"]


async def test_an_http_error_after_the_retries_is_a_remote_error(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue_embedding_error(*[FakeLLM.error_reply(500)] * 6)
    embedder = client(fake_llm.base_url, retries=1)
    try:
        with pytest.raises(LLMHTTPError, match=r"embeddings answered HTTP 500 after 2 attempts"):
            await embedder.embed(["x"])
    finally:
        await embedder.aclose()


async def test_an_unreachable_endpoint_is_a_connection_error() -> None:
    embedder = client(f"http://127.0.0.1:{free_port()}/v1", retries=0)
    try:
        with pytest.raises(LLMUnreachableError, match="cannot reach model endpoint"):
            await embedder.embed(["x"])
    finally:
        await embedder.aclose()


async def test_an_answer_without_the_vectors_is_refused(fake_llm: FakeLLM) -> None:
    fake_llm.enqueue_embedding_error(FakeReply(status=200, body=b'{"data": []}'))
    embedder = client(fake_llm.base_url)
    try:
        with pytest.raises(LLMHTTPError, match="expected 1 embeddings, got 0"):
            await embedder.embed(["x"])
    finally:
        await embedder.aclose()
