"""Images a model answers with are saved as attachments and named in the turn's text."""

from __future__ import annotations

from pathlib import Path

from devall_cli.providers.base import AssistantMessage, MediaPart, ToolCall
from devall_cli.providers.media import store_media
from devall_cli.tools.attachments import AttachmentStore

PNG = MediaPart("image/png", b"\x89PNG fake")


def test_media_are_saved_and_named_after_the_text(tmp_path: Path) -> None:
    call = ToolCall("c1", "add", {}, "{}")
    reply = AssistantMessage("Look:", (call,), media=(PNG, MediaPart("audio/wav", b"RIFF")))
    stored, saved = store_media(reply, AttachmentStore(tmp_path), "gemini")
    assert stored.content == (
        "Look:\n[image saved: attachments/gemini_image_1.png (image/png, 9 bytes)]\n"
        "[audio saved: attachments/gemini_audio_1.wav (audio/wav, 4 bytes)]"
    )
    assert stored.media == () and stored.tool_calls == (call,)
    assert [b.path for b in saved] == [
        "attachments/gemini_image_1.png",
        "attachments/gemini_audio_1.wav",
    ]
    assert (tmp_path / "attachments" / "gemini_image_1.png").read_bytes() == PNG.data


def test_without_a_run_directory_media_are_only_named() -> None:
    stored, saved = store_media(AssistantMessage(None, media=(PNG,)), None, "gemini")
    assert stored.content == "[image omitted: image/png, 9 bytes]" and saved == []


def test_a_file_that_cannot_be_written_is_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "attachments").write_text("in the way")
    stored, saved = store_media(
        AssistantMessage("x", media=(PNG,)), AttachmentStore(tmp_path), "gemini"
    )
    assert saved == []
    assert (
        stored.content is not None
        and "[failed to save image content from gemini:" in stored.content
    )
