"""Lone surrogate escapes in a remote server's JSON become `\\ufffd`, however the body is cut."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
from collections.abc import AsyncIterator

import httpx2
from hypothesis import given, settings
from hypothesis import strategies as st

from devall_cli.tools.mcp_remote import clean_json_response

MESSAGE = {"jsonrpc": "2.0", "id": 1, "result": {"text": "a\ud800b \\ud800 \U0001f600 \udcff"}}
# json.dumps writes `\ud800`; the escaped backslash before `ud800` must survive as it is.
EVENTS = "".join(f"event: message\ndata: {json.dumps(MESSAGE)}\n\n" for _ in range(3)).encode()
EXPECTED = {"jsonrpc": "2.0", "id": 1, "result": {"text": "a\ufffdb \\ud800 \U0001f600 \ufffd"}}


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def _read(body: bytes, cuts: list[int], headers: dict[str, str]) -> bytes:
    edges = [0, *sorted(cuts), len(body)]
    chunks = [body[a:b] for a, b in itertools.pairwise(edges)]
    response = httpx2.Response(200, headers=headers, stream=_Chunks(chunks))

    async def go() -> bytes:
        await clean_json_response(response)
        return await response.aread()

    return asyncio.run(go())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(EVENTS)), max_size=12))
def test_an_event_stream_cut_anywhere_parses_with_replacement_characters(cuts: list[int]) -> None:
    body = _read(EVENTS, cuts, {"content-type": "text/event-stream"})
    datas = [line[len(b"data: ") :] for line in body.splitlines() if line.startswith(b"data: ")]
    assert [json.loads(data) for data in datas] == [EXPECTED] * 3


def test_a_json_body_without_a_newline_is_cleaned_whole() -> None:
    body = json.dumps(MESSAGE).encode()
    cleaned = _read(body, [3, 20, 21, 22], {"content-type": "application/json"})
    assert json.loads(cleaned) == EXPECTED


def test_compressed_and_non_json_bodies_are_left_alone() -> None:
    packed = gzip.compress(json.dumps(MESSAGE).encode())
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    assert json.loads(_read(packed, [5], headers)) == json.loads(json.dumps(MESSAGE))
    text = b"\\ud800 plain"
    assert _read(text, [], {"content-type": "text/plain"}) == text
