"""Functions that exercise the call path: return types, errors, time, context."""

import asyncio
import sys
import time
from typing import Any


def as_bytes(size: int = 16) -> bytes:
    """Return `size` bytes counting up from zero."""
    return bytes(i % 256 for i in range(size))


def as_mapping(name: str) -> dict[str, Any]:
    """Return a mapping describing the name."""
    return {"name": name, "length": len(name), "upper": name.upper()}


def as_nothing() -> None:
    """Return nothing."""


def fail(message: str) -> str:
    """Always raise a ValueError with the given message."""
    raise ValueError(message)


def leave() -> str:
    """Call sys.exit, which must not end the caller."""
    sys.exit(3)


def nap(seconds: float) -> str:
    """Sleep, then say how long."""
    time.sleep(seconds)
    return f"slept {seconds}"


async def async_nap(seconds: float) -> str:
    """Sleep asynchronously, then say how long."""
    await asyncio.sleep(seconds)
    return f"async slept {seconds}"


def whoami(greeting: str, _context: Any) -> str:
    """Describe the calling run and node."""
    return (
        f"{greeting} run={_context.run_id} node={_context.node_id} "
        f"dir={_context.workflow_dir} tool={_context.tool_name}"
    )


def save_note(text: str, _context: Any = None) -> str:
    """Save a note through the run's attachment store and return its path."""
    block = _context.attachment_store.save(
        text.encode(), tool_name="save_note", kind="file", mime_type="text/plain"
    )
    return block.path
