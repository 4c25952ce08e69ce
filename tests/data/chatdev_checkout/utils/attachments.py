"""An attachment store with the interface of ChatDev's utils/attachments.py."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from entity.messages import AttachmentRef, MessageBlock, MessageBlockType


@dataclass
class AttachmentRecord:
    ref: AttachmentRef
    kind: MessageBlockType

    def as_message_block(self) -> MessageBlock:
        return MessageBlock(type=self.kind, attachment=self.ref)


class AttachmentStore:
    def __init__(self, root_dir: Path | str) -> None:
        self.root = Path(root_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self._records: dict[str, AttachmentRecord] = {}

    def register_file(
        self, path: Path, *, kind: MessageBlockType, display_name: str, mime_type: str
    ) -> AttachmentRecord:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
        ref = AttachmentRef(digest, mime_type, display_name, str(path))
        record = AttachmentRecord(ref, kind)
        self._records[digest] = record
        return record

    def get(self, attachment_id: str) -> AttachmentRecord | None:
        return self._records.get(attachment_id)
