"""Messages: what nodes receive in their input queue and what they emit (ChatDev's Message).

A node's input queue holds the task (for a start node) and the payloads edges deliver; a node's
run returns a list of messages (possibly empty: nothing is delivered downstream).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

USER = "user"
ASSISTANT = "assistant"
SYSTEM = "system"
TASK_SOURCE = "TASK"


@dataclass(frozen=True)
class Message:
    """One message: role, text, which node (or `TASK`) it came from, and edge markers."""

    role: str
    text: str
    source: str = ""
    keep: bool = False  # delivered by a `keep_message` edge: survives the node's context reset
    preserve_role: bool = False  # edges deliver it with its own role (literal output)
    meta: Mapping[str, Any] = field(default_factory=dict)

    def but(self, **changes: Any) -> Message:
        """A copy with some fields changed."""
        return replace(self, **changes)


def task_messages(task: str) -> list[Message]:
    """The task as a start node receives it."""
    return [Message(role=USER, text=task, source=TASK_SOURCE)]


def texts(messages: list[Message] | tuple[Message, ...]) -> list[str]:
    """The texts of messages, in order."""
    return [message.text for message in messages]


def input_sections(messages: Sequence[Message]) -> str:
    """Messages as one text, a `=== INPUT FROM <source> (<role>) ===` section each (ChatDev's)."""
    return "\n\n".join(
        f"=== INPUT FROM {m.source or 'UNKNOWN'} ({m.role}) ===\n\n{m.text}" for m in messages
    )
