"""Normalization of MCP tool results and function return values into blocks (SPEC.md §6)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import struct
import wave
import zlib
from pathlib import Path

import mcp_types as mt
import pytest

from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import AttachmentBlock, DataBlock, ResourceLinkBlock, TextBlock
from devall_cli.tools.normalize import (
    blocks_to_json,
    cap_blocks,
    normalize_result,
    normalize_value,
    render_for_model,
    result_meta,
)


def png_bytes(width: int = 3, height: int = 2) -> bytes:
    """A valid RGB PNG image, built by hand."""

    def chunk(tag: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(tag + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + b"\xff\x80\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def wav_bytes() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x10" * 400)
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def result(*content: object, structured: object = None) -> mt.CallToolResult:
    return mt.CallToolResult.model_construct(content=list(content), structured_content=structured)


@pytest.fixture
def store(tmp_path: Path) -> AttachmentStore:
    return AttachmentStore(tmp_path / "run")


def saved_bytes(store: AttachmentStore, block: AttachmentBlock) -> bytes:
    return (store.run_dir / block.path).read_bytes()


def test_text_content_becomes_a_text_block(store: AttachmentStore) -> None:
    blocks = normalize_result(result(mt.TextContent(text="hello")), tool_name="greet", store=store)
    assert blocks == (TextBlock(text="hello", tool_name="greet", source="mcp_tool"),)


def test_image_is_decoded_and_saved_byte_for_byte(store: AttachmentStore) -> None:
    image = png_bytes()
    (block,) = normalize_result(
        result(mt.ImageContent(data=b64(image), mime_type="image/png")), tool_name="draw",
        store=store,
    )
    assert isinstance(block, AttachmentBlock)
    assert block.path == "attachments/draw_image_1.png"
    assert saved_bytes(store, block) == image
    assert block.sha256 == hashlib.sha256(image).hexdigest()
    assert (block.size, block.kind, block.mime_type) == (len(image), "image", "image/png")
    assert (block.source, block.tool_name) == ("mcp_tool", "draw")
    assert render_for_model([block]) == (
        f"[image saved: attachments/draw_image_1.png (image/png, {len(image)} bytes)]"
    )


def test_audio_is_saved_as_wav(store: AttachmentStore) -> None:
    audio = wav_bytes()
    (block,) = normalize_result(
        result(mt.AudioContent(data=b64(audio), mime_type="audio/wav")), tool_name="say",
        store=store,
    )
    assert isinstance(block, AttachmentBlock)
    assert block.path == "attachments/say_audio_1.wav"
    assert (block.kind, block.size) == ("audio", len(audio))
    assert saved_bytes(store, block) == audio


def test_line_wrapped_base64_is_accepted(store: AttachmentStore) -> None:
    image = png_bytes(16, 16)
    wrapped = base64.encodebytes(image).decode()  # 76-column lines
    assert "\n" in wrapped
    (block,) = normalize_result(
        result(mt.ImageContent(data=wrapped, mime_type="image/png")), tool_name="t", store=store
    )
    assert isinstance(block, AttachmentBlock)
    assert saved_bytes(store, block) == image


def test_embedded_text_resource_keeps_uri_and_mime(store: AttachmentStore) -> None:
    item = mt.EmbeddedResource(resource=mt.TextResourceContents(
        uri="file:///notes.md", mime_type="text/markdown", text="# Notes"))
    assert normalize_result(result(item), tool_name="read", store=store) == (
        TextBlock(text="# Notes", tool_name="read", uri="file:///notes.md",
                  mime_type="text/markdown"),
    )


@pytest.mark.parametrize(
    ("mime", "kind", "name"),
    [
        ("application/pdf", "file", "fetch_file_1.pdf"),
        ("video/mp4", "video", "fetch_video_1.mp4"),
        ("image/jpeg", "image", "fetch_image_1.jpg"),
        ("audio/mpeg", "audio", "fetch_audio_1.mp3"),
    ],
)
def test_embedded_blob_becomes_an_attachment_with_kind_from_mime(
    store: AttachmentStore, mime: str, kind: str, name: str
) -> None:
    payload = bytes(range(200))
    item = mt.EmbeddedResource(resource=mt.BlobResourceContents(
        uri="res://doc/1", mime_type=mime, blob=b64(payload)))
    (block,) = normalize_result(result(item), tool_name="fetch", store=store)
    assert isinstance(block, AttachmentBlock)
    assert (block.kind, block.uri, block.path) == (kind, "res://doc/1", f"attachments/{name}")
    assert saved_bytes(store, block) == payload


def test_resource_link_becomes_its_own_typed_block(store: AttachmentStore) -> None:
    link = mt.ResourceLink(uri="https://example.invalid/report.pdf", name="report",
                           title="The Report", mime_type="application/pdf",
                           description="The report", size=1234)
    blocks = normalize_result(result(link), tool_name="find", store=store)
    assert blocks == (
        ResourceLinkBlock(uri="https://example.invalid/report.pdf", name="report",
                          title="The Report", description="The report",
                          mime_type="application/pdf", size=1234, tool_name="find"),
    )
    assert blocks_to_json(blocks)[0] == {
        "type": "resource_link", "uri": "https://example.invalid/report.pdf", "name": "report",
        "title": "The Report", "description": "The report", "mime_type": "application/pdf",
        "size": 1234, "tool_name": "find", "source": "mcp_tool",
    }
    assert render_for_model(blocks) == (
        "[resource link: report <https://example.invalid/report.pdf> (application/pdf): "
        "The report]"
    )


def test_annotations_and_meta_of_content_are_kept(store: AttachmentStore) -> None:
    text = mt.TextContent(text="hi", annotations=mt.Annotations(audience=["user"], priority=0.5),
                          _meta={"trace": "t1"})
    image = mt.ImageContent(data=b64(png_bytes()), mime_type="image/png",
                            annotations=mt.Annotations(priority=1.0))
    embedded = mt.EmbeddedResource(
        resource=mt.TextResourceContents(uri="file:///a.txt", text="A", _meta={"rev": 3}),
        _meta={"outer": True})
    blocks = normalize_result(result(text, image, embedded), tool_name="t", store=store)
    first, second, third = blocks_to_json(blocks)
    assert (first["annotations"], first["meta"]) == (
        {"audience": ["user"], "priority": 0.5}, {"trace": "t1"})
    assert second["type"] == "attachment" and second["annotations"] == {"priority": 1.0}
    assert (third["meta"], third["resource_meta"]) == ({"outer": True}, {"rev": 3})


def test_result_meta_is_read_from_the_result() -> None:
    raw = mt.CallToolResult(content=[], _meta={"request": "r-1"})
    assert result_meta(raw) == {"request": "r-1"}
    assert result_meta(mt.CallToolResult(content=[])) is None


def test_structured_content_alone_becomes_one_data_block(store: AttachmentStore) -> None:
    blocks = normalize_result(result(structured={"temp": 21.5, "city": "Oslo"}),
                              tool_name="w", store=store)
    assert blocks == (DataBlock(data={"temp": 21.5, "city": "Oslo"}, tool_name="w"),)
    assert render_for_model(blocks) == '{"temp":21.5,"city":"Oslo"}'


def test_structured_content_is_kept_next_to_content(store: AttachmentStore) -> None:
    blocks = normalize_result(result(mt.TextContent(text="21.5"), structured={"result": 21.5}),
                              tool_name="w", store=store)
    assert blocks == (TextBlock(text="21.5", tool_name="w"),
                      DataBlock(data={"result": 21.5}, tool_name="w"))


def test_the_model_sees_structured_content_once(store: AttachmentStore) -> None:
    same = normalize_result(result(mt.TextContent(text='{"t": 1}'), structured={"t": 1}),
                            tool_name="w", store=store)
    assert render_for_model(same) == '{"t": 1}'
    other = normalize_result(result(mt.TextContent(text="sunny"), structured={"t": 1}),
                             tool_name="w", store=store)
    assert render_for_model(other) == 'sunny\n{"t":1}'


def test_non_object_structured_content_is_wrapped(store: AttachmentStore) -> None:
    blocks = normalize_result(result(structured=[1, 2]), tool_name="w", store=store)
    assert blocks == (DataBlock(data={"result": [1, 2]}, tool_name="w"),)


@pytest.mark.parametrize("kind", ["image", "audio"])
@pytest.mark.parametrize("data", ["not*base64!", "aGVs#bG8=", "aGVsbG8"])
def test_undecodable_base64_is_reported_not_raised(
    store: AttachmentStore, kind: str, data: str
) -> None:
    cls = mt.ImageContent if kind == "image" else mt.AudioContent
    item = cls(data=data, mime_type=f"{kind}/png")
    assert normalize_result(result(item), tool_name="cam", store=store) == (
        TextBlock(text=f"[failed to decode {kind} content from cam]", tool_name="cam"),
    )
    assert not store.directory.exists()


def test_without_a_store_binary_content_is_named_but_omitted() -> None:
    blob = mt.EmbeddedResource(resource=mt.BlobResourceContents(
        uri="res://x.bin", mime_type="application/octet-stream", blob=b64(b"abc")))
    blocks = normalize_result(
        result(mt.ImageContent(data=b64(png_bytes()), mime_type="image/png"),
               mt.ImageContent(data=b64(png_bytes()), mime_type="image/png"),
               mt.AudioContent(data=b64(wav_bytes()), mime_type="audio/wav"), blob),
        tool_name="draw", store=None,
    )
    assert [b.text for b in blocks if isinstance(b, TextBlock)] == [
        "[binary content omitted: draw_image_1.png (image/png)]",
        "[binary content omitted: draw_image_2.png (image/png)]",
        "[binary content omitted: draw_audio_1.wav (audio/wav)]",
        "[binary content omitted: res://x.bin (application/octet-stream)]",
    ]


def test_oversized_base64_is_refused_without_decoding(store: AttachmentStore) -> None:
    garbage = "!" * 101  # not base64 at all: decoding would report a decode failure
    (block,) = normalize_result(
        result(mt.ImageContent(data=garbage, mime_type="image/png")),
        tool_name="t", store=store, max_base64_bytes=100,
    )
    assert block == TextBlock(text="[binary content refused: 101 bytes exceeds limit]",
                              tool_name="t")
    ok = b64(b"x" * 75)  # exactly 100 base64 characters
    (saved,) = normalize_result(result(mt.ImageContent(data=ok, mime_type="image/png")),
                                tool_name="t", store=store, max_base64_bytes=100)
    assert isinstance(saved, AttachmentBlock)


def test_unknown_content_types_become_placeholders(store: AttachmentStore) -> None:
    odd = mt.ToolUseContent(id="1", name="x", input={})
    blocks = normalize_result(result(odd, {"type": "hologram"}, 42), tool_name="t", store=store)
    assert [b.text for b in blocks if isinstance(b, TextBlock)] == [
        "[unsupported content type 'tool_use' from t]",
        "[unsupported content type 'hologram' from t]",
        "[unsupported content type 'None' from t]",
    ]


def test_tool_name_and_mime_cannot_write_outside_the_folder(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path / "run")
    blocks = normalize_result(
        result(mt.ImageContent(data=b64(b"evil"), mime_type="image/../../evil")),
        tool_name="../../x", store=store,
    )
    (block,) = blocks
    assert isinstance(block, AttachmentBlock)
    assert block.path == "attachments/_.._x_image_1.bin"
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written == [tmp_path / "run" / "attachments" / "_.._x_image_1.bin"]


def test_wire_json_and_fastmcp_results_are_handled(store: AttachmentStore) -> None:
    wire = {"content": [{"type": "image", "data": b64(b"\x01\x02"), "mimeType": "image/png"},
                        {"type": "text", "text": "ok"}],
            "isError": False}
    parsed = mt.CallToolResult.model_validate(wire)
    first = normalize_result(parsed, tool_name="a", store=store)
    second = normalize_result(wire, tool_name="a", store=store)
    assert [type(b).__name__ for b in first] == ["AttachmentBlock", "TextBlock"]
    assert [b.path for b in (first[0], second[0]) if isinstance(b, AttachmentBlock)] == [
        "attachments/a_image_1.png", "attachments/a_image_2.png"
    ]

    from fastmcp.client.client import CallToolResult

    client_result = CallToolResult(content=[mt.TextContent(text="hi")], structured_content=None,
                                   meta=None)
    assert normalize_result(client_result, tool_name="c", store=store, source="mcp_local") == (
        TextBlock(text="hi", tool_name="c", source="mcp_local"),
    )


def test_render_joins_blocks_and_shows_data_compactly() -> None:
    blocks = [
        TextBlock(text="line one"),
        AttachmentBlock(path="attachments/a_audio_1.wav", mime_type="audio/wav", size=10,
                        sha256="0" * 64, kind="audio"),
        DataBlock(data={"uri": "res://1", "name": "ünï"}),
    ]
    assert render_for_model(blocks) == (
        'line one\n[audio saved: attachments/a_audio_1.wav (audio/wav, 10 bytes)]\n'
        '{"uri":"res://1","name":"ünï"}'
    )


def test_render_truncates_with_a_visible_marker() -> None:
    blocks = [TextBlock(text="a" * 30), TextBlock(text="b" * 30)]
    assert render_for_model(blocks, max_chars=61) == "a" * 30 + "\n" + "b" * 30
    cut = render_for_model(blocks, max_chars=40)
    assert cut == "a" * 30 + "\n" + "b" * 9 + "\n…[truncated: 40 of 61 characters shown]"


def test_cap_blocks_cuts_where_the_limit_falls_and_keeps_attachments() -> None:
    saved = AttachmentBlock("attachments/a.png", "image/png", 3, "00", "image")
    blocks = (
        TextBlock("a" * 6),
        saved,
        DataBlock({"k": "v" * 10}),  # 18 characters as JSON
        TextBlock("never shown"),
    )
    assert cap_blocks(blocks, 100) == blocks
    capped = cap_blocks(blocks, 10)
    assert capped[:2] == blocks[:2]
    assert capped[2] == TextBlock('{"k"\n…[truncated: 10 of 35 characters]')
    assert len(capped) == 3  # the text after the cut is dropped
    # A limit reached exactly at a block's end still says that more was left out.
    assert cap_blocks(blocks, 6)[2] == TextBlock("…[truncated: 6 of 35 characters]")


def test_blocks_to_json_gives_plain_dicts_with_type_first() -> None:
    blocks = (
        TextBlock(text="hi", tool_name="t"),
        DataBlock(data={"nested": {"k": (1, 2)}}, tool_name="t"),
        AttachmentBlock(path="attachments/x.png", mime_type="image/png", size=1, sha256="ab",
                        kind="image", tool_name="t", uri="res://x"),
    )
    out = blocks_to_json(blocks)
    assert [next(iter(entry)) for entry in out] == ["type", "type", "type"]
    assert out[0] == {"type": "text", "text": "hi", "tool_name": "t", "source": "mcp_tool"}
    assert out[1]["data"] == {"nested": {"k": [1, 2]}}
    assert out[2]["uri"] == "res://x"
    assert json.loads(json.dumps(out)) == out


def test_function_values_become_text_or_json(store: AttachmentStore) -> None:
    def text_of(value: object) -> str:
        (block,) = normalize_value(value, tool_name="f", store=store)
        assert isinstance(block, TextBlock)
        assert (block.source, block.tool_name) == ("function", "f")
        return block.text

    assert text_of("plain") == "plain"
    # A dict as ChatDev hands it to the model (json.dumps(..., ensure_ascii=False, indent=2)).
    assert text_of({"a": [1, 2.5, None], "é": True}) == (
        '{\n  "a": [\n    1,\n    2.5,\n    null\n  ],\n  "é": true\n}'
    )
    assert text_of([1, "x"]) == '[1, "x"]'
    assert text_of(42) == "42"
    assert text_of(False) == "false"
    assert text_of(None) == "null"
    assert text_of({"p": Path("/a/b")}) == '{\n  "p": "/a/b"\n}'


def test_function_bytes_become_a_file_attachment(store: AttachmentStore) -> None:
    data = bytes(range(256)) * 3
    (block,) = normalize_value(data, tool_name="dump", store=store)
    assert isinstance(block, AttachmentBlock)
    assert block.path == "attachments/dump_file_1.bin"
    assert (block.kind, block.mime_type, block.source) == (
        "file", "application/octet-stream", "function"
    )
    assert saved_bytes(store, block) == data
    assert normalize_value(data, tool_name="dump", store=None) == (
        TextBlock(text="[binary content omitted: dump_file_1.bin (application/octet-stream)]",
                  tool_name="dump", source="function"),
    )


def test_function_blocks_are_kept(store: AttachmentStore) -> None:
    mine = DataBlock(data={"k": 1}, source="function")
    assert normalize_value(mine, tool_name="f", store=store) == (
        DataBlock(data={"k": 1}, tool_name="f", source="function"),
    )
    pair = [TextBlock(text="a", tool_name="other"), TextBlock(text="b")]
    assert [b.tool_name for b in normalize_value(pair, tool_name="f", store=store)] == [
        "other", "f"
    ]
