"""Message blocks, shaped as ChatDev's entity/messages.py shapes them (a namespace package)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class MessageBlockType(str, Enum):  # noqa: UP042 (the shape of ChatDev's)
    TEXT = "text"
    IMAGE = "image"
    FILE = "file"

    @classmethod
    def from_mime_type(cls, mime_type: str) -> MessageBlockType:
        return cls.IMAGE if mime_type.startswith("image/") else cls.FILE


@dataclass
class AttachmentRef:
    attachment_id: str
    mime_type: str | None = None
    name: str | None = None
    local_path: str | None = None
    data_uri: str | None = None


@dataclass
class MessageBlock:
    type: MessageBlockType
    text: str | None = None
    attachment: AttachmentRef | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type.value, "text": self.text}
