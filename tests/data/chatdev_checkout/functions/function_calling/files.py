"""Workspace file tools written the way ChatDev's function_calling/file.py is."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Annotated, Any

from entity.messages import MessageBlock
from utils.attachments import AttachmentStore
from utils.function_catalog import ParamMeta


class FileToolContext:
    def __init__(self, ctx: dict[str, Any] | None) -> None:
        if ctx is None:
            raise ValueError("_context is required for file tools")
        store = ctx.get("attachment_store")
        if not isinstance(store, AttachmentStore):
            raise ValueError("attachment_store missing from _context")
        root = ctx.get("python_workspace_root")
        if root is None:
            raise ValueError("python_workspace_root missing from _context")
        self.store = store
        self.workspace_root = Path(root).resolve()
        self.workspace_root.mkdir(parents=True, exist_ok=True)
        self.session_root = Path(ctx.get("graph_directory") or self.workspace_root.parent)

    def resolve(self, relative: str) -> Path:
        target = (self.workspace_root / relative).resolve()
        if self.workspace_root not in target.parents:
            raise ValueError("Path is outside workspace")
        return target


def save_file(
    path: Annotated[str, ParamMeta(description="Workspace-relative file path")],
    content: Annotated[str, ParamMeta(description="Text to write")],
    *,
    mode: Annotated[str, ParamMeta(description="How to write", enum=["overwrite", "append"])]
    = "overwrite",
    _context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write a text file into the workspace."""
    ctx = FileToolContext(_context)
    target = ctx.resolve(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a" if mode == "append" else "w", encoding="utf-8") as handle:
        handle.write(content)
    relative = target.relative_to(ctx.workspace_root).as_posix()
    return {"path": relative, "size": target.stat().st_size}


def load_file(
    path: Annotated[str, ParamMeta(description="Workspace-relative file path")],
    *,
    _context: dict[str, Any] | None = None,
) -> list[MessageBlock]:
    """Register a workspace file as an attachment and hand it over."""
    ctx = FileToolContext(_context)
    target = ctx.resolve(path)
    mime = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    from entity.messages import MessageBlockType

    record = ctx.store.register_file(
        target, kind=MessageBlockType.from_mime_type(mime), display_name=target.name, mime_type=mime
    )
    return [record.as_message_block()]
