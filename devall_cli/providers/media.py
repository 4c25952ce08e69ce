"""Images (and other binary parts) a model answers with: saved as run attachments.

Each part is saved by the run's AttachmentStore under `attachments/<provider>_<kind>_<n>.<ext>`
and named in the turn's text the way a binary tool result is named to the model
(`[image saved: attachments/gemini_image_1.png (image/png, 1234 bytes)]`), so the node's output,
the next nodes and result.json all point at the file.
"""

from __future__ import annotations

from devall_cli.providers.base import AssistantMessage, MediaPart
from devall_cli.tools.attachments import AttachmentStore
from devall_cli.tools.base import AttachmentBlock
from devall_cli.tools.normalize import kind_for_mime, render_block


def store_media(
    reply: AssistantMessage, store: AttachmentStore | None, owner: str
) -> tuple[AssistantMessage, list[AttachmentBlock]]:
    """The reply with its media saved and named in its text; the attachments saved."""
    lines: list[str] = []
    saved: list[AttachmentBlock] = []
    for part in reply.media:
        line, block = _store(part, store, owner)
        lines.append(line)
        if block is not None:
            saved.append(block)
    text = "\n".join([reply.content, *lines] if reply.content else lines)
    return reply.with_content(text), saved


def _store(
    part: MediaPart, store: AttachmentStore | None, owner: str
) -> tuple[str, AttachmentBlock | None]:
    kind = kind_for_mime(part.mime_type)
    if store is None:
        return f"[{kind} omitted: {part.mime_type}, {len(part.data)} bytes]", None
    try:
        block = store.save(
            part.data, tool_name=owner, kind=kind, mime_type=part.mime_type, source="model"
        )
    except OSError as exc:
        return f"[failed to save {kind} content from {owner}: {exc}]", None
    return render_block(block), block
