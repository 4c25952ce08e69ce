"""AttachmentStore: file names, contents, and that nothing escapes the attachments folder."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from devall_cli.tools.attachments import AttachmentStore, attachment_name, extension_for


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_save_writes_the_bytes_and_describes_them(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path / "run")
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    block = store.save(data, tool_name="draw", kind="image", mime_type="image/png")
    assert block.path == "attachments/draw_image_1.png"
    assert (tmp_path / "run" / block.path).read_bytes() == data
    assert block.size == len(data)
    assert block.sha256 == hashlib.sha256(data).hexdigest()
    assert (block.kind, block.mime_type, block.tool_name, block.uri) == (
        "image", "image/png", "draw", None
    )
    assert block.source == "mcp_tool"
    assert store.saved() == (block,)


def test_numbers_count_per_tool_and_kind(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path)
    paths = [
        store.save(b"a", tool_name="t", kind="image", mime_type="image/png").path,
        store.save(b"b", tool_name="t", kind="image", mime_type="image/jpeg").path,
        store.save(b"c", tool_name="t", kind="audio", mime_type="audio/wav").path,
        store.save(b"d", tool_name="u", kind="image", mime_type="image/png").path,
    ]
    assert paths == [
        "attachments/t_image_1.png",
        "attachments/t_image_2.jpg",
        "attachments/t_audio_1.wav",
        "attachments/u_image_1.png",
    ]


@pytest.mark.parametrize(
    ("mime", "ext"),
    [
        ("image/png", ".png"),
        ("image/jpeg", ".jpg"),
        ("audio/wav", ".wav"),
        ("audio/mpeg", ".mp3"),
        ("application/pdf", ".pdf"),
        ("text/plain; charset=utf-8", ".txt"),
        ("IMAGE/PNG", ".png"),
        ("application/x-made-up", ".bin"),
        ("", ".bin"),
        ("image/../../evil", ".bin"),
        # Content a browser would run when the report links it: saved as inert text.
        ("text/html", ".txt"),
        ("image/svg+xml", ".txt"),
        ("application/xhtml+xml", ".txt"),
        ("text/javascript", ".txt"),
        ("application/xml", ".txt"),
        ("TEXT/HTML; charset=utf-8", ".txt"),
    ],
)
def test_extension_from_mime(mime: str, ext: str) -> None:
    assert extension_for(mime) == ext


def test_tool_name_cannot_escape_the_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    store = AttachmentStore(run)
    block = store.save(b"x", tool_name="../../x", kind="image", mime_type="image/png")
    assert block.path == "attachments/_.._x_image_1.png"
    assert files_under(tmp_path) == {"run/attachments/_.._x_image_1.png"}


def test_mime_type_cannot_escape_the_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    store = AttachmentStore(run)
    block = store.save(b"x", tool_name="t", kind="image", mime_type="image/../../evil")
    assert block.path == "attachments/t_image_1.bin"
    assert block.mime_type == "image/../../evil"  # recorded as the server said
    assert files_under(tmp_path) == {"run/attachments/t_image_1.bin"}


def test_names_are_sanitized_and_bounded() -> None:
    assert attachment_name(".hidden", "image", "image/png", 1) == "hidden_image_1.png"
    assert attachment_name("a b/c\\d:é", "audio", "audio/wav", 3) == "a_b_c_d___audio_3.wav"
    assert attachment_name("...", "../kind", "image/png", 1) == "tool__kind_1.png"
    assert len(attachment_name("x" * 1000, "image", "image/png", 1)) < 100


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    folder = tmp_path / "attachments"
    folder.mkdir()
    (folder / "t_image_1.png").write_bytes(b"keep me")
    store = AttachmentStore(tmp_path)
    block = store.save(b"new", tool_name="t", kind="image", mime_type="image/png")
    assert block.path == "attachments/t_image_2.png"
    assert (folder / "t_image_1.png").read_bytes() == b"keep me"
    assert (folder / "t_image_2.png").read_bytes() == b"new"


def test_a_planted_symlink_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious")
    folder = tmp_path / "run" / "attachments"
    folder.mkdir(parents=True)
    os.symlink(outside, folder / "t_image_1.png")
    os.symlink(tmp_path / "dangling", folder / "t_image_2.png")
    block = AttachmentStore(tmp_path / "run").save(
        b"payload", tool_name="t", kind="image", mime_type="image/png"
    )
    assert block.path == "attachments/t_image_3.png"
    assert outside.read_bytes() == b"precious"
    assert not (tmp_path / "dangling").exists()


def test_a_symlinked_attachments_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "run").mkdir()
    os.symlink(elsewhere, tmp_path / "run" / "attachments")
    store = AttachmentStore(tmp_path / "run")
    with pytest.raises(OSError, match="not a plain folder"):
        store.save(b"x", tool_name="t", kind="image", mime_type="image/png")
    assert list(elsewhere.iterdir()) == []


def test_concurrent_saves_get_distinct_files(tmp_path: Path) -> None:
    store = AttachmentStore(tmp_path)
    barrier = threading.Barrier(8)

    def worker(index: int) -> None:
        barrier.wait()
        for j in range(20):
            store.save(f"{index}-{j}".encode(), tool_name="t", kind="file",
                       mime_type="application/octet-stream")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    blocks = store.saved()
    assert len({b.path for b in blocks}) == 160
    contents = {(tmp_path / b.path).read_bytes() for b in blocks}
    assert contents == {f"{i}-{j}".encode() for i in range(8) for j in range(20)}
    assert len(list((tmp_path / "attachments").iterdir())) == 160
