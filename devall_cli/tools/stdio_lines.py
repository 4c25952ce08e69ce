"""Framing of a stdio server's output: lines (with a length cap) and JSON-RPC messages in them.

Servers in the wild write junk on stdout: banners, progress, even text glued without a newline
to the front of a JSON-RPC line. `split_message` recovers the message from such a line and hands
back the junk as a log line. A response line too long to keep is dropped; `overlong_answer`
turns its beginning into an error answer for the request it names, so that request fails at once
instead of waiting for its timeout. A message beyond the limits of json_limits.py (nested too
deep, an integer too long) is dropped the same way, with a note in the log.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from itertools import islice
from typing import Any

from devall_cli import json_limits

READ_CHUNK = 256 * 1024
HEAD_BYTES = 256  # how much of a dropped line is kept to find the request it answers
_MAX_GLUE_ATTEMPTS = 64
# On a line of many brackets each attempt costs a scan of the whole line: try only a few starts.
_MAX_HEAVY_ATTEMPTS = 4
_OBJECT_START = re.compile(r'\{\s*"')  # a JSON-RPC message opens an object with a key
_SHOWN_CHARS = 200
# Opens the message of the error devall answers a request with when the server's response to
# it could not be used (not valid JSON-RPC, or too long).
INVALID_RESPONSE = "invalid JSON-RPC response"
_INTERNAL_ERROR = -32603
# A response as the MCP SDKs for Python write it: `jsonrpc`, `id`, then `result` or `error`. Only
# this exact opening is trusted: an id found elsewhere might belong to the payload, and one
# followed by `method` belongs to a request from the server.
_RESPONSE_HEAD = re.compile(
    rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")'
    rb'\s*,\s*"(?:result|error)"'
)


def split_message(line: str) -> tuple[str, dict[str, Any] | None]:
    """Split a stdout line into leading junk and the JSON-RPC object it carries, if any.

    A message beyond json_limits.py's limits comes back as a note in the junk, with the error
    answer for the request it names in its place (None if it names none).
    """
    stripped = line.strip()
    if '"jsonrpc"' not in stripped or not stripped.endswith("}"):
        return line, None
    for start in _message_starts(stripped):
        candidate = stripped[start:]
        try:
            obj = json_limits.loads(candidate)
        except json_limits.JsonLimitError as exc:
            return _refused(stripped[:start].strip(), candidate, exc)
        except ValueError:
            continue
        if isinstance(obj, dict) and "jsonrpc" in obj:
            return stripped[:start].strip(), obj
        break  # valid JSON, but not a message: the whole line is a log line
    return line, None


def _message_starts(text: str) -> Iterator[int]:
    """Where a message glued behind junk may begin: at a `{`, first to last, a few at most."""
    if text.count("[") + text.count("{") <= json_limits.MAX_NESTING:
        return islice(_braces(text), _MAX_GLUE_ATTEMPTS)
    return islice((m.start() for m in _OBJECT_START.finditer(text)), _MAX_HEAVY_ATTEMPTS)


def _braces(text: str) -> Iterator[int]:
    index = text.find("{")
    while index >= 0:
        yield index
        index = text.find("{", index + 1)


def _refused(
    junk: str, candidate: str, exc: json_limits.JsonLimitError
) -> tuple[str, dict[str, Any] | None]:
    """The log text and the error answer (if it answers a request) for a refused message."""
    shown = candidate[:_SHOWN_CHARS] + ("..." if len(candidate) > _SHOWN_CHARS else "")
    note = f"[devall: dropped a JSON-RPC message that {exc}: {shown}]"
    log = f"{junk} {note}" if junk else note
    match = _RESPONSE_HEAD.match(candidate[:HEAD_BYTES].encode("utf-8", errors="replace"))
    if match is not None:
        request_id, has_method = json.loads(match.group(1)), False
    else:
        request_id, has_method = json_limits.message_head(candidate)
    if has_method or isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return log, None  # a request or notification from the server: nothing waits for it
    return log, _error_answer(request_id, f"the response {exc}")


def overlong_answer(head: bytes, limit: int) -> dict[str, Any] | None:
    """The error answer for the request a dropped overlong response names, if it names one."""
    match = _RESPONSE_HEAD.match(head)
    if match is None:
        return None
    request_id = json.loads(match.group(1))
    return _error_answer(request_id, f"the response is longer than {limit} bytes")


def _error_answer(request_id: int | str, reason: str) -> dict[str, Any]:
    """A JSON-RPC error answer that fails request `request_id` with `invalid JSON-RPC response`."""
    error = {"code": _INTERNAL_ERROR, "message": f"{INVALID_RESPONSE} from the server: {reason}"}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


async def iter_lines(
    reader: asyncio.StreamReader,
    limit: int,
    *,
    on_overlong: Callable[[bytes], None] | None = None,
) -> AsyncIterator[bytes | None]:
    """Lines of `reader` without their newline; None stands for a line longer than `limit`.

    `on_overlong` gets the first HEAD_BYTES of each such line, just before its None.
    """
    buffer = bytearray()
    skipping = False  # inside an overlong line: drop bytes up to its newline
    while chunk := await reader.read(READ_CHUNK):
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            if skipping:
                skipping = False
            else:
                buffer += chunk[start:newline]
                if len(buffer) <= limit:
                    yield bytes(buffer)
                else:
                    if on_overlong is not None:
                        on_overlong(bytes(buffer[:HEAD_BYTES]))
                    yield None
            buffer.clear()
            start = newline + 1
        if not skipping:
            buffer += chunk[start:]
            if len(buffer) > limit:
                if on_overlong is not None:
                    on_overlong(bytes(buffer[:HEAD_BYTES]))
                buffer.clear()
                skipping = True
                yield None
    if buffer and not skipping:
        yield bytes(buffer)
