"""Framing of a stdio server's output: lines (with a length cap) and JSON-RPC messages in them.

Servers in the wild write junk on stdout: banners, progress, even text glued without a newline
to the front of a JSON-RPC line. `split_message` recovers the message from such a line and hands
back the junk as a log line.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

READ_CHUNK = 256 * 1024
_MAX_GLUE_ATTEMPTS = 64


def split_message(line: str) -> tuple[str, dict[str, Any] | None]:
    """Split a stdout line into leading junk and the JSON-RPC object it carries, if any."""
    stripped = line.strip()
    if '"jsonrpc"' not in stripped or not stripped.endswith("}"):
        return line, None
    start = stripped.find("{")
    for _ in range(_MAX_GLUE_ATTEMPTS):
        if start < 0:
            break
        try:
            obj = json.loads(stripped[start:])
        except ValueError:
            start = stripped.find("{", start + 1)
            continue
        if isinstance(obj, dict) and "jsonrpc" in obj:
            return stripped[:start].strip(), obj
        break  # valid JSON, but not a message: the whole line is a log line
    return line, None


async def iter_lines(reader: asyncio.StreamReader, limit: int) -> AsyncIterator[bytes | None]:
    """Lines of `reader` without their newline; None stands for a line longer than `limit`."""
    buffer = bytearray()
    skipping = False  # inside an overlong line: drop bytes up to its newline
    while chunk := await reader.read(READ_CHUNK):
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            if skipping:
                skipping = False
            else:
                buffer += chunk[start:newline]
                yield bytes(buffer) if len(buffer) <= limit else None
            buffer.clear()
            start = newline + 1
        if not skipping:
            buffer += chunk[start:]
            if len(buffer) > limit:
                buffer.clear()
                skipping = True
                yield None
    if buffer and not skipping:
        yield bytes(buffer)
