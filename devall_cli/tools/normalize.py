"""Tool results → blocks (SPEC.md §6), and the text rendering the model sees.

Content items are read by their `type` field rather than by class, so results from fastmcp's
client, the MCP SDK's protocol types and plain JSON mappings are all handled alike, and an
unknown content type becomes a visible placeholder instead of a crash.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from devall_cli import limits
from devall_cli.block_text import plain as _plain
from devall_cli.block_text import render_link, repeats_text
from devall_cli.text import clean_text, clean_value
from devall_cli.tools.attachments import AttachmentStore, attachment_name
from devall_cli.tools.base import AttachmentBlock, Block, DataBlock, ResourceLinkBlock, TextBlock

DEFAULT_MAX_BASE64_BYTES = limits.BASE64_BYTES
_WHITESPACE = re.compile(rb"\s+")
_BLOCK_TYPES = (TextBlock, AttachmentBlock, ResourceLinkBlock, DataBlock)
_OCTET = "application/octet-stream"


def _field(item: Any, name: str, camel: str | None = None) -> Any:
    """A field of a pydantic model, dataclass or JSON mapping (snake_case or camelCase key)."""
    if isinstance(item, Mapping):
        return item.get(name, item.get(camel) if camel else None)
    return getattr(item, name, None)


def json_object(value: Any) -> Mapping[str, Any] | None:
    """A pydantic model or mapping as a plain JSON object (wire names); None when absent."""
    if value is None:
        return None
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, Mapping):
        return _plain(value) or None
    return None


def _extras(item: Any) -> dict[str, Any]:
    """A content item's `annotations` and `_meta`, as block fields (absent ones left out)."""
    extras = {
        "annotations": json_object(_field(item, "annotations")),
        "meta": json_object(_field(item, "meta", "_meta")),
    }
    return {key: value for key, value in extras.items() if value is not None}


class _Converter:
    """Turns the content items of one result into blocks."""

    def __init__(
        self, tool_name: str, store: AttachmentStore | None, source: str, max_base64: int
    ) -> None:
        self.tool = tool_name
        self.store = store
        self.source = source
        self.max_base64 = max_base64
        self.omitted: dict[str, int] = {}  # per kind, to name omitted content like saved files

    def text(self, text: str, **extra: Any) -> TextBlock:
        return TextBlock(text=text, tool_name=self.tool, source=self.source, **extra)

    def safe_convert(self, item: Any) -> Block:
        """`convert`, but a malformed item becomes a placeholder rather than an exception."""
        try:
            block = self.convert(item)
        except Exception as exc:  # a server's odd output must not stop the run
            return self.text(f"[unreadable content from {self.tool}: {type(exc).__name__}]")
        extras = _extras(item)
        return dataclasses.replace(block, **extras) if extras else block

    def convert(self, item: Any) -> Block:
        kind = _field(item, "type")
        if kind == "text":
            return self.text(str(_field(item, "text") or ""))
        if kind in ("image", "audio"):
            mime = _field(item, "mime_type", "mimeType") or _OCTET
            return self.binary(_field(item, "data"), kind=kind, mime=mime, uri=None)
        if kind == "resource":
            return self.resource(_field(item, "resource"))
        if kind == "resource_link":
            return self.link(item)
        return self.text(f"[unsupported content type '{kind}' from {self.tool}]")

    def link(self, item: Any) -> ResourceLinkBlock:
        """A `resource_link`: its own typed block, every field the server sent kept."""
        size = _field(item, "size")
        return ResourceLinkBlock(
            uri=str(_field(item, "uri") or ""),
            name=_str_or_none(_field(item, "name")),
            title=_str_or_none(_field(item, "title")),
            description=_str_or_none(_field(item, "description")),
            mime_type=_str_or_none(_field(item, "mime_type", "mimeType")),
            size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            icons=_icons(_field(item, "icons")),
            tool_name=self.tool,
            source=self.source,
        )

    def resource(self, resource: Any) -> Block:
        uri = _str_or_none(_field(resource, "uri"))
        mime = _str_or_none(_field(resource, "mime_type", "mimeType"))
        meta = json_object(_field(resource, "meta", "_meta"))
        text = _field(resource, "text")
        if isinstance(text, str):
            return self.text(text, uri=uri, mime_type=mime, resource_meta=meta)
        blob = _field(resource, "blob")
        if blob is None:
            return self.text(f"[unsupported content type 'resource' from {self.tool}]")
        mime = mime or _OCTET
        block = self.binary(blob, kind=kind_for_mime(mime), mime=mime, uri=uri)
        if meta is not None and isinstance(block, AttachmentBlock):
            return dataclasses.replace(block, resource_meta=meta)
        return block

    def binary(self, encoded: Any, *, kind: str, mime: str, uri: str | None) -> Block:
        """Decode base64 content and save it, or explain in a text block why not."""
        if isinstance(encoded, str):
            encoded = encoded.encode("ascii", "replace")
        if not isinstance(encoded, bytes):
            return self.text(f"[failed to decode {kind} content from {self.tool}]")
        if len(encoded) > self.max_base64:
            return self.text(f"[binary content refused: {len(encoded)} bytes exceeds limit]")
        try:
            # Line-wrapped base64 is common; anything else that is not base64 is refused.
            data = base64.b64decode(_WHITESPACE.sub(b"", encoded), validate=True)
        except (binascii.Error, ValueError):
            return self.text(f"[failed to decode {kind} content from {self.tool}]")
        return self.save(data, kind=kind, mime=mime, uri=uri)

    def save(self, data: bytes, *, kind: str, mime: str, uri: str | None) -> Block:
        """Save decoded bytes, or name them in a placeholder when there is no store."""
        if self.store is None:
            self.omitted[kind] = self.omitted.get(kind, 0) + 1
            name = uri or attachment_name(self.tool, kind, mime, self.omitted[kind])
            return self.text(f"[binary content omitted: {name} ({mime})]")
        try:
            return self.store.save(
                data, tool_name=self.tool, kind=kind, mime_type=mime, uri=uri, source=self.source
            )
        except OSError as exc:
            return self.text(f"[failed to save {kind} content from {self.tool}: {exc}]")


def _icons(value: Any) -> tuple[Mapping[str, Any], ...] | None:
    if not isinstance(value, list | tuple) or not value:
        return None
    icons = tuple(json_object(icon) for icon in value)
    return tuple(icon for icon in icons if icon is not None) or None


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def kind_for_mime(mime_type: str) -> str:
    """Attachment kind of a MIME type: image, audio, video or file."""
    major = mime_type.split("/", 1)[0].strip().lower()
    return major if major in ("image", "audio", "video") else "file"


def normalize_result(
    result: Any,
    *,
    tool_name: str,
    store: AttachmentStore | None,
    source: str = "mcp_tool",
    max_base64_bytes: int = DEFAULT_MAX_BASE64_BYTES,
) -> tuple[Block, ...]:
    """The blocks of an MCP tool result (fastmcp or SDK `CallToolResult`, or its JSON form).

    Every content item becomes a block, with its annotations and `_meta`; `structuredContent`
    becomes a data block of its own after them, also when there are content blocks.
    """
    converter = _Converter(tool_name, store, source, max_base64_bytes)
    content = _field(result, "content") or []
    blocks = [converter.safe_convert(item) for item in content]
    structured = _field(result, "structured_content", "structuredContent")
    if structured is not None:
        data = structured if isinstance(structured, Mapping) else {"result": structured}
        blocks.append(DataBlock(data=data, tool_name=tool_name, source=source))
    return tuple(clean_block(block) for block in blocks)


def result_meta(result: Any) -> Mapping[str, Any] | None:
    """The `_meta` of a tool result, as plain JSON (None when the server sent none)."""
    meta = _field(result, "meta", "_meta")
    return clean_value(json_object(meta)) if meta is not None else None


def normalize_value(
    value: Any, *, tool_name: str, store: AttachmentStore | None, source: str = "function"
) -> tuple[Block, ...]:
    """The blocks of a Python function's return value."""
    if isinstance(value, _BLOCK_TYPES):
        return (clean_block(_owned(value, tool_name)),)
    is_sequence = isinstance(value, list | tuple) and bool(value)
    if is_sequence and all(isinstance(v, _BLOCK_TYPES) for v in value):
        return tuple(clean_block(_owned(v, tool_name)) for v in value)
    if isinstance(value, bytes | bytearray | memoryview):
        converter = _Converter(tool_name, store, source, DEFAULT_MAX_BASE64_BYTES)
        return (converter.save(bytes(value), kind="file", mime=_OCTET, uri=None),)
    chatdev = _chatdev_blocks(value)
    if chatdev is not None:
        converter = _Converter(tool_name, store, source, DEFAULT_MAX_BASE64_BYTES)
        return tuple(clean_block(_from_chatdev(block, converter)) for block in chatdev)
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict):  # as ChatDev hands a dict result to the model: indented
        text = json.dumps(value, ensure_ascii=False, indent=2, default=_json_fallback)
    else:
        text = json.dumps(value, ensure_ascii=False, default=_json_fallback)
    # Text a function builds from file names or environment values may hold lone surrogates.
    return (TextBlock(text=clean_text(text), tool_name=tool_name, source=source),)


def _is_chatdev_block(value: Any) -> bool:
    """A ChatDev `entity.messages.MessageBlock` (recognised by its shape, not imported)."""
    kind = getattr(value, "type", None)
    return (
        isinstance(getattr(kind, "value", None), str)
        and hasattr(value, "attachment")
        and hasattr(value, "text")
        and callable(getattr(value, "to_dict", None))
    )


def _chatdev_blocks(value: Any) -> list[Any] | None:
    """The ChatDev MessageBlocks a ChatDev function returned (a list of them, an attachment
    record), else None."""
    if callable(getattr(value, "as_message_block", None)):  # utils.attachments.AttachmentRecord
        value = [value.as_message_block()]
    if isinstance(value, list) and value and all(_is_chatdev_block(item) for item in value):
        return value
    return None


def _from_chatdev(block: Any, converter: _Converter) -> Block:
    """A ChatDev MessageBlock as devall's block: its text, or its attachment's file saved."""
    kind = str(block.type.value)
    attachment = block.attachment
    if kind == "text" or attachment is None:
        text = block.text if isinstance(block.text, str) else json.dumps(block.to_dict())
        return converter.text(text)
    mime = getattr(attachment, "mime_type", None) or _OCTET
    local = getattr(attachment, "local_path", None)
    data_uri = getattr(attachment, "data_uri", None)
    name = getattr(attachment, "name", None)
    try:
        if local:
            with open(local, "rb") as handle:
                data = handle.read(DEFAULT_MAX_BASE64_BYTES + 1)
        elif isinstance(data_uri, str) and "," in data_uri:
            data = base64.b64decode(data_uri.partition(",")[2], validate=False)
        else:
            return converter.text(block.text or f"[{kind} attachment {name or ''} without data]")
    except (OSError, ValueError) as exc:
        return converter.text(f"[cannot read {kind} attachment {name or local}: {exc}]")
    if len(data) > DEFAULT_MAX_BASE64_BYTES:
        return converter.text(f"[{kind} attachment {name or local} is too large to hand over]")
    return converter.save(data, kind=kind_for_mime(mime), mime=mime, uri=name)


def clean_block(block: Block) -> Block:
    """`block` with lone surrogates in its texts and data replaced by U+FFFD (see text.py)."""
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(block):
        value = getattr(block, field.name)
        cleaned = clean_value(value)
        if cleaned is not value:
            changes[field.name] = cleaned
    return dataclasses.replace(block, **changes) if changes else block


def _owned(block: Block, tool_name: str) -> Block:
    """A block returned by a function, attributed to the tool when it does not say otherwise."""
    return block if block.tool_name else dataclasses.replace(block, tool_name=tool_name)


def _json_fallback(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


# --- rendering -----------------------------------------------------------------------------


def render_block(block: Block) -> str:
    """One block as the model sees it."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, AttachmentBlock):
        return f"[{block.kind} saved: {block.path} ({block.mime_type}, {block.size} bytes)]"
    if isinstance(block, ResourceLinkBlock):
        return render_link(block.uri, block.name, block.mime_type, block.description)
    return json.dumps(
        _plain(block.data), ensure_ascii=False, separators=(",", ":"), default=str
    )


def render_for_model(blocks: Sequence[Block], *, max_chars: int | None = None) -> str:
    """The text of a tool result for the model; cut with a visible marker past `max_chars`.

    Structured content that a text block of the same result already carries as JSON (what
    the MCP spec asks servers to send for older clients) is not repeated.
    """
    text = "\n".join(render_block(block) for block in blocks if not _repeated(block, blocks))
    if max_chars is None or len(text) <= max_chars:
        return text
    shown = max(0, max_chars)
    return f"{text[:shown]}\n…[truncated: {shown} of {len(text)} characters shown]"


def _repeated(block: Block, blocks: Sequence[Block]) -> bool:
    """Whether `block` is structured content that the text blocks of `blocks` already say."""
    if not isinstance(block, DataBlock):
        return False
    texts = [other.text for other in blocks if isinstance(other, TextBlock)]
    return repeats_text(block.data, texts)


def cap_blocks(blocks: Sequence[Block], max_chars: int) -> tuple[Block, ...]:
    """The blocks with at most `max_chars` characters of text and data in all.

    The block that passes the limit is cut and ends with `…[truncated: N of M characters]`, N
    of the result's M characters kept; the text and data blocks after it are dropped.
    Attachments (already saved files) stay.
    """
    sizes = [_chars(block) for block in blocks]
    total = sum(sizes)
    if total <= max_chars:
        return tuple(blocks)
    kept: list[Block] = []
    room, cut = max_chars, False
    for block, size in zip(blocks, sizes, strict=True):
        if isinstance(block, AttachmentBlock) or size <= room:
            kept.append(block)
            room -= size
        elif not cut:
            kept.append(_cut(block, room, limits.cut_marker(max_chars, total)))
            cut = True
            room = 0
    return tuple(kept)


def _chars(block: Block) -> int:
    return 0 if isinstance(block, AttachmentBlock) else len(render_block(block))


def _cut(block: TextBlock | ResourceLinkBlock | DataBlock, room: int, marker: str) -> TextBlock:
    head = render_block(block)[:room]
    text = f"{head}\n{marker}" if head else marker
    if isinstance(block, TextBlock):
        return dataclasses.replace(block, text=text)
    return TextBlock(text=text, tool_name=block.tool_name, source=block.source)


def blocks_to_json(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    """Blocks as plain dicts for logs and `--json`: `type` first, unset optional fields left out."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        entry: dict[str, Any] = {"type": block.type}
        for field in dataclasses.fields(block):
            value = getattr(block, field.name)
            if field.name != "type" and value is not None:
                entry[field.name] = _plain(value)
        out.append(entry)
    return out
